//! Errors: [`CallError`] for a failed call (a stable code the model can act
//! on, and a message), [`LoadError`] for a plugin the host refuses to load.

use std::fmt;

/// The stable error codes, defined once in `toolhost-codes` and shared with
/// the guest SDK and the builtin tools; its doc says which ones the host makes.
pub use toolhost_codes as codes;

/// A failed call: a stable `snake_case` code and a message naming what was
/// wrong. Displayed as `code: message` (or just `code` without a message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallError {
    /// Stable `snake_case` code.
    pub code: String,
    /// What went wrong, for the model.
    pub message: String,
}

impl CallError {
    /// An error with `code` and `message`.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self { code: code.into(), message: message.into() }
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message.is_empty() {
            f.write_str(&self.code)
        } else {
            write!(f, "{}: {}", self.code, self.message)
        }
    }
}

impl std::error::Error for CallError {}

/// Why the host refused to build an engine or load a plugin.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The wasmtime engine could not be created.
    #[error("could not create the wasm engine: {0}")]
    Engine(String),
    /// The effect journal could not be opened.
    #[error("could not open the effect journal: {0}")]
    Journal(String),
    /// The output store's directory could not be opened.
    #[error("could not open the output store: {0}")]
    OutputStore(String),
    /// The plugin file could not be read.
    #[error("could not read plugin {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The bytes are not a valid component for this engine.
    #[error("not a loadable WebAssembly component: {0}")]
    Compile(String),
    /// The component imports an interface the host does not grant.
    #[error("{code}: {interface}: {why}", code = codes::CAPABILITY_DENIED)]
    CapabilityDenied {
        /// The import, e.g. `wasi:sockets/tcp@0.2.6`.
        interface: String,
        /// Why it is refused and what to use instead.
        why: String,
    },
    /// The component does not export the tool interface, or it failed while
    /// listing its tools.
    #[error("{0}")]
    BadPlugin(String),
    /// A tool spec is invalid (bad name, schema that is not an object schema …).
    #[error("invalid tool spec for {tool}: {why}")]
    BadSpec {
        /// The tool.
        tool: String,
        /// What is wrong.
        why: String,
    },
    /// The plugin's tool list passes one of the host's bounds (the tool-list bounds:
    /// tools per plugin, name, description and schema length, schema nesting,
    /// the whole list's size), checked before any of it is parsed.
    #[error("{code}: {plugin}: {why}", code = codes::TOOL_LIST_TOO_LARGE)]
    ToolListTooLarge {
        /// The plugin.
        plugin: String,
        /// Which bound, for which tool.
        why: String,
    },
    /// The work dir does not exist or is not a directory.
    #[error("bad work dir: {0}")]
    WorkDir(String),
    /// The allow-list names tools that do not exist.
    #[error("{code} in the allow-list: {0}", code = codes::UNKNOWN_TOOL)]
    UnknownAllowed(String),
    /// Two tools have the same name.
    #[error("{code}: {0}", code = codes::DUPLICATE_TOOL)]
    DuplicateTool(String),
    /// The component's bytes are not the ones the policy approved.
    #[error(
        "{code}: {plugin}: the component's sha256 is {actual}, the policy pins {expected}; \
         it changed since it was approved (re-approve it with `toolhost add`)",
        code = codes::IDENTITY_MISMATCH
    )]
    IdentityMismatch {
        /// The plugin.
        plugin: String,
        /// The sha256 in the policy.
        expected: String,
        /// The sha256 of the bytes.
        actual: String,
    },
    /// The policy file is malformed.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// A policy entry's component from a registry or URL was refused: not signed by
    /// its signers, not matching its digest, unreachable, … (the code says which).
    #[error("{code}: plugins.{plugin}: {message}")]
    Remote {
        /// The entry.
        plugin: String,
        /// The stable code (`signature_invalid`, `digest_mismatch`, `too_large`, …).
        code: &'static str,
        /// What was refused and why.
        message: String,
    },
}

impl LoadError {
    pub(crate) fn engine(err: wasmtime::Error) -> Self {
        Self::Engine(format!("{err:#}"))
    }

    pub(crate) fn compile(err: wasmtime::Error) -> Self {
        Self::Compile(format!("{err:#}"))
    }
}

/// Why the policy could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The file could not be read.
    #[error("policy {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is malformed: an unknown key, a bad value or pattern.
    #[error("policy {path}, line {line}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// 1-based line of the offending key or value.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A policy file inside the work dir widens what tools may do, and the user has
    /// not trusted these bytes (a tool, or a cloned repository, may have written it).
    #[error(
        "policy {path} is not trusted and would grant: {}. A tool or a cloned repository may have \
         written it. Review it, then run `toolhost trust` in that work dir to accept these exact bytes \
         (sha256 {sha256})",
        widens.join("; ")
    )]
    Untrusted {
        /// The file.
        path: String,
        /// The sha256 of its bytes.
        sha256: String,
        /// What it grants beyond the defaults.
        widens: Vec<String>,
    },
    /// The file could not be written.
    #[error("policy {path}: cannot save: {message}")]
    Write {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
}
