//! The error a tool returns for something the model can act on.

use std::fmt;
use std::io;
use std::path::Path;

/// Stable error codes shared by the builtin tools. Callers match on them, so
/// they never change meaning; a plugin may add its own `snake_case` codes.
pub mod codes {
    /// The arguments do not make sense together, or a value is out of range.
    pub const INVALID_ARGS: &str = "invalid_args";
    /// The path (or something it names) does not exist.
    pub const NOT_FOUND: &str = "not_found";
    /// The path leaves the work directory.
    pub const PATH_ESCAPE: &str = "path_escape";
    /// The path is longer than any the system accepts (4096 bytes).
    pub const PATH_TOO_LONG: &str = "path_too_long";
    /// The sandbox refused the access (outside the work dir through a
    /// symlink, or a write where the tool only has read access).
    pub const ACCESS_DENIED: &str = "access_denied";
    /// The path is one the tools never write (`.git/`, the host's config).
    pub const FORBIDDEN_PATH: &str = "forbidden_path";
    /// The tool has no filesystem access in this call.
    pub const NO_FILESYSTEM: &str = "no_filesystem";
    /// The path names a directory where a file was expected.
    pub const IS_DIRECTORY: &str = "is_directory";
    /// The file is not text (a NUL byte, or not valid UTF-8).
    pub const BINARY_FILE: &str = "binary_file";
    /// Any other I/O failure.
    pub const IO_ERROR: &str = "io_error";

    // Starting programs (`toolhost_guest::exec`): why the host refused.

    /// The program is not on the plugin's exec allow-list, is a path, or
    /// resolves inside the work dir.
    pub const PROGRAM_NOT_ALLOWED: &str = "program_not_allowed";
    /// A shell command line was asked for and the plugin's grant has no
    /// shell profile.
    pub const SHELL_NOT_ALLOWED: &str = "shell_not_allowed";
    /// An environment variable the plugin is not granted.
    pub const ENV_NOT_ALLOWED: &str = "env_not_allowed";
    /// The working directory is outside the work dir or does not exist.
    pub const BAD_CWD: &str = "bad_cwd";
    /// Too many programs are running on the host; try again later.
    pub const EXEC_BUSY: &str = "exec_busy";
    /// The host cannot confine a program on this system, so it starts none.
    pub const SANDBOX_UNAVAILABLE: &str = "sandbox_unavailable";
    /// The program could not be started.
    pub const SPAWN_FAILED: &str = "spawn_failed";

    // How a program that ran ended, when that is a failure.

    /// The program ran and exited with a non-zero status or died by a
    /// signal; the message keeps its output.
    pub const COMMAND_FAILED: &str = "command_failed";
    /// The program ran past its time limit and was killed; the message keeps
    /// the output from before.
    pub const TIMEOUT: &str = "timeout";
    /// The call was cancelled while the program ran, and it was killed; the
    /// message keeps the output from before.
    pub const CANCELLED: &str = "cancelled";
}

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
