//! Merging what a writing child changed — its overlay's upper layer
//! (`super::overlay`) — into the work dir, once its whole tree is dead.
//!
//! The upper layer holds exactly what changed: new and rewritten files and
//! links, new dirs (moved whole), dirs that only hold changes (merged entry by
//! entry, their mode applied), whiteouts (a character device 0/0: the path was
//! removed) and opaque dirs (`user.overlay.opaque` = `y`: the dir was removed and
//! made again, so what the work dir holds there goes). Entries move by `rename`,
//! never copied, when the layers share a filesystem (a copy in the work dir,
//! renamed into place, when they do not).
//!
//! Refused, and never reaching the work dir: anything new or changed at a
//! protected path ([`Protected::check_rel`]: a `.git` anywhere, the host's files,
//! the `protected` globs; repository data only with a commit grant) and removing
//! one or a dir holding one (kept, and said so); sockets, FIFOs and devices
//! (dropped: they mean nothing outside the child's namespaces). Set-uid and
//! set-gid bits of a merged file are cleared unless the file it replaces had
//! them, and the overlay's own `user.overlay.*` attributes are stripped.
//!
//! The work dir is walked by descriptor, each dir opened without following a
//! symlink. An error stops the merge where it is: what was merged stays merged,
//! what was not is still in the upper layer, and [`MergeError`] names the path.

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

use super::protect::Protected;

/// The prefix of the attributes overlayfs keeps on upper entries (`userxattr`).
const OVERLAY_XATTR: &[u8] = b"user.overlay.";
/// The attribute marking an opaque dir.
const OPAQUE: &CStr = c"user.overlay.opaque";
/// Set-uid and set-gid.
const SET_ID: u32 = 0o6000;

/// What one merge did.
#[derive(Debug, Default)]
pub(super) struct Merged {
    /// Entries moved into the work dir (a new dir counts once) or removed from it.
    pub(super) changed: usize,
    /// What was not kept, one line each (a protected path, named).
    pub(super) refused: Vec<String>,
    /// Sockets, FIFOs and devices dropped.
    pub(super) dropped: usize,
    /// Bytes of the regular files moved in.
    pub(super) added: u64,
    /// Bytes of the regular files they replaced, and of those removed.
    pub(super) removed: u64,
}

impl Merged {
    /// How much the work dir grew.
    pub(super) fn growth(&self) -> u64 {
        self.added.saturating_sub(self.removed)
    }
}

/// Where a merge stopped, and why.
#[derive(Debug)]
pub(super) struct MergeError {
    /// Relative to the work dir.
    pub(super) at: PathBuf,
    pub(super) error: io::Error,
}

impl std::fmt::Display for MergeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", shown(&self.at), self.error)
    }
}

/// Merge the upper layer `upper` into `work` (both canonical), refusing what
/// `protected` covers (`commit`: repository data may change). On error, what
/// was merged so far comes with it.
pub(super) fn merge(
    upper: &Path,
    work: &Path,
    protected: &Protected,
    commit: bool,
) -> Result<Merged, (Merged, MergeError)> {
    let mut m = Merge { protected, commit, upper: upper.to_path_buf(), out: Merged::default() };
    let root = Path::new("");
    let opened = (|| {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let up = rfs::open(upper, flags | OFlags::NOFOLLOW, Mode::empty())?;
        let wk = rfs::open(work, flags, Mode::empty())?;
        let (ust, wst) = (rfs::fstat(&up)?, rfs::fstat(&wk)?);
        if perm(&ust) != perm(&wst) {
            rfs::fchmod(&wk, Mode::from_raw_mode(perm(&ust)))?;
        }
        Ok::<_, Errno>((up, wk))
    })();
    let result = match opened {
        Ok((up, wk)) => m.dir(&up, &wk, root),
        Err(e) => Err(fail(root, e)),
    };
    match result {
        Ok(()) => Ok(m.out),
        Err(e) => Err((m.out, e)),
    }
}

struct Merge<'a> {
    protected: &'a Protected,
    commit: bool,
    upper: PathBuf,
    out: Merged,
}

fn fail(rel: &Path, e: impl Into<io::Error>) -> MergeError {
    MergeError { at: rel.to_path_buf(), error: e.into() }
}

