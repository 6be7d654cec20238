//! The effect journal end to end: `toolhost serve` killed with SIGKILL in the
//! middle of 200 concurrent `write_file`, `edit_file` and `terminal` calls.
//! Afterwards every target file is whole (its old content or its new, never torn
//! or empty), the journal's indeterminate effects are exactly calls that were in
//! flight, and the next start warns about them and serves normally.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_tests::{toolhost_bin, workspace_root};

const WRITES: u64 = 80;
const EDITS: u64 = 80;
const TERMINALS: u64 = 40;
const FILE_BYTES: usize = 64 << 10;

fn serve(work: &Path, data: &Path) -> Command {
    let mut cmd = Command::new(toolhost_bin());
    cmd.args(["serve", "--mode", "yolo", "--work-dir"])
        .arg(work)
        .env("TOOLHOST_DATA_DIR", data)
        .env("TOOLHOST_CONFIG_DIR", toolhost_tests::test_config_dir())
        .env("TOOLHOST_CACHE_DIR", workspace_root().join("target").join("test-compile-cache"))
        .env_remove("TOOLHOST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    cmd
}

fn handshake() -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "crash-test", "version": "0"}}});
    format!("{init}\n{}\n", json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
}

fn old_content(i: u64) -> String {
    let line = format!("old line of file {i}\n");
    format!("MARK-{i}\n{}", line.repeat(FILE_BYTES / line.len()))
}

/// Request `n`'s call, and what its target file may hold after it (old, new).
fn request(n: u64) -> (Value, Option<(String, String, String)>) {
    let (name, args, file) = if n <= WRITES {
        let i = n;
        let new = format!("tok-{n}: {}", format!("new content of file {i}\n").repeat(2000));
        (
            "write_file",
            json!({"path": format!("w{i}"), "content": new.clone()}),
            Some((format!("w{i}"), old_content(i), new)),
        )
    } else if n <= WRITES + EDITS {
        let i = n - WRITES;
        let replaced = format!("tok-{n}: edited");
        let new = old_content(i).replacen(&format!("MARK-{i}"), &replaced, 1);
        (
            "edit_file",
            json!({"path": format!("e{i}"), "old_string": format!("MARK-{i}\n"), "new_string": format!("{replaced}\n")}),
            Some((format!("e{i}"), old_content(i), new)),
        )
    } else {
        ("terminal", json!({"command": format!("sleep 3; echo tok-{n}:")}), None)
    };
    let message = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": args}});
    (message, file)
}

