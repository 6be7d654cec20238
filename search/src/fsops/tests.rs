//! The confinement of each operation, against entries planted to escape it.

use std::os::fd::AsFd;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use super::*;

/// A work dir holding `a/b/f`, and a directory outside it with a secret.
fn tree() -> (tempfile::TempDir, tempfile::TempDir, cap_std::fs::Dir) {
    let (root, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::create_dir_all(root.path().join("a/b")).unwrap();
    std::fs::write(root.path().join("a/b/f"), "inside").unwrap();
    std::fs::write(outside.path().join("secret"), "TOPSECRET").unwrap();
    let dir = cap_std::fs::Dir::open_ambient_dir(root.path(), cap_std::ambient_authority()).unwrap();
    (root, outside, dir)
}

pub(crate) fn mkfifo(path: &Path) {
    assert!(std::process::Command::new("mkfifo").arg(path).status().unwrap().success());
}

#[test]
fn no_symlink_is_followed_in_any_component_nor_dot_dot() {
    let (root, outside, dir) = tree();
    symlink(root.path().join("a"), root.path().join("in")).unwrap();
    symlink(outside.path(), root.path().join("out")).unwrap();
    symlink(outside.path(), root.path().join("a/out")).unwrap();
    for open in [open_dir, |r: BorrowedFd<'_>, p: &Path| Ok(open_by_components(r, p)?)] {
        assert!(open(dir.as_fd(), Path::new("a/b")).is_ok());
        assert!(open(dir.as_fd(), Path::new("")).is_ok());
        for planted in ["in", "in/b", "out", "a/out", "../", "a/../../x"] {
            assert!(open(dir.as_fd(), Path::new(planted)).is_err(), "{planted} was opened");
        }
    }
}

#[test]
fn a_file_is_opened_only_when_regular_and_not_a_symlink() {
    let (root, outside, dir) = tree();
    symlink(outside.path().join("secret"), root.path().join("leak")).unwrap();
    symlink("a/b/f", root.path().join("alias")).unwrap();
    let a_b = open_dir(dir.as_fd(), Path::new("a/b")).unwrap();
    let (fd, size) = open_file(a_b.as_fd(), OsStr::new("f")).unwrap();
    assert_eq!(size, 6);
    let mut buf = Vec::new();
    read_up_to(fd.as_fd(), &mut buf, 6).unwrap();
    assert_eq!(buf, b"inside");
    assert_eq!(open_file(dir.as_fd(), OsStr::new("leak")).unwrap_err(), OpenError::Io(Errno::LOOP));
    assert_eq!(open_file(dir.as_fd(), OsStr::new("alias")).unwrap_err(), OpenError::Io(Errno::LOOP));
    assert_eq!(open_file(dir.as_fd(), OsStr::new("a")).unwrap_err(), OpenError::NotRegular);
    assert!(read_small(dir.as_fd(), OsStr::new("leak"), 100).is_none());
}

#[test]
fn a_fifo_is_refused_without_blocking() {
    let (root, _outside, dir) = tree();
    mkfifo(&root.path().join("pipe"));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(open_file(dir.as_fd(), OsStr::new("pipe")).map(|_| ()));
    });
    // An open without O_NONBLOCK waits for a writer that never comes.
    let got = rx.recv_timeout(Duration::from_secs(5)).expect("the open of a FIFO blocked");
    assert_eq!(got, Err(OpenError::NotRegular));
}

#[test]
fn listing_reports_kinds_without_following() {
    let (root, outside, dir) = tree();
    symlink(outside.path(), root.path().join("out")).unwrap();
    mkfifo(&root.path().join("pipe"));
    std::fs::write(root.path().join("plain"), "").unwrap();
    let listed = open_dir(dir.as_fd(), Path::new("")).unwrap();
    let (mut entries, failed) = list(listed.as_fd());
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let names: Vec<(&str, Kind)> = entries.iter().map(|(n, k)| (n.to_str().unwrap(), *k)).collect();
    assert_eq!(
        names,
        [("a", Kind::Dir), ("out", Kind::Symlink), ("pipe", Kind::Other), ("plain", Kind::File)]
    );
    assert_eq!(failed, 0);
    assert_eq!(mtime(dir.as_fd(), OsStr::new("gone")), None);
    assert!(mtime(dir.as_fd(), OsStr::new("out")).is_some());
}
