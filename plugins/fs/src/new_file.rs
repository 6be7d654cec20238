//! A new file for the atomic write (`write::write_atomic`): created (it must not
//! exist yet), written whole, synced.
//!
//! In the component it is written with WASI 0.2's positional `write` on the
//! descriptor, not through `std::fs::File`: wasi-libc writes a file through an
//! output stream and turns any failed stream write into `EIO`, so a full disk
//! (`insufficient-space`) or the call's write quota (`quota`) would reach the tool
//! as a bare I/O error. A positional write returns the filesystem's own error code,
//! which [`wasi::io_error`] maps to the `io::ErrorKind` the SDK turns into
//! `no_space` or `write_quota`. Natively (the unit tests) it is a plain `File`.

use std::io;
use std::path::Path;

/// A file this call created, written front to back.
pub struct NewFile {
    #[cfg(target_arch = "wasm32")]
    descriptor: wasip2::filesystem::types::Descriptor,
    #[cfg(target_arch = "wasm32")]
    written: u64,
    #[cfg(not(target_arch = "wasm32"))]
    file: std::fs::File,
}

#[cfg(not(target_arch = "wasm32"))]
impl NewFile {
    /// Create `path` for writing; `AlreadyExists` when anything is there.
    pub fn create_new(path: &Path) -> io::Result<Self> {
        let file = std::fs::OpenOptions::new().write(true).create_new(true).open(path)?;
        Ok(Self { file })
    }

    /// Write all of `bytes` after what was written before.
    pub fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        io::Write::write_all(&mut self.file, bytes)
    }

    /// Flush the file's data and metadata to the disk.
    pub fn sync_all(&self) -> io::Result<()> {
        self.file.sync_all()
    }
}

#[cfg(target_arch = "wasm32")]
impl NewFile {
    /// Create `path` for writing; `AlreadyExists` when anything is there (a
    /// symlink included: the last component is never followed).
    pub fn create_new(path: &Path) -> io::Result<Self> {
        use wasip2::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};
        let (root, rel) = wasi::beneath_preopen(path)?;
        let descriptor = root
            .open_at(
                PathFlags::empty(),
                &rel,
                OpenFlags::CREATE | OpenFlags::EXCLUSIVE,
                DescriptorFlags::WRITE,
            )
            .map_err(wasi::io_error)?;
        Ok(Self { descriptor, written: 0 })
    }

    /// Write all of `bytes` after what was written before, at most 1 MiB per
    /// host call.
    pub fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        for chunk in bytes.chunks(1 << 20) {
            let mut rest = chunk;
            while !rest.is_empty() {
                let n = self.descriptor.write(rest, self.written).map_err(wasi::io_error)?;
                if n == 0 {
                    return Err(io::ErrorKind::WriteZero.into());
                }
                let n = usize::try_from(n).unwrap_or(rest.len()).min(rest.len());
                rest = &rest[n..];
                self.written += n as u64;
            }
        }
        Ok(())
    }

    /// Flush the file's data and metadata to the disk.
    pub fn sync_all(&self) -> io::Result<()> {
        self.descriptor.sync().map_err(wasi::io_error)
    }
}

/// WASI 0.2 called directly: the preopen that holds a path, and its error codes
/// as `io::Error`s.
#[cfg(target_arch = "wasm32")]
pub mod wasi {
    use std::io::{self, ErrorKind};
    use std::path::Path;

    use wasip2::filesystem::preopens::get_directories;
    use wasip2::filesystem::types::{Descriptor, ErrorCode};

    /// The preopened directory holding `path`, and `path` relative to it (empty
    /// for the preopen itself).
    pub fn beneath_preopen(path: &Path) -> io::Result<(Descriptor, String)> {
        get_directories()
            .into_iter()
            .find_map(|(desc, root)| {
                let rel = path.strip_prefix(&root).ok()?;
                Some((desc, rel.to_string_lossy().into_owned()))
            })
            .ok_or_else(|| io::Error::new(ErrorKind::PermissionDenied, "outside every preopened directory"))
    }

    /// `code` as the `io::Error` std would have made of its errno.
    pub fn io_error(code: ErrorCode) -> io::Error {
        let kind = match code {
            ErrorCode::NoEntry => ErrorKind::NotFound,
            ErrorCode::Access | ErrorCode::NotPermitted => ErrorKind::PermissionDenied,
            ErrorCode::Exist => ErrorKind::AlreadyExists,
            ErrorCode::NotDirectory => ErrorKind::NotADirectory,
            ErrorCode::IsDirectory => ErrorKind::IsADirectory,
            ErrorCode::InsufficientSpace => ErrorKind::StorageFull,
            ErrorCode::Quota => ErrorKind::QuotaExceeded,
            ErrorCode::FileTooLarge => ErrorKind::FileTooLarge,
            ErrorCode::ReadOnly => ErrorKind::ReadOnlyFilesystem,
            ErrorCode::Unsupported => ErrorKind::Unsupported,
            _ => return io::Error::other(format!("WASI error {}", code.name())),
        };
        kind.into()
    }
}