fn journal(work: &Path, data: &Path) -> (Vec<Value>, String) {
    let out = Command::new(toolhost_bin())
        .args(["journal", "--json", "--work-dir"])
        .arg(work)
        .env("TOOLHOST_DATA_DIR", data)
        .output()
        .unwrap();
    assert!(out.status.success(), "toolhost journal: {}", String::from_utf8_lossy(&out.stderr));
    let records: Vec<Value> = serde_json::from_slice(&out.stdout).expect("journal --json is one array");
    (records, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The request number a journal record belongs to: its preview's `tok-N:`.
fn token(record: &Value) -> u64 {
    let preview = record["preview"].as_str().unwrap();
    let at = preview.find("tok-").unwrap_or_else(|| panic!("no token in {preview}")) + 4;
    let end = at + preview[at..].find(':').unwrap();
    preview[at..end].parse().unwrap()
}

#[test]
fn a_host_killed_mid_calls_leaves_whole_files_and_names_the_calls_in_flight() {
    let work = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let total = WRITES + EDITS + TERMINALS;
    let mut files = Vec::new();
    for n in 1..=total {
        if let (_, Some((path, old, new))) = request(n) {
            std::fs::write(work.path().join(&path), &old).unwrap();
            files.push((path, old, new));
        }
    }

    let mut child = serve(work.path(), data.path()).stderr(Stdio::null()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let answered = Arc::new(Mutex::new(BTreeSet::new()));
    let reader = {
        let answered = answered.clone();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                let message: Value = serde_json::from_str(&line).unwrap();
                if let Some(id) = message["id"].as_u64().filter(|id| *id > 0) {
                    answered.lock().unwrap().insert(id);
                }
            }
        })
    };
    stdin.write_all(handshake().as_bytes()).unwrap();
    // Terminals first (they stay in flight for seconds), then the file calls.
    let mut order: Vec<u64> = (WRITES + EDITS + 1..=total).collect();
    order.extend(1..=WRITES + EDITS);
    for n in order {
        writeln!(stdin, "{}", request(n).0).unwrap();
    }
    stdin.flush().unwrap();
    // Kill once a few calls have answered: many are still running then.
    let started = Instant::now();
    while answered.lock().unwrap().len() < 20 && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // What the host wrote before it died is still read to the end.
    reader.join().unwrap();
    let answered = answered.lock().unwrap().clone();
    assert!(answered.len() >= 20, "only {} calls answered within a minute", answered.len());

    // Every target file is whole: its old content or its new.
    for (path, old, new) in &files {
        let now = std::fs::read_to_string(work.path().join(path)).unwrap();
        assert!(now == *old || now == *new, "{path} is torn: {} bytes", now.len());
    }
    let leftovers: Vec<_> = std::fs::read_dir(work.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !(name.starts_with('w') || name.starts_with('e')) || name.contains("tmp"))
        .collect();
    // A write killed mid-way may leave its temp file; it is never the target.
    assert!(leftovers.iter().all(|n| n.contains("tmp")), "{leftovers:?}");

    // The journal: every answered call settled; every indeterminate one unanswered.
    let (records, stderr) = journal(work.path(), data.path());
    assert!(!stderr.contains("cut short"), "{stderr}");
    let mut by_token: BTreeMap<u64, bool> = BTreeMap::new();
    for record in &records {
        assert!(by_token.insert(token(record), record["settle"].is_null()).is_none(), "one record a call");
        assert_eq!(record["host_alive"], false, "{record}");
    }
    let indeterminate: BTreeSet<u64> = by_token.iter().filter(|(_, open)| **open).map(|(n, _)| *n).collect();
    for n in &answered {
        assert_eq!(by_token.get(n), Some(&false), "call {n} answered but not settled in the journal");
    }
    assert!(indeterminate.is_disjoint(&answered));
    assert!(!indeterminate.is_empty(), "the kill came after every call had ended");
    // A call may settle in the instant between its record and its answer: rare.
    let settled_unanswered = by_token.iter().filter(|(n, open)| !**open && !answered.contains(n)).count();
    assert!(settled_unanswered <= 3, "{settled_unanswered} calls settled without an answer");

    // The next start warns and serves normally.
    let log = data.path().join("stderr.log");
    let mut child =
        serve(work.path(), data.path()).stderr(std::fs::File::create(&log).unwrap()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(handshake().as_bytes()).unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "write_file", "arguments": {"path": "after", "content": "fine"}}});
    writeln!(stdin, "{call}").unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let response = loop {
        let message: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        if message["id"] == 1 {
            break message;
        }
    };
    assert_eq!(response["result"]["isError"], false, "{response}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert_eq!(std::fs::read_to_string(work.path().join("after")).unwrap(), "fine");
    let warning = std::fs::read_to_string(&log).unwrap();
    assert!(
        warning
            .contains(&format!("{} call(s) of an earlier run began and never settled", indeterminate.len())),
        "{warning}"
    );
    // The text listing marks them too.
    let out = Command::new(toolhost_bin())
        .args(["journal", "--indeterminate", "--work-dir"])
        .arg(work.path())
        .env("TOOLHOST_DATA_DIR", data.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), indeterminate.len(), "{text}");
    assert!(text.lines().all(|l| l.contains("INDETERMINATE")), "{text}");
}
