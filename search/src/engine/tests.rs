//! The searches against hostile trees: symlinks planted in and out of the
//! tree, `..`, FIFOs, symlinks swapped in during the walk, huge, binary and
//! long-lined files, names that are not UTF-8, the deadline, and the order and
//! bounds of what is shown.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::*;
use crate::fsops::tests::mkfifo;

fn setup(files: &[(&str, &[u8])]) -> (tempfile::TempDir, tempfile::TempDir) {
    let (work, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (name, content) in files {
        let p = work.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    std::fs::create_dir(outside.path().join("d")).unwrap();
    std::fs::write(outside.path().join("d/secret.txt"), "TOPSECRET\n").unwrap();
    std::fs::write(outside.path().join("secret.txt"), "TOPSECRET\n").unwrap();
    (work, outside)
}

fn grep_req(work: &Path, pattern: &str) -> GrepRequest {
    GrepRequest {
        path: work.to_string_lossy().into_owned(),
        pattern: pattern.into(),
        literal: false,
        case_insensitive: false,
        glob: None,
        include_ignored: false,
        max_results: 100,
        before: 0,
        after: 0,
    }
}

fn run_grep(work: &Path, req: &GrepRequest) -> GrepResult {
    grep(work, req, &Stop::default()).unwrap()
}

fn shown(result: &GrepResult) -> Vec<String> {
    let mut out = Vec::new();
    for file in &result.files {
        for line in &file.lines {
            out.push(match line.kind {
                LineKind::Break => "--".to_string(),
                LineKind::Match => format!("{}:{}:{}", file.path, line.number, line.text),
                LineKind::Context => format!("{}-{}-{}", file.path, line.number, line.text),
            });
        }
    }
    out
}

fn find_req(work: &Path, pattern: &str) -> FindRequest {
    FindRequest {
        path: work.to_string_lossy().into_owned(),
        pattern: pattern.into(),
        kind: None,
        modified_since: None,
        max_depth: 1000,
        include_ignored: false,
        max_results: 200,
    }
}

#[test]
fn symlinks_planted_in_and_out_of_the_tree_are_not_followed() {
    let (work, outside) = setup(&[("src/a.rs", b"needle\n")]);
    let w = work.path();
    symlink(outside.path().join("d"), w.join("out_dir")).unwrap();
    symlink(outside.path().join("secret.txt"), w.join("out_file.txt")).unwrap();
    symlink(w.join("src"), w.join("src/loop")).unwrap();
    symlink("a.rs", w.join("src/alias.rs")).unwrap();
    let result = run_grep(w, &grep_req(w, "TOPSECRET|needle"));
    assert_eq!(shown(&result), ["src/a.rs:1:needle"]);
    assert_eq!((result.files_searched, result.unreadable), (1, 0));
    let found =
        find(w, &FindRequest { kind: Some(EntryKind::Symlink), ..find_req(w, "*") }, &Stop::default());
    assert_eq!(found.unwrap().paths, ["out_dir", "out_file.txt", "src/alias.rs", "src/loop"]);
    let dirs = find(w, &FindRequest { kind: Some(EntryKind::Dir), ..find_req(w, "*") }, &Stop::default());
    assert_eq!(dirs.unwrap().paths, ["src"], "no symlinked directory is entered");
}

#[test]
fn patterns_past_the_bound_are_refused_before_compiling_and_not_echoed() {
    let (work, _outside) = setup(&[("a", b"x\n")]);
    let w = work.path();
    let long = "x".repeat(crate::MAX_PATTERN + 1);
    for literal in [false, true] {
        let req = GrepRequest { literal, ..grep_req(w, &long) };
        let err = grep(w, &req, &Stop::default());
        assert!(
            matches!(&err, Err(SearchError::InvalidArgs(m)) if m.contains("65537 bytes") && m.len() < 200),
            "{err:?}"
        );
    }
    let req = GrepRequest { glob: Some(long.clone()), ..grep_req(w, "x") };
    assert!(
        matches!(grep(w, &req, &Stop::default()), Err(SearchError::InvalidArgs(m)) if m.contains("glob"))
    );
    assert!(
        matches!(find(w, &find_req(w, &long), &Stop::default()), Err(SearchError::InvalidArgs(m)) if m.len() < 200)
    );
    // At the bound it is compiled and searched.
    let at = run_grep(w, &grep_req(w, &"x".repeat(crate::MAX_PATTERN)));
    assert_eq!(at.files_searched, 1);
}

#[test]
fn a_root_outside_the_work_dir_is_refused() {
    let (work, outside) = setup(&[("a", b"x\n")]);
    let w = work.path();
    for path in [format!("{}/../x", w.display()), outside.path().display().to_string(), "/".into()] {
        let err = grep(w, &GrepRequest { path: path.clone(), ..grep_req(w, "x") }, &Stop::default());
        assert!(
            matches!(&err, Err(SearchError::Denied(m)) if m.contains("outside the work directory")),
            "{path}: {err:?}"
        );
    }
    // A symlinked root is followed only inside the work dir (as WASI would).
    symlink(outside.path().join("d"), w.join("out")).unwrap();
    let req = GrepRequest { path: w.join("out").to_string_lossy().into_owned(), ..grep_req(w, "TOPSECRET") };
    assert!(grep(w, &req, &Stop::default()).is_err());
    let req = FindRequest { path: w.join("out").to_string_lossy().into_owned(), ..find_req(w, "*") };
    assert!(find(w, &req, &Stop::default()).is_err());
    symlink(outside.path().join("secret.txt"), w.join("leak")).unwrap();
    let req = GrepRequest { path: w.join("leak").to_string_lossy().into_owned(), ..grep_req(w, "TOPSECRET") };
    assert!(grep(w, &req, &Stop::default()).is_err());
}

#[test]
fn fifos_never_block_the_search() {
    let (work, _outside) = setup(&[("a.txt", b"needle\n")]);
    let w = work.path();
    mkfifo(&w.join("pipe.txt"));
    let result = run_grep(w, &grep_req(w, "needle"));
    assert_eq!(shown(&result), ["a.txt:1:needle"]);
    let req = GrepRequest { path: w.join("pipe.txt").to_string_lossy().into_owned(), ..grep_req(w, "x") };
    let err = grep(w, &req, &Stop::default()).unwrap_err();
    assert!(err.to_string().contains("neither a regular file nor a directory"), "{err}");
}

#[test]
fn huge_binary_and_long_lined_files() {
    let mut huge = b"needle\n".to_vec();
    huge.resize(MAX_FILE as usize + 1, b'a');
    let long = format!("{}needle{}\n", "x".repeat(5000), "y".repeat(5000));
    let (work, _outside) = setup(&[
        ("big", &huge),
        ("bin", b"needle\0"),
        ("long", long.as_bytes()),
        ("late_nul", &[b"needle\n".as_slice(), &[b'a'; 2000], b"\0"].concat()),
    ]);
    let w = work.path();
    let result = run_grep(w, &grep_req(w, "needle"));
    assert_eq!((result.large, result.binary, result.files_searched), (1, 1, 2));
    let lines = shown(&result);
    assert_eq!(lines[0], "late_nul:1:needle");
    assert!(
        lines[1].starts_with("long:1:…") && lines[1].ends_with('…') && lines[1].len() < 420,
        "{}",
        lines[1]
    );
}

#[test]
fn names_that_are_not_utf8_are_searched_and_shown_lossily() {
    let (work, _outside) = setup(&[]);
    let w = work.path();
    std::fs::write(w.join(OsStr::from_bytes(b"bad\xff.txt")), "needle\n").unwrap();
    std::fs::create_dir(w.join(OsStr::from_bytes(b"d\xfe"))).unwrap();
    std::fs::write(w.join(OsStr::from_bytes(b"d\xfe/in.txt")), "needle\n").unwrap();
    let result = run_grep(w, &grep_req(w, "needle"));
    assert_eq!(shown(&result), ["d\u{fffd}/in.txt:1:needle", "bad\u{fffd}.txt:1:needle"]);
}

#[test]
fn the_first_matches_in_walk_order_are_shown_whatever_thread_found_them() {
    let mut files = Vec::new();
    for d in 0..20 {
        for f in 0..20 {
            files.push((format!("d{d:02}/f{f:02}"), b"hit\nmiss\nhit\n".to_vec()));
        }
        files.push((format!("top{d:02}"), b"hit\n".to_vec()));
    }
    let refs: Vec<(&str, &[u8])> = files.iter().map(|(n, c)| (n.as_str(), c.as_slice())).collect();
    let (work, _outside) = setup(&refs);
    let w = work.path();
    let req = GrepRequest { max_results: 5, after: 1, ..grep_req(w, "hit") };
    for _ in 0..20 {
        let result = run_grep(w, &req);
        assert_eq!(result.matches, 20 * 20 * 2 + 20);
        let want = [
            "d00/f00:1:hit",
            "d00/f00-2-miss",
            "d00/f00:3:hit",
            "--",
            "d00/f01:1:hit",
            "d00/f01-2-miss",
            "d00/f01:3:hit",
            "--",
            "d00/f02:1:hit",
            "d00/f02-2-miss",
        ];
        assert_eq!(shown(&result), want);
        assert_eq!(result.context_lines, 3);
    }
}

#[test]
fn a_search_stops_at_its_deadline() {
    let (work, _outside) = setup(&[("a", b"x\n")]);
    let w = work.path();
    let past = Stop::new(Arc::default(), Some(Instant::now() - Duration::from_millis(1)));
    assert_eq!(grep(w, &grep_req(w, "x"), &past).unwrap_err(), SearchError::Stopped);
    assert_eq!(find(w, &find_req(w, "*"), &past).unwrap_err(), SearchError::Stopped);
    let flag = Arc::new(AtomicBool::new(true));
    assert_eq!(grep(w, &grep_req(w, "x"), &Stop::new(flag, None)).unwrap_err(), SearchError::Stopped);
}

/// A directory and a file swapped for symlinks out of the tree while searches
/// run: no search ever reads through them.
#[test]
fn symlinks_swapped_in_during_the_walk_are_never_followed() {
    let (work, outside) = setup(&[("d/secret.txt", b"inside\n"), ("secret.txt", b"inside\n")]);
    let w = work.path().to_path_buf();
    let done = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (w, out, done) = (w.clone(), outside.path().to_path_buf(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                std::fs::rename(w.join("d"), w.join("d.real")).unwrap();
                symlink(out.join("d"), w.join("d")).unwrap();
                std::fs::rename(w.join("secret.txt"), w.join("secret.real")).unwrap();
                symlink(out.join("secret.txt"), w.join("secret.txt")).unwrap();
                std::thread::yield_now();
                std::fs::remove_file(w.join("d")).unwrap();
                std::fs::rename(w.join("d.real"), w.join("d")).unwrap();
                std::fs::remove_file(w.join("secret.txt")).unwrap();
                std::fs::rename(w.join("secret.real"), w.join("secret.txt")).unwrap();
            }
        })
    };
    let mut inside = 0;
    for _ in 0..2000 {
        let result = run_grep(&w, &grep_req(&w, "TOPSECRET|inside"));
        assert!(!shown(&result).iter().any(|l| l.contains("TOPSECRET")), "{:?}", shown(&result));
        inside += result.matches;
    }
    done.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(inside > 0, "the real files were searched at times");
}

#[test]
fn a_stopped_walk_visits_nothing_more() {
    let (work, _outside) = setup(&[("a/b", b"x"), ("c", b"x")]);
    let root = Dir::open_ambient_dir(work.path(), cap_std::ambient_authority()).unwrap();
    let visits = |stop: &Stop| {
        let spec = walk_spec(&root, work.path(), usize::MAX, true, None, stop);
        let (counts, _) = walk(&spec, || 0usize, |n: &mut usize, _, _| *n += 1);
        counts.into_iter().sum::<usize>()
    };
    assert_eq!(visits(&Stop::default()), 3);
    assert_eq!(visits(&Stop::new(Arc::new(AtomicBool::new(true)), None)), 0);
}
