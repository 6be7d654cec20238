//! Reading one directory's entries (names and kinds, symlinks not
//! followed) for the walk, without failing the directory for one bad entry.
//!
//! A name that is not valid UTF-8 reaches a WASI guest either as an
//! `illegal-byte-sequence` error on that entry (wasi:filesystem names are
//! strings) or, from a host that decodes names lossily, with U+FFFD in it.
//! Either way the other entries are read: a failed entry is counted, and the
//! listing goes on after it.

use std::ffi::OsString;
#[cfg(not(target_arch = "wasm32"))]
use std::fs;
use std::path::Path;

/// What a walked entry is. Symlinks are reported as such, never followed.
pub use toolhost_search::Kind;

/// A directory whose listing fails this many times in a row is given up:
/// a stream that only fails would otherwise never end.
pub const MAX_FAILURES_IN_A_ROW: usize = 1000;

/// The readable entries of `dir`, in the order the system gives them, and
/// how many entries could not be read. Fails only when `dir` itself cannot
/// be opened.
pub fn read(dir: &Path) -> std::io::Result<(Vec<(OsString, Kind)>, usize)> {
    Ok(gather(list_dir(dir)?))
}

/// The readable entries of a directory listing and how many failed, giving
/// up after [`MAX_FAILURES_IN_A_ROW`] failures in a row.
fn gather<E>(items: impl Iterator<Item = Result<(OsString, Kind), E>>) -> (Vec<(OsString, Kind)>, usize) {
    let (mut out, mut failed, mut in_a_row) = (Vec::new(), 0, 0);
    for item in items {
        match item {
            Ok(entry) => {
                out.push(entry);
                in_a_row = 0;
            }
            Err(_) => {
                failed += 1;
                in_a_row += 1;
                if in_a_row == MAX_FAILURES_IN_A_ROW {
                    break;
                }
            }
        }
    }
    (out, failed)
}

/// Names and kinds of the entries of `dir` (not following symlinks), each
/// an error when it cannot be read.
#[cfg(not(target_arch = "wasm32"))]
fn list_dir(dir: &Path) -> std::io::Result<impl Iterator<Item = std::io::Result<(OsString, Kind)>>> {
    Ok(fs::read_dir(dir)?.map(|item| {
        let item = item?;
        let kind = match item.file_type()? {
            t if t.is_symlink() => Kind::Symlink,
            t if t.is_dir() => Kind::Dir,
            t if t.is_file() => Kind::File,
            _ => Kind::Other,
        };
        Ok((item.file_name(), kind))
    }))
}

/// Names and kinds of the entries of `dir`, read with WASI 0.2 directly from
/// the preopen that holds `dir` (one host call per entry, no extra stat),
/// each an error when the host could not read it (a name that is not UTF-8
/// is `illegal-byte-sequence`; the stream goes on after it).
#[cfg(target_arch = "wasm32")]
fn list_dir(dir: &Path) -> std::io::Result<WasiEntries> {
    use wasip2::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};

    use crate::new_file::wasi::{beneath_preopen, io_error as to_io};

    let (root, rel) = beneath_preopen(dir)?;
    let opened = if rel.is_empty() {
        None
    } else {
        Some(
            root.open_at(PathFlags::empty(), &rel, OpenFlags::DIRECTORY, DescriptorFlags::READ)
                .map_err(to_io)?,
        )
    };
    let stream = opened.as_ref().unwrap_or(&root).read_directory().map_err(to_io)?;
    Ok(WasiEntries { stream, _opened: opened, _root: root })
}

/// A WASI directory stream with the descriptors it was read from, which
/// must outlive it (fields drop in order: the stream first).
#[cfg(target_arch = "wasm32")]
struct WasiEntries {
    stream: wasip2::filesystem::types::DirectoryEntryStream,
    _opened: Option<wasip2::filesystem::types::Descriptor>,
    _root: wasip2::filesystem::types::Descriptor,
}

#[cfg(target_arch = "wasm32")]
impl Iterator for WasiEntries {
    type Item = Result<(OsString, Kind), wasip2::filesystem::types::ErrorCode>;

    fn next(&mut self) -> Option<Self::Item> {
        use wasip2::filesystem::types::DescriptorType;
        let entry = match self.stream.read_directory_entry() {
            Ok(Some(entry)) => entry,
            Ok(None) => return None,
            Err(code) => return Some(Err(code)),
        };
        let kind = match entry.type_ {
            DescriptorType::SymbolicLink => Kind::Symlink,
            DescriptorType::Directory => Kind::Dir,
            DescriptorType::RegularFile => Kind::File,
            _ => Kind::Other,
        };
        Some(Ok((OsString::from(entry.name), kind)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_entry_is_counted_not_fatal() {
        let ok = |name: &str| Ok::<_, ()>((OsString::from(name), Kind::File));
        let (entries, failed) = gather([ok("a"), Err(()), ok("b"), Err(()), Err(())].into_iter());
        assert_eq!(entries.iter().map(|(n, _)| n.to_str().unwrap()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(failed, 3);
        // Failures between successes never stop the listing.
        let mixed = (0..3).flat_map(|_| {
            std::iter::repeat_with(|| Err(())).take(MAX_FAILURES_IN_A_ROW - 1).chain([ok("x")])
        });
        let (entries, failed) = gather(mixed);
        assert_eq!((entries.len(), failed), (3, 3 * (MAX_FAILURES_IN_A_ROW - 1)));
    }

    #[test]
    fn a_listing_that_only_fails_is_given_up() {
        let (entries, failed) = gather(
            std::iter::once(Ok((OsString::from("a"), Kind::Dir))).chain(std::iter::repeat_with(|| Err(()))),
        );
        assert_eq!((entries.len(), failed), (1, MAX_FAILURES_IN_A_ROW));
    }
}
