//! The builtin tools, embedded in the binary (built by `build.rs` from
//! `plugins/` for `wasm32-wasip2`), each with its sha256 and its code
//! precompiled at build time for this machine.

/// One builtin plugin as the binary carries it.
pub(crate) struct Builtin {
    /// The display name (`builtin:fs`).
    pub(crate) name: &'static str,
    /// The component.
    pub(crate) bytes: &'static [u8],
    /// Its sha256, hex.
    pub(crate) sha256: &'static str,
    /// Its code, compiled by `build.rs` with the engine's code settings and
    /// deflated (empty in a cross build); used when it fits the engine, else
    /// the bytes are compiled.
    pub(crate) precompiled: &'static [u8],
}

macro_rules! builtin {
    ($name:literal, $var:literal) => {
        Builtin {
            name: $name,
            bytes: include_bytes!(env!(concat!("TOOLHOST_WASM_", $var))),
            sha256: env!(concat!("TOOLHOST_SHA256_", $var)),
            precompiled: include_bytes!(env!(concat!("TOOLHOST_CWASM_", $var))),
        }
    };
}

/// Every builtin plugin. A `static`, not a `const`: each use of a constant
/// is a copy of it, and each copy carried the 16 MB of the builtins again.
pub(crate) static ALL: &[Builtin] = &[
    builtin!("builtin:fs", "TOOLHOST_FS"),
    builtin!("builtin:web", "TOOLHOST_WEB"),
    builtin!("builtin:sys", "TOOLHOST_SYS"),
];

/// The component of the builtin plugin `name` (`builtin:fs`, `builtin:web`,
/// `builtin:sys`) as the binary carries it: to inspect it, host it elsewhere, or
/// measure it against another embedder (the per-call floor in BENCHMARKS.md).
pub fn builtin_component(name: &str) -> Option<&'static [u8]> {
    ALL.iter().find(|b| b.name == name).map(|b| b.bytes)
}

/// The builtin plugin that starts programs (`terminal`, `git`): it alone gets the
/// builtins' exec grant and variables.
pub(crate) const EXEC_PLUGIN: &str = "builtin:sys";

/// The builtin plugin of the file tools: it alone gets the policy's file settings.
pub(crate) const FS_PLUGIN: &str = "builtin:fs";

/// `1` in `builtin:fs`'s environment when the policy says `require-fresh = true`.
pub(crate) const REQUIRE_FRESH_VAR: &str = "TOOLHOST_FS_REQUIRE_FRESH";

/// `1` in `builtin:fs`'s environment when the policy says `follow-links = true`.
pub(crate) const FOLLOW_LINKS_VAR: &str = "TOOLHOST_FS_FOLLOW_LINKS";
