//! What a tool knows about the call it is running, and path confinement.

use std::io;
use std::path::{Component, Path, PathBuf};

use crate::error::{ToolError, codes};
use crate::name::quote_name;

/// Longest path [`Context::resolve`] accepts, in bytes (Linux's `PATH_MAX`).
const MAX_PATH_BYTES: usize = 4096;

/// The call a tool is running: its id and, when the tool has filesystem
/// access, the work directory (the only directory the sandbox opened).
#[derive(Debug, Clone)]
pub struct Context {
    call_id: String,
    work_dir: Option<PathBuf>,
}

impl Context {
    /// A context for `call_id` with an optional work directory (guest path).
    pub fn new(call_id: impl Into<String>, work_dir: Option<PathBuf>) -> Self {
        Self { call_id: call_id.into(), work_dir }
    }

    /// The id of this call.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The work directory, or `no_filesystem` when this call has none.
    pub fn work_dir(&self) -> Result<&Path, ToolError> {
        self.work_dir.as_deref().ok_or_else(|| {
            ToolError::new(codes::NO_FILESYSTEM, "this tool has no filesystem access in this call")
        })
    }

    /// Resolve a path the model passed (relative to the work dir, or
    /// absolute) to a path inside the work directory, lexically: `..` that
    /// would climb above the work dir gives `path_escape`. An empty path is
    /// the work dir itself. A path over 4096 bytes (`PATH_MAX`) gives `path_too_long`
    /// (named by its length, never echoed).
    ///
    /// This check is a courtesy that names the problem; the boundary is the
    /// sandbox, which refuses anything outside the preopened directory,
    /// including through symlinks.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        let root = normalize(self.work_dir()?).ok_or_else(|| ToolError::path_escape("the work directory"))?;
        if path.len() > MAX_PATH_BYTES {
            return Err(ToolError::new(
                codes::PATH_TOO_LONG,
                format!("the path is {} bytes; paths are at most {MAX_PATH_BYTES} bytes", path.len()),
            ));
        }
        if path.contains('\0') {
            return Err(ToolError::invalid_args("path contains a NUL byte"));
        }
        let given = Path::new(path);
        let joined = if given.is_absolute() { given.to_path_buf() } else { root.join(given) };
        match normalize(&joined) {
            Some(out) if out.starts_with(&root) => Ok(out),
            _ => Err(ToolError::path_escape(path)),
        }
    }

    /// `path` as the model should see it: relative to the work dir (`.` for
    /// the work dir itself), or unchanged when it is outside. This is the
    /// exact (lossy UTF-8) spelling, for metadata; text shows
    /// [`Context::show`].
    pub fn display(&self, path: &Path) -> String {
        match self.work_dir.as_deref().and_then(|root| path.strip_prefix(root).ok()) {
            Some(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Some(rel) => rel.display().to_string(),
            None => path.display().to_string(),
        }
    }

    /// `path` as text shows it: [`Context::display`], quoted by
    /// [`quote_name`](crate::quote_name) when it holds a control or unusual
    /// character, so a file name cannot forge output.
    pub fn show(&self, path: &Path) -> String {
        quote_name(&self.display(path)).into_owned()
    }

    /// Map an I/O error on `path` to the code the model can act on
    /// (`not_found`, `access_denied`, `io_error`), naming the path as the
    /// model sees it: relative to the work dir, like [`Context::show`].
    pub fn io_error(&self, err: &io::Error, path: &Path) -> ToolError {
        ToolError::io(err, Path::new(&self.show(path)))
    }
}

