use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use serde_json::json;

use super::*;

fn begin(j: &Journal, call: &str) -> Ticket {
    let args = json!({"path": format!("{call}.txt"), "content": "x"});
    j.begin(call, "write_file", &args.to_string(), &args, &args.to_string()).unwrap()
}

#[test]
fn a_call_that_never_settles_is_indeterminate_for_the_next_run() {
    let data = tempfile::tempdir().unwrap();
    let work = Path::new("/some/work");
    let first = Journal::open(data.path(), Some(work)).unwrap();
    let done = begin(&first, "done");
    first.settle(done, None, Some(5)).unwrap();
    let failed = begin(&first, "failed");
    first.settle(failed, Some("io_error"), None).unwrap();
    let _lost = begin(&first, "lost");
    drop(first);

    let second = Journal::open(data.path(), Some(work)).unwrap();
    let open: Vec<&str> = second.previous().indeterminate().map(|e| e.begin.call_id.as_str()).collect();
    assert_eq!(open, vec!["lost"]);
    let all = &second.previous().effects;
    assert_eq!(all.len(), 3);
    assert_eq!(all[0].settle.as_ref().unwrap().bytes_written, Some(5));
    assert_eq!(all[1].settle.as_ref().unwrap().code.as_deref(), Some("io_error"));
    assert_eq!(all[2].begin.paths, vec!["lost.txt"]);
    assert_eq!(all[2].begin.args_sha256.len(), 64);

    // Private: the dir 0700, the file 0600; another work dir has its own journal.
    let dir = dir_for(data.path(), Some(work));
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(std::fs::metadata(dir.join(FILE)).unwrap().permissions().mode() & 0o777, 0o600);
    assert_ne!(dir, dir_for(data.path(), Some(Path::new("/other"))));
    assert!(read(data.path(), Some(Path::new("/other"))).unwrap().effects.is_empty());
}

#[test]
fn concurrent_calls_never_interleave_their_records() {
    let data = tempfile::tempdir().unwrap();
    let journal = Arc::new(Journal::open(data.path(), None).unwrap());
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let journal = journal.clone();
            std::thread::spawn(move || {
                for i in 0..100 {
                    // Long previews make a torn or interleaved line likely if writes were split.
                    let args = json!({"path": format!("t{t}/{i}"), "content": "y".repeat(3000)});
                    let text = args.to_string();
                    let ticket =
                        journal.begin(&format!("{t}-{i}"), "write_file", &text, &args, &text).unwrap();
                    if i % 10 != 0 {
                        journal.settle(ticket, None, Some(3000)).unwrap();
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let log = read(data.path(), None).unwrap();
    assert_eq!(log.torn_lines, 0);
    assert_eq!(log.effects.len(), 800);
    // The unsettled tenth of each thread, named by call id.
    let mut open: Vec<String> = log.indeterminate().map(|e| e.begin.call_id.clone()).collect();
    open.sort();
    let mut want: Vec<String> =
        (0..8).flat_map(|t| (0..100).step_by(10).map(move |i| format!("{t}-{i}"))).collect();
    want.sort();
    assert_eq!(open, want);
}

#[test]
fn rotation_bounds_the_files_and_forgets_only_settled_calls() {
    let data = tempfile::tempdir().unwrap();
    // An earlier run left one indeterminate effect.
    let first = Journal::open(data.path(), None).unwrap();
    let _ = begin(&first, "old-lost");
    drop(first);

    let bound = 4096;
    let journal = Journal::open_bounded(data.path(), None, bound).unwrap();
    let _in_flight = begin(&journal, "in-flight");
    for i in 0..500 {
        let t = begin(&journal, &format!("c{i}"));
        journal.settle(t, None, Some(1)).unwrap();
    }
    let dir = dir_for(data.path(), None);
    for name in [FILE, OLDER] {
        let len = std::fs::metadata(dir.join(name)).unwrap().len();
        assert!(len <= bound + 1024, "{name}: {len} bytes");
    }
    let log = read(data.path(), None).unwrap();
    let open: Vec<&str> = log.indeterminate().map(|e| e.begin.call_id.as_str()).collect();
    assert_eq!(open, vec!["old-lost", "in-flight"]);
    // Most settled calls are gone; the last ones are kept.
    assert!(log.effects.len() < 100, "{} effects kept", log.effects.len());
    assert!(log.effects.iter().any(|e| e.begin.call_id == "c499" && e.settle.is_some()));
}

#[test]
fn a_symlink_planted_at_the_journal_is_not_followed() {
    let data = tempfile::tempdir().unwrap();
    let victim = data.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let dir = dir_for(data.path(), None);
    confine::hostfs::create_private_dir(&dir).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join(FILE)).unwrap();
    assert!(Journal::open(data.path(), None).is_err());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}
