//! The only ways the search touches the file system, each confined to the
//! directory handle it is given: a directory below the root opened with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` (by components with
//! `O_NOFOLLOW` on a kernel without `openat2`), a directory listed with
//! `getdents64` on its handle, a file opened from its directory's handle with
//! `O_NOFOLLOW | O_NONBLOCK` (a FIFO or device swapped in never blocks the
//! open) and read only when `fstat` says it is a regular file. A symlink
//! swapped in for a directory or a file between the listing and the open makes
//! the open fail: it is counted, never followed.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, ResolveFlags};
use rustix::io::Errno;

pub use crate::Kind;

/// A listing that fails this many times in a row is given up.
pub const MAX_FAILURES_IN_A_ROW: usize = 1000;

const DIR_FLAGS: OFlags =
    OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);
const FILE_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::NONBLOCK)
    .union(OFlags::CLOEXEC)
    .union(OFlags::NOCTTY);

/// Open the directory `rel` (relative, no `..`) below `root`: no symlink is
/// followed in any component and nothing outside `root` is reached.
pub fn open_dir(root: BorrowedFd<'_>, rel: &Path) -> std::io::Result<OwnedFd> {
    if rel.as_os_str().is_empty() {
        return Ok(rustix::fs::openat(root, ".", DIR_FLAGS, Mode::empty())?);
    }
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    match rustix::fs::openat2(root, rel, DIR_FLAGS, Mode::empty(), resolve) {
        Err(Errno::NOSYS) => Ok(open_by_components(root, rel)?),
        other => Ok(other?),
    }
}

/// [`open_dir`] without `openat2`: one `O_NOFOLLOW` open per component, each
/// from the handle of the one before.
pub fn open_by_components(root: BorrowedFd<'_>, rel: &Path) -> rustix::io::Result<OwnedFd> {
    let mut at: Option<OwnedFd> = None;
    for part in rel.components() {
        let Component::Normal(name) = part else { return Err(Errno::XDEV) };
        let from = at.as_ref().map_or(root, AsFd::as_fd);
        at = Some(rustix::fs::openat(from, name, DIR_FLAGS, Mode::empty())?);
    }
    match at {
        Some(fd) => Ok(fd),
        None => rustix::fs::openat(root, ".", DIR_FLAGS, Mode::empty()),
    }
}

/// Why a file was not opened for reading.
#[derive(Debug, PartialEq, Eq)]
pub enum OpenError {
    /// The open or its `fstat` failed (a symlink there fails with `ELOOP`).
    Io(Errno),
    /// It is not a regular file (a FIFO, socket, device or directory).
    NotRegular,
}

/// Open the entry `name` of `dir` for reading, with its size: a regular file
/// only, never through a symlink, never blocking.
pub fn open_file(dir: BorrowedFd<'_>, name: &OsStr) -> Result<(OwnedFd, u64), OpenError> {
    let fd = rustix::fs::openat(dir, name, FILE_FLAGS, Mode::empty()).map_err(OpenError::Io)?;
    checked(fd)
}

/// `fd` with its size when `fstat` says it is a regular file.
pub fn checked(fd: OwnedFd) -> Result<(OwnedFd, u64), OpenError> {
    let stat = rustix::fs::fstat(&fd).map_err(OpenError::Io)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(OpenError::NotRegular);
    }
    Ok((fd, u64::try_from(stat.st_size).unwrap_or(0)))
}

/// Read `fd` into `buf` up to `len` bytes (a file that shrank gives fewer).
pub fn read_up_to(fd: BorrowedFd<'_>, buf: &mut Vec<u8>, len: usize) -> std::io::Result<()> {
    buf.clear();
    buf.resize(len, 0);
    let mut filled = 0;
    while filled < len {
        match rustix::io::read(fd, &mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    buf.truncate(filled);
    Ok(())
}

/// The entries of the directory `dir` (names and kinds, `.` and `..` left out),
/// and how many could not be read.
pub fn list(dir: BorrowedFd<'_>) -> (Vec<(OsString, Kind)>, usize) {
    let mut space = vec![std::mem::MaybeUninit::uninit(); 64 * 1024];
    let mut raw = RawDir::new(dir, &mut space);
    let (mut out, mut failed, mut in_a_row) = (Vec::new(), 0, 0);
    while let Some(item) = raw.next() {
        let entry = match item {
            Ok(entry) => entry,
            Err(_) => {
                failed += 1;
                in_a_row += 1;
                if in_a_row == MAX_FAILURES_IN_A_ROW {
                    break;
                }
                continue;
            }
        };
        in_a_row = 0;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let name = OsStr::from_bytes(name);
        let file_type = match entry.file_type() {
            FileType::Unknown => match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => FileType::from_raw_mode(stat.st_mode),
                Err(_) => {
                    failed += 1;
                    continue;
                }
            },
            known => known,
        };
        out.push((name.to_os_string(), kind(file_type)));
    }
    (out, failed)
}

fn kind(file_type: FileType) -> Kind {
    match file_type {
        FileType::Directory => Kind::Dir,
        FileType::RegularFile => Kind::File,
        FileType::Symlink => Kind::Symlink,
        _ => Kind::Other,
    }
}

/// The modification time of the entry `name` of `dir` (not following a
/// symlink), in seconds after the epoch; `None` when it cannot be read.
pub fn mtime(dir: BorrowedFd<'_>, name: &OsStr) -> Option<i64> {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).ok().map(|s| s.st_mtime)
}

/// The first `max` bytes of the regular file `name` of `dir`, or `None`.
pub fn read_small(dir: BorrowedFd<'_>, name: &OsStr, max: u64) -> Option<Vec<u8>> {
    let (fd, size) = open_file(dir, name).ok()?;
    let mut buf = Vec::new();
    read_up_to(fd.as_fd(), &mut buf, usize::try_from(size.min(max)).ok()?).ok()?;
    Some(buf)
}

#[cfg(test)]
pub(crate) mod tests;