impl Merge<'_> {
    /// Merge every entry of the upper dir `up` into the work dir `wk` (at `rel`).
    fn dir(&mut self, up: &OwnedFd, wk: &OwnedFd, rel: &Path) -> Result<(), MergeError> {
        for name in names(up).map_err(|e| fail(rel, e))? {
            let rel = rel.join(OsStr::from_bytes(name.to_bytes()));
            self.entry(up, wk, &name, &rel)?;
        }
        Ok(())
    }

    /// Whether `rel` is a protected path.
    fn refused(&self, rel: &Path) -> bool {
        self.protected.check_rel(rel, self.commit).is_some()
    }

    fn entry(&mut self, up: &OwnedFd, wk: &OwnedFd, name: &CStr, rel: &Path) -> Result<(), MergeError> {
        let err = |e: Errno| fail(rel, e);
        let st = rfs::statat(up, name, AtFlags::SYMLINK_NOFOLLOW).map_err(err)?;
        let there = match rfs::statat(wk, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(there) => Some(there),
            Err(Errno::NOENT) => None,
            Err(e) => return Err(err(e)),
        };
        match FileType::from_raw_mode(st.st_mode) {
            FileType::CharacterDevice if st.st_rdev == 0 => {
                if let Some(there) = &there {
                    self.remove(wk, name, rel, there)?;
                }
                rfs::unlinkat(up, name, AtFlags::empty()).map_err(err)
            }
            FileType::Directory => {
                let opaque = self.strip_xattrs(rel).map_err(|e| fail(rel, e))?;
                match &there {
                    Some(there) if is_dir(there) && !opaque => {
                        if perm(&st) != perm(there) && !self.refused(rel) {
                            rfs::chmodat(wk, name, Mode::from_raw_mode(perm(&st)), AtFlags::empty())
                                .map_err(err)?;
                        }
                        let (u, w) = (open_dir(up, name).map_err(err)?, open_dir(wk, name).map_err(err)?);
                        self.dir(&u, &w, rel)?;
                        rfs::unlinkat(up, name, AtFlags::REMOVEDIR).map_err(err)
                    }
                    _ => self.replace(up, wk, name, rel, there.as_ref(), &st),
                }
            }
            FileType::RegularFile | FileType::Symlink => self.replace(up, wk, name, rel, there.as_ref(), &st),
            _ => {
                self.out.dropped += 1;
                rfs::unlinkat(up, name, AtFlags::empty()).map_err(err)
            }
        }
    }

    /// Put the upper entry `name` (new, or replacing what is `there`) in place.
    fn replace(
        &mut self,
        up: &OwnedFd,
        wk: &OwnedFd,
        name: &CStr,
        rel: &Path,
        there: Option<&Stat>,
        st: &Stat,
    ) -> Result<(), MergeError> {
        if self.refused(rel) {
            let what = if there.is_some() { "changed" } else { "created" };
            self.out.refused.push(format!("{} was {what} (not kept)", shown(rel)));
            return remove_all(up, name).map_err(|e| fail(rel, e));
        }
        if let Some(there) = there {
            let replaceable = !is_dir(there) && !is_dir(st);
            if replaceable {
                if FileType::from_raw_mode(there.st_mode) == FileType::RegularFile {
                    self.out.removed += there.st_size as u64;
                }
            } else if !self.remove(wk, name, rel, there)? {
                return remove_all(up, name).map_err(|e| fail(rel, e));
            }
        }
        let keep_set_id = there.is_some_and(|t| t.st_mode & SET_ID == st.st_mode & SET_ID);
        self.sanitize(up, name, rel, st, keep_set_id)?;
        match rfs::renameat(up, name, wk, name) {
            Ok(()) => {}
            Err(Errno::XDEV) => copy_in(up, wk, name).map_err(|e| fail(rel, e))?,
            Err(e) => return Err(fail(rel, e)),
        }
        self.out.changed += 1;
        Ok(())
    }

    /// Make the upper entry `name` fit to move: overlay attributes stripped,
    /// set-id bits cleared (unless `keep_set_id`), and for a dir, everything
    /// beneath it that may not reach the work dir taken out. Counts the bytes.
    fn sanitize(
        &mut self,
        up: &OwnedFd,
        name: &CStr,
        rel: &Path,
        st: &Stat,
        keep_set_id: bool,
    ) -> Result<(), MergeError> {
        let err = |e: Errno| fail(rel, e);
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => {
                self.strip_xattrs(rel).map_err(|e| fail(rel, e))?;
                if st.st_mode & SET_ID != 0 && !keep_set_id {
                    let mode = Mode::from_raw_mode(perm(st) & !SET_ID);
                    rfs::chmodat(up, name, mode, AtFlags::empty()).map_err(err)?;
                }
                self.out.added += st.st_size as u64;
            }
            FileType::Directory => {
                self.strip_xattrs(rel).map_err(|e| fail(rel, e))?;
                let dir = open_dir(up, name).map_err(err)?;
                for child in names(&dir).map_err(|e| fail(rel, e))? {
                    let rel = rel.join(OsStr::from_bytes(child.to_bytes()));
                    let err = |e: Errno| fail(&rel, e);
                    let cst = rfs::statat(&dir, &child, AtFlags::SYMLINK_NOFOLLOW).map_err(err)?;
                    let kind = FileType::from_raw_mode(cst.st_mode);
                    let plain =
                        matches!(kind, FileType::RegularFile | FileType::Directory | FileType::Symlink);
                    if plain && self.refused(&rel) {
                        self.out.refused.push(format!("{} was created (not kept)", shown(&rel)));
                        remove_all(&dir, &child).map_err(|e| fail(&rel, e))?;
                    } else if plain {
                        self.sanitize(&dir, &child, &rel, &cst, false)?;
                    } else {
                        // A whiteout in a new or opaque dir hides nothing the merge keeps.
                        self.out.dropped +=
                            usize::from(!(kind == FileType::CharacterDevice && cst.st_rdev == 0));
                        rfs::unlinkat(&dir, &child, AtFlags::empty()).map_err(err)?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Remove what is at `name` (`rel`) in the work dir — unless it is, or holds,
    /// a protected path: then it is kept, said so, and `false` returned.
    fn remove(&mut self, wk: &OwnedFd, name: &CStr, rel: &Path, there: &Stat) -> Result<bool, MergeError> {
        let err = |e: Errno| fail(rel, e);
        if self.refused(rel) {
            self.out.refused.push(format!("{} was removed (kept)", shown(rel)));
            return Ok(false);
        }
        if is_dir(there) {
            let dir = open_dir(wk, name).map_err(err)?;
            let mut bytes = 0;
            if let Some(inner) = self.find_protected(&dir, rel, &mut bytes)? {
                self.out.refused.push(format!(
                    "{} was removed (kept: {} is protected)",
                    shown(rel),
                    shown(&inner)
                ));
                return Ok(false);
            }
            self.out.removed += bytes;
        } else if FileType::from_raw_mode(there.st_mode) == FileType::RegularFile {
            self.out.removed += there.st_size as u64;
        }
        remove_all(wk, name).map_err(|e| fail(rel, e))?;
        self.out.changed += 1;
        Ok(true)
    }

    /// The first protected path beneath the work dir's `dir` (at `rel`), summing
    /// the bytes of its regular files into `bytes`.
    fn find_protected(
        &self,
        dir: &OwnedFd,
        rel: &Path,
        bytes: &mut u64,
    ) -> Result<Option<PathBuf>, MergeError> {
        for name in names(dir).map_err(|e| fail(rel, e))? {
            let rel = rel.join(OsStr::from_bytes(name.to_bytes()));
            if self.refused(&rel) {
                return Ok(Some(rel));
            }
            let st = rfs::statat(dir, &name, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| fail(&rel, e))?;
            match FileType::from_raw_mode(st.st_mode) {
                FileType::Directory => {
                    let sub = open_dir(dir, &name).map_err(|e| fail(&rel, e))?;
                    if let Some(found) = self.find_protected(&sub, &rel, bytes)? {
                        return Ok(Some(found));
                    }
                }
                FileType::RegularFile => *bytes += st.st_size as u64,
                _ => {}
            }
        }
        Ok(None)
    }

    /// Remove the overlay's attributes from the upper entry at `rel`; whether it
    /// marked an opaque dir.
    fn strip_xattrs(&self, rel: &Path) -> io::Result<bool> {
        let path = self.upper.join(rel);
        let mut buf = vec![0u8; 1024];
        let len = loop {
            match rfs::llistxattr(&path, &mut buf[..]) {
                Ok(len) => break len,
                Err(Errno::RANGE) => buf.resize(rfs::llistxattr_query(&path)?.max(buf.len() * 2), 0),
                Err(Errno::NOTSUP) => return Ok(false),
                Err(e) => return Err(e.into()),
            }
        };
        let mut opaque = false;
        for attr in buf[..len].split(|b| *b == 0).filter(|a| a.starts_with(OVERLAY_XATTR)) {
            let attr = CString::new(attr).map_err(io::Error::other)?;
            if attr.as_c_str() == OPAQUE {
                let mut value = [0u8; 4];
                opaque = rfs::lgetxattr(&path, OPAQUE, &mut value[..]).is_ok_and(|n| value[..n] == *b"y");
            }
            rfs::lremovexattr(&path, attr.as_c_str())?;
        }
        Ok(opaque)
    }
}

fn perm(st: &Stat) -> u32 {
    st.st_mode & 0o7777
}

fn is_dir(st: &Stat) -> bool {
    FileType::from_raw_mode(st.st_mode) == FileType::Directory
}

/// `name` in `dir`, opened as a dir without following a symlink.
fn open_dir(dir: &OwnedFd, name: &CStr) -> Result<OwnedFd, Errno> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rfs::openat(dir, name, flags, Mode::empty())
}

/// The names in `dir` (without `.` and `..`), sorted.
fn names(dir: &OwnedFd) -> io::Result<Vec<CString>> {
    let mut out = Vec::new();
    for entry in rfs::Dir::read_from(dir)? {
        let name = entry?.file_name().to_owned();
        if name.as_bytes() != b"." && name.as_bytes() != b".." {
            out.push(name);
        }
    }
    out.sort();
    Ok(out)
}

/// Remove `name` from `dir`, a whole tree for a dir, following no symlink.
pub(super) fn remove_all(dir: &OwnedFd, name: &CStr) -> io::Result<()> {
    let st = rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    if !is_dir(&st) {
        return Ok(rfs::unlinkat(dir, name, AtFlags::empty())?);
    }
    let sub = match open_dir(dir, name) {
        Ok(sub) => sub,
        // A dir its owner may not read (overlayfs leaves its work dir 000).
        Err(Errno::ACCESS) => {
            rfs::chmodat(dir, name, Mode::RWXU, AtFlags::empty())?;
            open_dir(dir, name)?
        }
        Err(e) => return Err(e.into()),
    };
    if perm(&st) & 0o700 != 0o700 {
        rfs::fchmod(&sub, Mode::from_raw_mode(perm(&st) | 0o700))?;
    }
    for child in names(&sub)? {
        remove_all(&sub, &child)?;
    }
    Ok(rfs::unlinkat(dir, name, AtFlags::REMOVEDIR)?)
}

/// Copy the upper entry `name` into the work dir under a temporary name, rename
/// it into place, then remove it from the upper layer (the layers are on two
/// filesystems).
fn copy_in(up: &OwnedFd, wk: &OwnedFd, name: &CStr) -> io::Result<()> {
    let mut tmp = b".toolhost-merge-".to_vec();
    tmp.extend_from_slice(name.to_bytes());
    let tmp = CString::new(tmp).map_err(io::Error::other)?;
    let copied = copy_tree(up, name, wk, &tmp).and_then(|()| Ok(rfs::renameat(wk, &tmp, wk, name)?));
    if let Err(e) = copied {
        let _ = remove_all(wk, &tmp);
        return Err(e);
    }
    remove_all(up, name)
}

fn copy_tree(from: &OwnedFd, name: &CStr, to: &OwnedFd, to_name: &CStr) -> io::Result<()> {
    let st = rfs::statat(from, name, AtFlags::SYMLINK_NOFOLLOW)?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::Directory => {
            rfs::mkdirat(to, to_name, Mode::from_raw_mode(perm(&st)))?;
            let (src, dst) = (open_dir(from, name)?, open_dir(to, to_name)?);
            for child in names(&src)? {
                copy_tree(&src, &child, &dst, &child)?;
            }
            Ok(())
        }
        FileType::Symlink => {
            let target = rfs::readlinkat(from, name, Vec::new())?;
            Ok(rfs::symlinkat(target.as_c_str(), to, to_name)?)
        }
        _ => {
            let src =
                rfs::openat(from, name, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())?;
            let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let dst = rfs::openat(to, to_name, flags, Mode::from_raw_mode(perm(&st)))?;
            let (mut src, mut dst) = (std::fs::File::from(src), std::fs::File::from(dst));
            std::io::copy(&mut src, &mut dst)?;
            Ok(())
        }
    }
}

/// A relative path for messages (`.` for the work dir itself).
fn shown(rel: &Path) -> String {
    super::protect_walk::shown(rel)
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
