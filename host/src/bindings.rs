//! The one bindgen site: Rust types for `wit/plugin.wit`.

#![allow(missing_docs, unreachable_pub)]

wasmtime::component::bindgen!({
    // The largest world: a component of a smaller one (`plugin`) links too.
    world: "host-plugin",
    path: "../wit",
    // Every import async, so a capability's functions need no line here.
    imports: { default: async },
    exports: { default: async },
});

/// The hook world (`tool-hook`): exports `toolhost:plugin/hooks`, imports only
/// `log` (the same host code as a plugin's).
pub(crate) mod hook {
    wasmtime::component::bindgen!({
        world: "tool-hook",
        path: "../wit",
        with: { "toolhost:plugin/log": crate::bindings::toolhost::plugin::log },
        exports: { default: async },
    });
}
