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

/// The builtin plugin of the file tools: it alone gets the policy's file settings.
pub(crate) const FS_PLUGIN: &str = "builtin:fs";

/// `1` in `builtin:fs`'s environment when the policy says `require-fresh = true`.
pub(crate) const REQUIRE_FRESH_VAR: &str = "TOOLHOST_FS_REQUIRE_FRESH";

/// `1` in `builtin:fs`'s environment when the policy says `follow-links = true`.
pub(crate) const FOLLOW_LINKS_VAR: &str = "TOOLHOST_FS_FOLLOW_LINKS";
