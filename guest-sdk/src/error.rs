//! The error a tool returns for something the model can act on.

use std::fmt;
use std::io;
use std::path::Path;

/// The stable error codes (`toolhost-codes`), the same constants the host and
/// the builtin tools use. Callers match on them, so they never change meaning;
/// a plugin may add its own `snake_case` codes.
pub use toolhost_codes as codes;

/// A failed tool result: a stable `snake_case` code and a message naming
/// what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// Stable `snake_case` code.
    pub code: String,
    /// Explanation for the model.
    pub message: String,
}

impl ToolError {
    /// An error with any code.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self { code: code.into(), message: message.into() }
    }

    /// `invalid_args`: the arguments are well-typed but unusable.
    pub fn invalid_args(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_ARGS, message)
    }

    /// `not_found` for a path (shown relative to the work dir by the caller).
    pub fn not_found(path: impl fmt::Display) -> Self {
        Self::new(codes::NOT_FOUND, format!("{path} does not exist"))
    }

    /// `path_escape`: the path leaves the work directory.
    pub fn path_escape(path: impl fmt::Display) -> Self {
        Self::new(codes::PATH_ESCAPE, format!("{path} is outside the work directory"))
    }

    /// `forbidden_path`: a path the tools never write.
    pub fn forbidden_path(path: impl fmt::Display, why: &str) -> Self {
        Self::new(codes::FORBIDDEN_PATH, format!("{path}: {why}"))
    }

    /// Map an I/O error on `path` to the code the model can act on.
    pub fn io(err: &io::Error, path: &Path) -> Self {
        let shown = path.display();
        match err.kind() {
            io::ErrorKind::NotFound => Self::not_found(shown),
            io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => Self::new(
                codes::ACCESS_DENIED,
                format!(
                    "{shown}: the sandbox refused access (it leads outside the work directory, \
                     or this tool may not write there)"
                ),
            ),
            // The host's per-call write quota (WASI `quota`, EDQUOT): the host fails the
            // call with `write_quota` whatever the tool says; say the same (a disk quota of
            // the host reaches a guest as `insufficient-space`, ENOSPC).
            io::ErrorKind::QuotaExceeded => Self::new(
                codes::WRITE_QUOTA,
                format!("{shown}: the call's write quota is used up; the write past it failed"),
            ),
            io::ErrorKind::StorageFull | io::ErrorKind::FileTooLarge => {
                Self::new(codes::NO_SPACE, format!("{shown}: {err}; nothing was changed"))
            }
            _ => Self::new(codes::IO_ERROR, format!("{shown}: {err}")),
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ToolError {}
