//! The builtin tools, embedded in the binary (built by `build.rs` from
//! `plugins/` for `wasm32-wasip2`).

/// `(display name, component bytes)` of every builtin plugin.
pub(crate) const ALL: &[(&str, &[u8])] = &[
    ("builtin:fs", include_bytes!(env!("TOOLHOST_WASM_TOOLHOST_FS"))),
    ("builtin:web", include_bytes!(env!("TOOLHOST_WASM_TOOLHOST_WEB"))),
    ("builtin:sys", include_bytes!(env!("TOOLHOST_WASM_TOOLHOST_SYS"))),
];

/// The builtin plugin that starts programs (`terminal`, `git`): it alone gets the
/// builtins' exec grant and variables.
pub(crate) const EXEC_PLUGIN: &str = "builtin:sys";
