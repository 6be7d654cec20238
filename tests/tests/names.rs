//! Hostile file names through the builtin filesystem tools, end to end
//! (`Host::execute` over a temporary work dir): a name cannot forge entries
//! or match lines, cannot send escape sequences to a terminal, is quoted
//! unambiguously, and a name that is not UTF-8 never fails a walk
//! (issue 13, item 10). The quoting rule itself is unit-tested in the guest
//! SDK (`toolhost_guest::quote_name`).

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use serde_json::{Value, json};
use toolhost::{Host, Limits, ToolCall, ToolResult};
use toolhost_tests::test_engine_settings;

/// A host with only the builtins, over a fresh temporary work dir.
async fn builtin_host() -> (Host, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let host = Host::builder()
        .work_dir(dir.path())
        .limits(Limits::default())
        .engine_settings(test_engine_settings())
        .mode(toolhost::Mode::AcceptEdits)
        .build()
        .await
        .unwrap_or_else(|e| panic!("host with the builtins builds: {e}"));
    (host, dir)
}

/// The result of a call that must succeed.
async fn ok(host: &Host, name: &str, args: Value) -> ToolResult {
    let r = host.execute(ToolCall::new(name, args.clone())).await;
    assert!(r.ok, "{name} {args}: {:?}", r.error);
    r
}

/// The result of a call that must fail.
async fn fails(host: &Host, name: &str, args: Value) -> ToolResult {
    let r = host.execute(ToolCall::new(name, args.clone())).await;
    assert!(!r.ok, "{name} {args} should fail, gave {:?}", r.output);
    r
}

