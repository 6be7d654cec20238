//! The host's own file reads and writes, where a tool may have planted something.
//!
//! Tools share the work dir with the host's policy file, and a user may keep the
//! host's cache or config inside it. So every file the host reads there may be a
//! symlink to somewhere else, a FIFO that never answers, `/dev/zero`, or far too
//! large; and every file it writes may have a symlink planted at its name or at a
//! predictable temp name beside it. Two helpers cover every host-side access:
//!
//! - [`read_regular`]: never follows a symlink at the final component, opens
//!   non-blocking (a FIFO can't stall the host), accepts regular files only, and
//!   reads at most a bound.
//! - [`write_atomic`]: a random-named `O_EXCL` temp file (mode 0600) in the target's
//!   dir, written and synced, then renamed over the target. A rename replaces a
//!   planted symlink instead of writing through it, and a crash leaves the old file
//!   or the new one, never half of one.

use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Read the regular file at `path`, at most `max_bytes` of it. `Ok(None)` when
/// nothing is there; an error when it is a symlink, a directory, a FIFO, a device or
/// a socket, or larger than `max_bytes`.
pub fn read_regular(path: &Path, max_bytes: u64) -> io::Result<Option<Vec<u8>>> {
    read_bounded(path, max_bytes, libc::O_NOFOLLOW)
}

/// [`read_regular`], but following symlinks (for files the user names, such as a
/// component: pinned by hash, so where the link leads doesn't matter, only that it
/// is a regular file of bounded size that can't stall the host).
pub fn read_regular_following(path: &Path, max_bytes: u64) -> io::Result<Option<Vec<u8>>> {
    read_bounded(path, max_bytes, 0)
}

/// [`read_regular`] for a secret the user keeps in a file (a bearer token, a
/// signing key): it must be there, and neither its group nor others may have any
/// access to it (mode 0600 or narrower).
pub fn read_private(path: &Path, max_bytes: u64) -> io::Result<Vec<u8>> {
    read_checked(path, max_bytes, libc::O_NOFOLLOW, |meta| {
        use std::os::unix::fs::MetadataExt as _;
        match meta.mode() & 0o077 {
            0 => Ok(()),
            _ => Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("mode {:o}: group and others must have no access (chmod 600)", meta.mode() & 0o777),
            )),
        }
    })?
    .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such file"))
}

fn read_bounded(path: &Path, max_bytes: u64, flags: libc::c_int) -> io::Result<Option<Vec<u8>>> {
    read_checked(path, max_bytes, flags, |_| Ok(()))
}

/// Open `path` (`flags` added), check it is a regular file that passes `check`,
/// read at most `max_bytes`.
fn read_checked(
    path: &Path,
    max_bytes: u64,
    flags: libc::c_int,
    check: impl FnOnce(&std::fs::Metadata) -> io::Result<()>,
) -> io::Result<Option<Vec<u8>>> {
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        // O_NOFOLLOW on a symlink.
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(io::Error::other("it is a symlink; only a regular file is read"));
        }
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(io::Error::other(format!("it is {}; only a regular file is read", kind(&meta))));
    }
    check(&meta)?;
    if meta.len() > max_bytes {
        return Err(io::Error::other(format!("it is {} bytes; at most {max_bytes} are read", meta.len())));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // The file may grow while it is read: never take more than the bound.
    file.take(max_bytes + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(io::Error::other(format!("it grew past {max_bytes} bytes while being read")));
    }
    Ok(Some(bytes))
}

/// [`read_regular`] as UTF-8 text.
pub fn read_text(path: &Path, max_bytes: u64) -> io::Result<Option<String>> {
    match read_regular(path, max_bytes)? {
        None => Ok(None),
        Some(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "it is not UTF-8 text")),
    }
}

/// Replace the file at `path` with `bytes`, atomically: a fresh temp file beside it
/// (random name, `O_EXCL`, 0600), synced, then renamed over `path`. `mode`: the new
/// file's permission bits (default: those of the regular file it replaces, else 0600).
pub fn write_atomic(path: &Path, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mode = mode.unwrap_or_else(|| match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_file() => meta.permissions().mode() & 0o777,
        _ => 0o600,
    });
    let mut tmp = tempfile::Builder::new().prefix(".toolhost-").suffix(".tmp").tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().set_permissions(std::fs::Permissions::from_mode(mode))?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    // The rename is durable once the directory is.
    if let Ok(dir) = std::fs::File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Create the directory `dir` (and its parents) private to this user (0700).
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

fn kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_refuse_links_fifos_devices_and_big_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.toml");
        std::fs::write(&file, "x = 1\n").unwrap();
        assert_eq!(read_text(&file, 100).unwrap().as_deref(), Some("x = 1\n"));
        assert!(read_regular(&dir.path().join("missing"), 100).unwrap().is_none());
        assert!(read_regular(&file, 3).unwrap_err().to_string().contains("at most 3"));

        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(read_regular(&link, 100).unwrap_err().to_string().contains("symlink"));
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert!(read_regular(&zero, 100).is_err());
        assert!(read_regular(Path::new("/dev/zero"), 100).unwrap_err().to_string().contains("device"));

        let fifo = dir.path().join("fifo");
        let fifo_mode = rustix::fs::Mode::from_raw_mode(0o600);
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, fifo_mode, 0).unwrap();
        let started = std::time::Instant::now();
        assert!(read_regular(&fifo, 100).unwrap_err().to_string().contains("FIFO"));
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn writes_replace_a_planted_link_instead_of_following_it() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let target = dir.path().join("toolhost.toml");
        std::os::unix::fs::symlink(&victim, &target).unwrap();
        write_atomic(&target, b"new", None).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(!std::fs::symlink_metadata(&target).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        assert_eq!(std::fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o600);
        // No temp file is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("toolhost.toml")]);
        // An existing file keeps its mode.
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_atomic(&target, b"newer", None).unwrap();
        assert_eq!(std::fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o644);
    }
}