/// Lexically drop `.` and resolve `..`; `None` when `..` climbs above the
/// start of the path.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Context {
        Context::new("c1", Some(PathBuf::from("/work/proj")))
    }

    #[test]
    fn resolves_inside() {
        assert_eq!(ctx().resolve("src/a.rs").unwrap(), PathBuf::from("/work/proj/src/a.rs"));
        assert_eq!(ctx().resolve("./src/../b").unwrap(), PathBuf::from("/work/proj/b"));
        assert_eq!(ctx().resolve("").unwrap(), PathBuf::from("/work/proj"));
        assert_eq!(ctx().resolve("/work/proj/x").unwrap(), PathBuf::from("/work/proj/x"));
    }

    #[test]
    fn refuses_escapes() {
        for p in ["../x", "../../etc/passwd", "/etc/passwd", "a/../../x", "/work/projx/y", "/"] {
            let err = ctx().resolve(p).unwrap_err();
            assert_eq!(err.code, codes::PATH_ESCAPE, "{p}");
        }
    }

    #[test]
    fn a_relative_or_unnormalized_work_dir_works_too() {
        let dot = Context::new("c", Some(PathBuf::from(".")));
        assert_eq!(dot.resolve("a.txt").unwrap(), PathBuf::from("a.txt"));
        assert_eq!(dot.resolve(".").unwrap(), PathBuf::from(""));
        assert_eq!(dot.resolve("../x").unwrap_err().code, codes::PATH_ESCAPE);
        let odd = Context::new("c", Some(PathBuf::from("/work/./proj/sub/..")));
        assert_eq!(odd.resolve("a").unwrap(), PathBuf::from("/work/proj/a"));
    }

    #[test]
    fn overlong_paths_are_refused_without_echoing_them() {
        let long = "a/".repeat(MAX_PATH_BYTES / 2) + "b";
        let err = ctx().resolve(&long).unwrap_err();
        assert_eq!(err.code, codes::PATH_TOO_LONG);
        assert_eq!(err.message, "the path is 4097 bytes; paths are at most 4096 bytes");
        assert!(ctx().resolve(&"a/".repeat(MAX_PATH_BYTES / 2)).is_ok());
    }

    #[test]
    fn no_work_dir_is_no_filesystem() {
        let err = Context::new("c", None).resolve("a").unwrap_err();
        assert_eq!(err.code, codes::NO_FILESYSTEM);
    }

    #[test]
    fn io_errors_name_the_path_as_the_model_sees_it() {
        let err = ctx().io_error(&io::Error::from(io::ErrorKind::NotFound), Path::new("/work/proj/a/b.txt"));
        assert_eq!(err.to_string(), "not_found: a/b.txt does not exist");
    }

    #[test]
    fn a_full_disk_is_no_space() {
        for kind in [io::ErrorKind::StorageFull, io::ErrorKind::FileTooLarge] {
            let err = ctx().io_error(&io::Error::from(kind), Path::new("/work/proj/a"));
            assert_eq!(err.code, "no_space", "{kind:?}");
            assert!(err.to_string().contains("a: "), "{err}");
        }
        // EDQUOT is the host's write quota, nothing else.
        let err = ctx().io_error(&io::Error::from(io::ErrorKind::QuotaExceeded), Path::new("/work/proj/a"));
        assert_eq!(err.code, "write_quota");
    }

    #[test]
    fn displays_relative() {
        assert_eq!(ctx().display(Path::new("/work/proj/src/a.rs")), "src/a.rs");
        assert_eq!(ctx().display(Path::new("/work/proj")), ".");
    }

    #[test]
    fn shows_unusual_names_quoted() {
        assert_eq!(ctx().show(Path::new("/work/proj/src/a.rs")), "src/a.rs");
        assert_eq!(ctx().show(Path::new("/work/proj/a\nb")), r#""a\nb""#);
        assert_eq!(ctx().show(Path::new("/work/proj/a\\nb")), r#""a\\nb""#);
        assert_eq!(ctx().show(Path::new("/work/proj/d/x\ny")), r#""d/x\ny""#);
        assert_eq!(ctx().display(Path::new("/work/proj/d/x\ny")), "d/x\ny", "display stays exact");
        let err = ctx().io_error(&io::Error::from(io::ErrorKind::NotFound), Path::new("/work/proj/\x1b[2J"));
        assert_eq!(err.message, r#""\x1b[2J" does not exist"#);
    }
}