fn write(root: &Path, rel: impl AsRef<OsStr>, content: &str) {
    let path = root.join(rel.as_ref());
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

/// The outputs of the four walking tools over the whole work dir (grep for
/// `needle`, list_dir two levels deep).
async fn walk_outputs(host: &Host) -> Vec<(&'static str, String)> {
    vec![
        ("list_dir", ok(host, "list_dir", json!({"depth": 2})).await.output),
        ("find_files", ok(host, "find_files", json!({"pattern": "*"})).await.output),
        ("grep_files", ok(host, "grep_files", json!({"pattern": "needle"})).await.output),
        ("disk_usage", ok(host, "disk_usage", json!({})).await.output),
    ]
}

/// Every text a result carries: output, display, error message.
fn texts(r: &ToolResult) -> Vec<&str> {
    let mut all = vec![r.output.as_str()];
    all.extend(r.display.as_deref());
    all.extend(r.error.as_ref().map(|e| e.message.as_str()));
    all
}

/// No control character but the line breaks between entries, nothing
/// invisible, no raw U+FFFD.
fn assert_clean(tool: &str, text: &str) {
    let bad: Vec<char> = text
        .chars()
        .filter(|&c| {
            (c.is_control() && c != '\n')
                || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
                || c == '\u{feff}'
                || c == '\u{fffd}'
        })
        .collect();
    assert!(bad.is_empty(), "{tool}: raw {bad:?} in {text:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newline_in_a_name_cannot_forge_entries() {
    let (host, dir) = builtin_host().await;
    let r = dir.path();
    // Each forged line imitates what one of the tools prints for a real
    // entry; each file holds a match for grep.
    let forgers = [
        ("a.txt\n  secret.key (1.0 KiB)", "  secret.key (1.0 KiB)"),
        ("b.txt\nid_rsa", "id_rsa"),
        ("c.txt\nsecret.key:1:needle password=hunter2", "secret.key:1:needle password=hunter2"),
        ("d.txt\n     1.0 KiB            1024  secret.key", "     1.0 KiB            1024  secret.key"),
        ("e.txt\r  ok.txt (1 B)", "  ok.txt (1 B)"),
    ];
    for (name, _) in forgers {
        write(r, name, "needle\n");
    }
    // A directory whose name forges an entry below it.
    write(r, "sub\n    fake.txt (9 B)/inner.txt", "needle\n");
    write(r, "plain.txt", "needle\n");

    for (tool, out) in walk_outputs(&host).await {
        assert_clean(tool, &out);
        for (name, forged) in forgers {
            assert!(
                !out.lines().any(|l| l == forged || l.trim_start() == forged.trim_start()),
                "{tool}: {out}"
            );
            // These names hold only ASCII and `\n`/`\r`: Rust's debug
            // form is the tools' quoted form.
            let shown = format!("{name:?}");
            assert_eq!(out.lines().filter(|l| l.contains(&shown)).count(), 1, "{tool}: {shown} in {out}");
        }
        assert!(!out.lines().any(|l| l.trim_start().starts_with("fake.txt")), "{tool}: {out}");
        assert!(out.contains(r#""sub\n    fake.txt (9 B)"#), "{tool}: {out}");
    }
    let list = ok(&host, "list_dir", json!({})).await.output;
    assert!(list.contains("  \"a.txt\\n  secret.key (1.0 KiB)\" (7 B)\n"), "{list}");
    let grep = ok(&host, "grep_files", json!({"pattern": "needle"})).await;
    assert!(
        grep.output.contains("\"c.txt\\nsecret.key:1:needle password=hunter2\":1:needle\n"),
        "{}",
        grep.output
    );
    assert_eq!(grep.metadata.unwrap()["matches"], 7, "one match per file, none forged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escape_sequences_in_names_never_reach_the_output() {
    let (host, dir) = builtin_host().await;
    let r = dir.path();
    write(r, "red\x1b[31m.txt", "needle old\n");
    write(r, "\x1b]0;title\x07.txt", "needle\n");
    write(r, "clear\x1b[2J\x1b[H", "needle\n");
    write(r, "csi\u{9b}31m.txt", "needle\n");
    write(r, "blink\x1b[5m/inside.txt", "needle\n");
    std::os::unix::fs::symlink("target\x1b[8m.txt", r.join("link")).unwrap();
    write(r, "written\x1b]2;x\x07.txt", "old");
    std::os::unix::fs::symlink("written\x1b]2;x\x07.txt", r.join("wlink")).unwrap();

    for (tool, out) in walk_outputs(&host).await {
        assert_clean(tool, &out);
        assert!(out.contains(r#""red\x1b[31m.txt""#), "{tool}: {out}");
        assert!(out.contains(r#"\x1b]0;title\x07.txt""#), "{tool}: {out}");
        assert!(out.contains(r#""csi\u{009b}31m.txt""#), "{tool}: {out}");
    }
    let list = ok(&host, "list_dir", json!({})).await.output;
    assert!(list.contains(r#"  link@ -> "target\x1b[8m.txt""#), "{list}");

    // The tools that echo a path found on disk.
    let results = [
        fails(&host, "read_file", json!({"path": "blink\x1b[5m"})).await,
        fails(&host, "read_file", json!({"path": "gone\x1b[31m.txt"})).await,
        fails(&host, "list_dir", json!({"path": "red\x1b[31m.txt"})).await,
        ok(&host, "edit_file", json!({"path": "red\x1b[31m.txt", "old_string": "old", "new_string": "new"}))
            .await,
        fails(
            &host,
            "edit_file",
            json!({"path": "red\x1b[31m.txt", "old_string": "absent", "new_string": "x"}),
        )
        .await,
        fails(&host, "write_file", json!({"path": "wlink", "content": "x"})).await,
        ok(&host, "list_dir", json!({"path": "blink\x1b[5m"})).await,
        ok(&host, "disk_usage", json!({"path": "blink\x1b[5m"})).await,
        ok(&host, "grep_files", json!({"pattern": "needle", "path": "clear\x1b[2J\x1b[H"})).await,
    ];
    for r in &results {
        for text in texts(r) {
            assert_clean("path messages", text);
        }
    }
    assert_eq!(
        results[0].error.as_ref().unwrap().message,
        r#""blink\x1b[5m" is a directory; use list_dir to see its entries"#
    );
    assert_eq!(results[1].error.as_ref().unwrap().message, r#""gone\x1b[31m.txt" does not exist"#);
    assert!(
        results[2].error.as_ref().unwrap().message.starts_with(r#""red\x1b[31m.txt" is not a directory"#)
    );
    assert!(results[3].output.contains(r#"in "red\x1b[31m.txt""#), "{}", results[3].output);
    assert!(results[3].display.as_deref().unwrap().starts_with(r#"--- "a/red\x1b[31m.txt""#));
    // The link is refused (the tools write no symlink by default), its target quoted.
    assert!(
        results[5]
            .error
            .as_ref()
            .unwrap()
            .message
            .starts_with(r#"wlink is a symlink (to "written\x1b]2;x\x07.txt")"#),
        "{:?}",
        results[5].error
    );
    assert!(
        results[6].output.starts_with("\"blink\\x1b[5m\"/\n  inside.txt (7 B)\n"),
        "{}",
        results[6].output
    );
    assert!(results[7].output.starts_with("\"blink\\x1b[5m\"/\n"), "{}", results[7].output);
    assert!(results[8].output.starts_with(r#""clear\x1b[2J\x1b[H":1:needle"#), "{}", results[8].output);
    // Metadata keeps the exact name, for a follow-up call.
    let read = ok(&host, "read_file", json!({"path": "red\x1b[31m.txt"})).await;
    assert_eq!(read.metadata.unwrap()["path"], "red\x1b[31m.txt");
    assert_eq!(fs::read_to_string(r.join("written\x1b]2;x\x07.txt")).unwrap(), "old");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quotes_and_backslashes_make_the_quoting_unambiguous() {
    let (host, dir) = builtin_host().await;
    let r = dir.path();
    // A name spelled like a quoted newline name, and a real newline name.
    write(r, r#""a\n""#, "needle literal\n");
    write(r, "a\n", "needle newline\n");
    write(r, r"back\slash", "needle\n");
    write(r, "notes:9:forged", "needle\n");
    write(r, "  indented", "needle\n");
    write(r, "txt\u{202e}hs.exe", "needle\n");
    write(r, "zero\u{200b}width", "needle\n");

    for (tool, out) in walk_outputs(&host).await {
        assert_clean(tool, &out);
        assert!(out.contains(r#""\"a\\n\"""#), "{tool}: {out}");
        assert!(out.contains(r#""a\n""#), "{tool}: {out}");
        assert!(out.contains(r#""back\\slash""#), "{tool}: {out}");
        assert!(out.contains(r#""  indented""#), "{tool}: {out}");
        assert!(out.contains(r#""txt\u{202e}hs.exe""#), "{tool}: {out}");
        assert!(out.contains(r#""zero\u{200b}width""#), "{tool}: {out}");
    }
    let list = ok(&host, "list_dir", json!({})).await.output;
    let lines: Vec<&str> = list.lines().collect();
    assert!(lines.contains(&r#"  "\"a\\n\"" (15 B)"#), "{list}");
    assert!(lines.contains(&r#"  "a\n" (15 B)"#), "{list}");
    assert!(lines.contains(&r#"  "  indented" (7 B)"#), "a leading space cannot fake a deeper level: {list}");
    assert!(lines.contains(&"  notes:9:forged (7 B)"), "':' is plain outside grep: {list}");

    let grep = ok(&host, "grep_files", json!({"pattern": "needle"})).await.output;
    let lines: Vec<&str> = grep.lines().collect();
    assert!(lines.contains(&r#""notes:9:forged":1:needle"#), "grep quotes a path holding ':': {grep}");
    assert!(!lines.iter().any(|l| l.starts_with("notes:")), "{grep}");
    assert!(lines.contains(&r#""\"a\\n\"":1:needle literal"#), "{grep}");
    assert!(lines.contains(&r#""a\n":1:needle newline"#), "{grep}");

    // The exact name still works as an argument (JSON carries it).
    let read = ok(&host, "read_file", json!({"path": "a\n"})).await;
    assert!(read.output.contains("needle newline"), "{}", read.output);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_that_is_not_utf8_never_fails_a_walk() {
    let (host, dir) = builtin_host().await;
    let r = dir.path();
    write(r, OsStr::from_bytes(b"bad\xff.txt"), "needle in the bad file\n");
    write(r, OsStr::from_bytes(b"dir\xfe/inner.txt"), "needle inside\n");
    write(r, "good.txt", "needle good\n");
    write(r, "sub/also.txt", "needle also\n");

    // Today's host reports the bad entry as an error (it is left out and
    // counted); a host that decodes names lossily hands it over with
    // U+FFFD (shown quoted). Either way the call succeeds with the rest.
    for (tool, out) in walk_outputs(&host).await {
        assert_clean(tool, &out);
        assert!(out.contains("good.txt"), "{tool}: {out}");
        assert!(out.contains("sub/") || out.contains("sub/also.txt"), "{tool}: {out}");
        assert!(!out.contains("illegal"), "{tool}: {out}");
        let shown = out.contains(r#""bad\u{fffd}.txt""#);
        let counted = out.contains("could not be read");
        assert!(shown || counted, "{tool}: the bad entry is neither shown nor counted: {out}");
    }
    let grep = ok(&host, "grep_files", json!({"pattern": "needle"})).await.output;
    assert!(grep.contains("good.txt:1:needle good\n"), "{grep}");
    assert!(grep.contains("sub/also.txt:1:needle also\n"), "{grep}");
    let du = ok(&host, "disk_usage", json!({})).await.output;
    assert!(du.contains("  12  good.txt\n"), "{du}");
}

/// The final behaviour once the host decodes names that are not UTF-8
/// lossily (issue 13: the host side of item 10) instead of failing the
/// entry with `illegal-byte-sequence`. Until then the guest sees an error
/// for the entry, which `a_name_that_is_not_utf8_never_fails_a_walk` covers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn walks_show_invalid_utf8_names_quoted() {
    let (host, dir) = builtin_host().await;
    let r = dir.path();
    write(r, OsStr::from_bytes(b"bad\xff.txt"), "needle in the bad file\n");
    write(r, OsStr::from_bytes(b"dir\xfe/inner.txt"), "needle inside\n");
    write(r, "good.txt", "needle good\n");

    let list = ok(&host, "list_dir", json!({"depth": 2})).await;
    let lines: Vec<&str> = list.output.lines().collect();
    assert!(lines.contains(&r#"  "dir\u{fffd}"/"#), "{}", list.output);
    // The host maps a lossy name back to the one entry it stands for, so it opens.
    assert!(lines.contains(&r#"  "bad\u{fffd}.txt" (23 B)"#), "{}", list.output);
    assert!(lines.contains(&"    inner.txt (14 B)"), "{}", list.output);
    assert!(lines.contains(&"  good.txt (12 B)"), "{}", list.output);
    assert_eq!(list.metadata.unwrap()["unreadable_entries"], 0, "no entry left out");

    let find = ok(&host, "find_files", json!({"pattern": "*"})).await.output;
    let lines: Vec<&str> = find.lines().collect();
    assert!(lines.contains(&r#""bad\u{fffd}.txt""#) && lines.contains(&"good.txt"), "{find}");
    assert!(lines.contains(&r#""dir\u{fffd}/inner.txt""#), "{find}");

    let grep = ok(&host, "grep_files", json!({"pattern": "needle"})).await;
    assert!(grep.output.contains("good.txt:1:needle good\n"), "{}", grep.output);
    assert!(grep.output.contains(r#""bad\u{fffd}.txt":1:needle in the bad file"#), "{}", grep.output);
    assert_eq!(grep.metadata.unwrap()["unreadable"], 0);

    let du = ok(&host, "disk_usage", json!({})).await.output;
    assert!(du.contains("  12  good.txt\n"), "{du}");
    assert!(du.contains(r#"  23  "bad\u{fffd}.txt""#), "{du}");
    assert!(du.contains(r#"  14  "dir\u{fffd}"/"#), "{du}");
}
