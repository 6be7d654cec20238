//! The one bindgen site: Rust types for `wit/plugin.wit`.

#![allow(missing_docs, unreachable_pub)]

wasmtime::component::bindgen!({
    world: "plugin",
    path: "../wit",
    exports: { default: async },
});
