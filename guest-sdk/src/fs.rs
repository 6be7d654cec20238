//! Filesystem helpers: reading a text file the model named, and what WASI
//! 0.2 lacks, provided by the host's `toolhost:plugin/files` import
//! (confined to the work dir).

use std::io;
use std::path::Path;

use crate::context::Context;
use crate::error::{ToolError, codes};

/// Read the text file the model named: [`Context::resolve`] it inside the
/// work dir, then read it whole. Every failure is a code the model can act
/// on, naming the path as the model gave it relative to the work dir:
/// `path_escape`, `not_found`, `is_directory`, `access_denied`,
/// `binary_file` (a NUL byte, or not UTF-8) or `io_error`.
///
/// The whole file is held in memory; a file larger than the call's memory
/// cap stops the call with `memory_limit`.
pub fn read_text(ctx: &Context, path: &str) -> Result<String, ToolError> {
    let full = ctx.resolve(path)?;
    let shown = ctx.show(&full);
    let meta = std::fs::metadata(&full).map_err(|e| ctx.io_error(&e, &full))?;
    if meta.is_dir() {
        return Err(ToolError::new(codes::IS_DIRECTORY, format!("{shown} is a directory, not a file")));
    }
    let bytes = std::fs::read(&full).map_err(|e| ctx.io_error(&e, &full))?;
    if bytes.contains(&0) {
        return Err(ToolError::new(codes::BINARY_FILE, format!("{shown} is a binary file")));
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        ToolError::new(codes::BINARY_FILE, format!("{shown} is not UTF-8 text (byte {at})"))
    })
}

/// Give `to` the permission bits of `from`, for example to keep a file's
/// mode when replacing it with a renamed temporary file. Both paths must be
/// inside the work dir, and the call must be allowed to write.
///
/// In a native build (unit tests) this is `std::fs::set_permissions`.
pub fn copy_permissions(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::bindings::toolhost::plugin::files::copy_permissions(
            &from.to_string_lossy(),
            &to.to_string_lossy(),
        )
        .map_err(|message| io::Error::new(io::ErrorKind::PermissionDenied, message))
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        std::fs::set_permissions(to, std::fs::metadata(from)?.permissions())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work_dir() -> (tempfile::TempDir, Context) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = Context::new("c", Some(dir.path().to_path_buf()));
        (dir, ctx)
    }

    #[test]
    fn reads_text_and_names_each_failure() {
        let (dir, ctx) = work_dir();
        std::fs::write(dir.path().join("a.txt"), "héllo\n").unwrap();
        std::fs::write(dir.path().join("nul.bin"), b"a\0b").unwrap();
        std::fs::write(dir.path().join("latin1.txt"), b"caf\xe9").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        assert_eq!(read_text(&ctx, "a.txt").unwrap(), "héllo\n");
        let code = |path: &str| read_text(&ctx, path).unwrap_err().to_string();
        assert_eq!(code("gone.txt"), "not_found: gone.txt does not exist");
        assert_eq!(code("sub"), "is_directory: sub is a directory, not a file");
        assert_eq!(code("nul.bin"), "binary_file: nul.bin is a binary file");
        assert_eq!(code("latin1.txt"), "binary_file: latin1.txt is not UTF-8 text (byte 3)");
        assert_eq!(code("../x"), "path_escape: ../x is outside the work directory");
        std::fs::create_dir(dir.path().join("d\x1b[2J")).unwrap();
        assert_eq!(code("d\x1b[2J"), r#"is_directory: "d\x1b[2J" is a directory, not a file"#);
        assert_eq!(code("gone\n.txt"), r#"not_found: "gone\n.txt" does not exist"#);
    }
}
