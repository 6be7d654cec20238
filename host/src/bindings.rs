//! The one bindgen site: Rust types for `wit/plugin.wit`.

#![allow(missing_docs, unreachable_pub)]

wasmtime::component::bindgen!({
    // The largest world: a component of a smaller one (`plugin`) links too.
    world: "host-plugin",
    path: "../wit",
    imports: { "toolhost:plugin/fetch.fetch": async, "toolhost:plugin/exec.run": async },
    exports: { default: async },
});
