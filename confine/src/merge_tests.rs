//! Merges of upper layers made by hand the way overlayfs makes them (whiteouts
//! are character devices 0/0, opaque dirs carry `user.overlay.opaque`).

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use super::*;
use crate::Protected;

fn whiteout(path: &Path) {
    let (dir, name) = (path.parent().unwrap(), path.file_name().unwrap());
    let dir = rfs::open(dir, OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).unwrap();
    rfs::mknodat(&dir, name, FileType::CharacterDevice, Mode::empty(), 0).unwrap();
}

fn opaque(dir: &Path) {
    rfs::lsetxattr(dir, OPAQUE, b"y", rfs::XattrFlags::empty()).unwrap();
}

fn layers() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (work, upper) = (root.join("work"), root.join("upper"));
    fs::create_dir(&work).unwrap();
    fs::create_dir(&upper).unwrap();
    (dir, work, upper)
}

fn protected(work: &Path) -> Protected {
    let mut protected = Protected::new(work).with_globs(&["*.pem".into()]).unwrap();
    protected.add(&work.join("toolhost.toml"));
    protected
}

fn left(upper: &Path) -> Vec<String> {
    let mut out: Vec<String> = fs::read_dir(upper)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

#[test]
fn files_links_dirs_whiteouts_and_opaque_dirs_are_merged() {
    let (_dir, work, upper) = layers();
    fs::write(work.join("a"), "old").unwrap();
    fs::create_dir_all(work.join("d")).unwrap();
    fs::write(work.join("d/keep"), "k").unwrap();
    fs::write(work.join("d/gone"), "12345").unwrap();
    fs::create_dir_all(work.join("o/inner")).unwrap();
    fs::write(work.join("o/old"), "o").unwrap();
    fs::create_dir_all(work.join("tree/deep")).unwrap();
    fs::write(work.join("tree/deep/f"), "1234567890").unwrap();

    fs::write(upper.join("a"), "new!").unwrap();
    rfs::lsetxattr(upper.join("a").as_path(), c"user.overlay.origin", b"", rfs::XattrFlags::empty()).unwrap();
    fs::write(upper.join("n"), "n").unwrap();
    fs::set_permissions(upper.join("n"), fs::Permissions::from_mode(0o4755)).unwrap();
    fs::create_dir_all(upper.join("newdir/g")).unwrap();
    fs::write(upper.join("newdir/g/h"), "hh").unwrap();
    fs::create_dir(upper.join("d")).unwrap();
    fs::set_permissions(upper.join("d"), fs::Permissions::from_mode(0o700)).unwrap();
    whiteout(&upper.join("d/gone"));
    fs::create_dir(upper.join("o")).unwrap();
    opaque(&upper.join("o"));
    fs::write(upper.join("o/fresh"), "f").unwrap();
    whiteout(&upper.join("tree"));
    std::os::unix::fs::symlink("/etc/passwd", upper.join("link")).unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(upper.join("sock")).unwrap();

    let merged = merge(&upper, &work, &protected(&work), false).unwrap();
    assert!(merged.refused.is_empty(), "{:?}", merged.refused);
    assert_eq!(fs::read_to_string(work.join("a")).unwrap(), "new!");
    assert!(
        rfs::llistxattr(work.join("a").as_path(), &mut [0u8; 64][..]).unwrap() == 0,
        "overlay attrs kept"
    );
    assert_eq!(fs::metadata(work.join("n")).unwrap().mode() & 0o7777, 0o755, "set-uid kept");
    assert_eq!(fs::read_to_string(work.join("newdir/g/h")).unwrap(), "hh");
    assert_eq!(fs::read_to_string(work.join("d/keep")).unwrap(), "k");
    assert!(!work.join("d/gone").exists());
    assert_eq!(fs::metadata(work.join("d")).unwrap().mode() & 0o777, 0o700);
    assert_eq!(left(&work.join("o")), ["fresh"]);
    assert!(!work.join("tree").exists());
    assert_eq!(fs::read_link(work.join("link")).unwrap(), Path::new("/etc/passwd"));
    assert!(!work.join("sock").exists());
    assert_eq!(merged.dropped, 1);
    // a: 4 for 3; n, h, fresh: 4; gone, tree/deep/f, o/old: 16 removed.
    assert_eq!((merged.added, merged.removed), (4 + 1 + 2 + 1, 3 + 5 + 10 + 1));
    assert_eq!(merged.growth(), 0);
    assert!(left(&upper).is_empty(), "{:?}", left(&upper));
}

#[test]
fn protected_paths_never_reach_the_work_dir() {
    let (_dir, work, upper) = layers();
    fs::create_dir_all(work.join("sub/.git/hooks")).unwrap();
    fs::create_dir_all(work.join("repo/.git")).unwrap();
    fs::write(work.join("repo/README"), "r").unwrap();
    fs::write(work.join("a.pem"), "secret").unwrap();

    fs::create_dir_all(upper.join(".git/hooks")).unwrap();
    fs::write(upper.join(".git/config"), "[core]\n\tfsmonitor = ./evil\n").unwrap();
    fs::create_dir_all(upper.join("x/y/.GIT")).unwrap();
    fs::write(upper.join("x/y/ok"), "ok").unwrap();
    fs::create_dir_all(upper.join("sub/.git/hooks")).unwrap();
    fs::write(upper.join("sub/.git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
    fs::write(upper.join("sub/.git/objects"), "").unwrap();
    fs::write(upper.join("toolhost.toml"), "mode = \"yolo\"\n").unwrap();
    fs::write(upper.join("a.pem"), "other").unwrap();
    whiteout(&upper.join("repo"));
    fs::write(upper.join("fine"), "fine").unwrap();

    let merged = merge(&upper, &work, &protected(&work), false).unwrap();
    let text = merged.refused.join("; ");
    for named in [
        ".git was created (not kept)",
        "x/y/.GIT was created (not kept)",
        "sub/.git/hooks/pre-commit was created (not kept)",
        "sub/.git/objects was created (not kept)",
        "toolhost.toml was created (not kept)",
        "a.pem was changed (not kept)",
        "repo was removed (kept: repo/.git is protected)",
    ] {
        assert!(text.contains(named), "{named}: {text}");
    }
    assert!(
        !work.join(".git").exists()
            && !work.join("x/y/.GIT").exists()
            && !work.join("toolhost.toml").exists()
    );
    assert!(!work.join("sub/.git/hooks/pre-commit").exists() && !work.join("sub/.git/objects").exists());
    assert_eq!(fs::read_to_string(work.join("a.pem")).unwrap(), "secret");
    assert!(work.join("repo/.git").is_dir() && work.join("repo/README").exists());
    assert_eq!(fs::read_to_string(work.join("x/y/ok")).unwrap(), "ok");
    assert_eq!(fs::read_to_string(work.join("fine")).unwrap(), "fine");
    assert!(left(&upper).is_empty(), "{:?}", left(&upper));

    // With a commit grant repository data is merged; hooks still are not.
    let upper2 = upper.parent().unwrap().join("upper2");
    fs::create_dir_all(upper2.join("sub/.git/objects/ab")).unwrap();
    fs::write(upper2.join("sub/.git/objects/ab/cdef"), "blob").unwrap();
    fs::write(upper2.join("sub/.git/config"), "[core]\n\thooksPath = .\n").unwrap();
    let merged = merge(&upper2, &work, &protected(&work), true).unwrap();
    assert_eq!(merged.refused, ["sub/.git/config was created (not kept)"]);
    assert_eq!(fs::read_to_string(work.join("sub/.git/objects/ab/cdef")).unwrap(), "blob");
    assert!(!work.join("sub/.git/config").exists());
}

#[test]
fn a_merge_that_fails_midway_leaves_the_rest_in_the_upper_layer() {
    let (_dir, work, upper) = layers();
    fs::create_dir(work.join("frozen")).unwrap();
    for name in ["a", "frozen/b", "frozen/c", "z"] {
        fs::create_dir_all(upper.join(name).parent().unwrap()).unwrap();
        fs::write(upper.join(name), name).unwrap();
    }
    let chattr = |flag: &str| {
        let status =
            std::process::Command::new("chattr").arg(flag).arg(work.join("frozen")).status().unwrap();
        assert!(status.success(), "chattr {flag}");
    };
    chattr("+i");
    let result = merge(&upper, &work, &protected(&work), false);
    chattr("-i");
    let (merged, error) = result.unwrap_err();
    assert_eq!(error.at, Path::new("frozen/b"), "{error}");
    assert_eq!(merged.changed, 1);
    assert_eq!(fs::read_to_string(work.join("a")).unwrap(), "a");
    // What was not merged is still there to merge.
    assert!(upper.join("frozen/b").exists() && upper.join("frozen/c").exists() && upper.join("z").exists());
    assert!(!work.join("z").exists());
}

#[test]
fn layers_on_two_filesystems_are_merged_by_copying() {
    let (_dir, work, _) = layers();
    let shm = tempfile::tempdir_in("/dev/shm").unwrap();
    let upper = shm.path().join("upper");
    fs::create_dir_all(upper.join("new/deep")).unwrap();
    fs::write(upper.join("new/deep/f"), "f").unwrap();
    fs::write(upper.join("file"), "file").unwrap();
    std::os::unix::fs::symlink("new", upper.join("link")).unwrap();
    fs::write(work.join("file"), "old").unwrap();
    let merged = merge(&upper, &work, &protected(&work), false).unwrap();
    assert_eq!(merged.changed, 3);
    assert_eq!(fs::read_to_string(work.join("new/deep/f")).unwrap(), "f");
    assert_eq!(fs::read_to_string(work.join("file")).unwrap(), "file");
    assert_eq!(fs::read_link(work.join("link")).unwrap(), Path::new("new"));
    assert!(left(&upper).is_empty() && left(&work).iter().all(|n| !n.starts_with(".toolhost-merge")));
}
