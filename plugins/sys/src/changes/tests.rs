use super::*;
use crate::status::parse;

const OID: &str = "78981922613b2afb6025042ff6bd878ac1994e85";
const NEW: &str = "1111111111111111111111111111111111111111";

fn modified(path: &str, index: &str) -> String {
    format!("1 .M N... 100644 100644 100644 {OID} {index} {path}\0")
}

fn status(head: &str, records: &[String]) -> Status {
    parse(format!("# branch.oid {head}\0{}", records.concat()).as_bytes()).unwrap()
}

fn paths(changes: &[Change]) -> Vec<(String, String)> {
    changes.iter().map(|c| (String::from_utf8_lossy(&c.path).into_owned(), c.code.clone())).collect()
}

#[test]
fn entries_that_appear_change_or_vanish_are_changes() {
    let before = status(OID, &[modified("dirty.rs", OID), modified("staged.rs", OID), "? old.txt\0".into()]);
    let after = status(
        OID,
        &[
            modified("dirty.rs", OID),
            modified("staged.rs", NEW),
            modified("clean-before.rs", OID),
            "? new.txt\0".into(),
        ],
    );
    // dirty.rs looks the same and its content did not change: not reported.
    let changes = compare(&before, &after, |_| Some(false));
    assert_eq!(
        paths(&changes),
        [
            ("clean-before.rs".into(), " M".into()),
            ("new.txt".into(), "??".into()),
            ("old.txt".into(), "clean".into()),
            ("staged.rs".into(), " M".into()),
        ]
    );
    // Its content changed again: reported; unknown content is not.
    let asked = std::cell::RefCell::new(Vec::new());
    let changes = compare(&before, &after, |p| {
        asked.borrow_mut().push(p.to_vec());
        Some(p == b"dirty.rs")
    });
    assert!(paths(&changes).contains(&("dirty.rs".into(), " M".into())));
    assert_eq!(asked.into_inner(), [b"dirty.rs".to_vec()], "only same-looking entries are fingerprinted");
    assert!(!paths(&compare(&before, &after, |_| None)).iter().any(|(p, _)| p == "dirty.rs"));
    assert!(compare(&before, &before, |_| Some(false)).is_empty());
}

#[test]
fn a_deleted_file_is_never_fingerprinted() {
    let gone = format!("1 .D N... 100644 100644 000000 {OID} {OID} gone.rs\0");
    let s = status(OID, &[gone]);
    assert!(compare(&s, &s, |_| panic!("asked about a deleted file")).is_empty());
}

#[test]
fn the_report_lists_counts_and_bounds() {
    assert_eq!(Report::new(&[], None, &BTreeMap::new()), None);
    let changes = vec![
        Change { path: b"src/a.rs".to_vec(), code: " M".into() },
        Change { path: b"notes\n[exit 0]".to_vec(), code: "??".into() },
    ];
    let mut stats = BTreeMap::new();
    stats.insert(b"src/a.rs".to_vec(), Some((3, 1)));
    stats.insert(b"notes\n[exit 0]".to_vec(), Some((2, 0)));
    let report = Report::new(&changes, None, &stats).unwrap();
    assert_eq!(
        report.text,
        "\n[the command changed 2 files (+5 -1 lines)]\n M src/a.rs (+3 -1)\n?? \"notes\\n[exit 0]\" (+2 -0)\n"
    );
    assert_eq!(
        report.metadata["files"][0],
        json!({"path": "src/a.rs", "status": " M", "insertions": 3, "deletions": 1})
    );
    assert_eq!(report.metadata["files"][1]["path"], "notes\n[exit 0]");
    assert_eq!(
        (report.metadata["count"].clone(), report.metadata["truncated"].clone()),
        (json!(2), json!(false))
    );

    let many: Vec<Change> = (0..10_000)
        .map(|i| Change { path: format!("gen/f{i:05}").into_bytes(), code: "??".into() })
        .collect();
    let report = Report::new(&many, Some(("abc".into(), "def".into())), &BTreeMap::new()).unwrap();
    assert_eq!(report.metadata["files"].as_array().unwrap().len(), MAX_LISTED);
    assert_eq!(
        (report.metadata["count"].clone(), report.metadata["truncated"].clone()),
        (json!(10_000), json!(true))
    );
    assert_eq!(report.metadata["head"], json!({"before": "abc", "after": "def"}));
    assert!(
        report.text.contains("... and 9950 more\n") && report.text.contains("HEAD abc -> def"),
        "{}",
        report.text
    );
    assert!(report.text.len() < 2_000, "{} bytes", report.text.len());
}

#[test]
fn attaching_keeps_the_metadata_and_adds_changed() {
    let changes = [Change { path: b"a".to_vec(), code: "??".into() }];
    let report = Report::new(&changes, None, &BTreeMap::new()).unwrap();
    let out = report.attach(Output::text("hi\n[exit 0]").with_metadata(json!({"exit_code": 0})));
    assert!(out.content.starts_with("hi\n[exit 0]\n[the command changed 1 file"), "{}", out.content);
    let meta = out.metadata.unwrap();
    assert_eq!((meta["exit_code"].clone(), meta["changed"]["count"].clone()), (json!(0), json!(1)));
}

#[test]
fn fingerprints_follow_content_not_stat() {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path();
    std::fs::write(top.join("a"), "one").unwrap();
    let mut budget = Budget::default();
    let first = fingerprint(top, b"a", &mut budget).unwrap();
    std::fs::write(top.join("a"), "one").unwrap();
    assert_eq!(fingerprint(top, b"a", &mut budget).unwrap(), first, "rewritten with the same bytes");
    std::fs::write(top.join("a"), "two").unwrap();
    assert_ne!(fingerprint(top, b"a", &mut budget).unwrap(), first);
    let missing = fingerprint(top, b"nothing", &mut budget).unwrap();
    std::fs::write(top.join("nothing"), "").unwrap();
    assert_ne!(fingerprint(top, b"nothing", &mut budget).unwrap(), missing);
    std::os::unix::fs::symlink("a", top.join("link")).unwrap();
    assert_ne!(fingerprint(top, b"link", &mut budget).unwrap(), fingerprint(top, b"a", &mut budget).unwrap());
    for bad in [&b"../a"[..], b"/etc/passwd", b"x/../../a", b"\xff"] {
        assert_eq!(fingerprint(top, bad, &mut budget), None);
    }
    // Past the budget: length and modification time, no read.
    let mut spent = Budget { files: MAX_HASHED_FILES, bytes: 0 };
    let stamped = fingerprint(top, b"a", &mut spent).unwrap();
    assert_ne!(stamped, fingerprint(top, b"a", &mut Budget::default()).unwrap());
    assert_eq!(spent.files, MAX_HASHED_FILES);
}

#[test]
fn lines_of_small_text_files_only() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [("two", &b"a\nb\n"[..]), ("open", b"a\nb"), ("empty", b""), ("bin", b"a\0b\n")] {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    let lines = |n: &str| count_lines(&dir.path().join(n));
    assert_eq!(
        (lines("two"), lines("open"), lines("empty"), lines("bin")),
        (Some(2), Some(2), Some(0), None)
    );
    assert_eq!(lines("missing"), None);
}

#[test]
fn without_a_host_nothing_is_snapshotted() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = Context::new("t", Some(dir.path().to_path_buf()));
    assert!(Snapshot::take(&ctx).is_none(), "no .git");
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    assert!(Snapshot::take(&ctx).is_none(), "no exec in a native build");
    assert!(Snapshot::take(&Context::new("t", None)).is_none());
}
