//! The builtin filesystem tools end to end, through `Host::execute` over a
//! temporary work dir: the wiring (arguments, coercion, metadata, display)
//! and the sandbox (escapes, symlinks, forbidden paths). The tools' own
//! logic has unit tests in `plugins/fs`.

use std::fs;
use std::path::Path;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
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

async fn call(host: &Host, name: &str, args: Value) -> ToolResult {
    host.execute(ToolCall::new(name, args)).await
}

/// The output of a call that must succeed.
async fn ok(host: &Host, name: &str, args: Value) -> ToolResult {
    let r = call(host, name, args.clone()).await;
    assert!(r.ok, "{name} {args}: {:?}", r.error);
    r
}

fn code(r: &ToolResult) -> &str {
    r.code().unwrap_or_else(|| panic!("expected a failure, got ok output {:?}", r.output))
}

fn message(r: &ToolResult) -> &str {
    &r.error.as_ref().unwrap_or_else(|| panic!("expected a failure, got ok output {:?}", r.output)).message
}

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

/// `read_file`'s numbering: `cat -n` style.
fn numbered(lines: &[(usize, &str)]) -> String {
    lines.iter().map(|(n, text)| format!("{n:>6}\t{text}\n")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_file_selects_lines_and_hashes_the_whole_file() {
    let (host, dir) = builtin_host().await;
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    write(dir.path(), "src/notes.txt", &text);

    let r = ok(&host, "read_file", json!({"path": "src/notes.txt", "offset": 3, "limit": 2})).await;
    let hash = hex::encode(Sha256::digest(text.as_bytes()));
    let header = format!("[sha256 {hash}, 10 lines, 71 B]\n");
    assert!(
        r.output.starts_with(&(header.clone() + &numbered(&[(3, "line 3"), (4, "line 4")]))),
        "{}",
        r.output
    );
    assert!(
        r.output.contains("[showing lines 3-4 of 10 (the line limit was reached); use offset=5 to continue]")
    );
    assert!(!r.output.contains("line 5"), "{}", r.output);
    let meta = r.metadata.expect("read_file has metadata");
    assert_eq!(meta["sha256"], hex::encode(Sha256::digest(text.as_bytes())), "sha256 of the whole file");
    assert_eq!(meta["path"], "src/notes.txt");
    assert_eq!(meta["total_lines"], 10);
    assert_eq!(meta["bytes"], text.len());
    assert_eq!((meta["first_line"].as_u64(), meta["last_line"].as_u64()), (Some(3), Some(4)));

    // The whole file, by an absolute path inside the work dir.
    let abs = dir.path().canonicalize().unwrap().join("src/notes.txt");
    let r = ok(&host, "read_file", json!({"path": abs.display().to_string()})).await;
    let all: Vec<(usize, String)> = (1..=10).map(|i| (i, format!("line {i}"))).collect();
    let all: Vec<(usize, &str)> = all.iter().map(|(n, s)| (*n, s.as_str())).collect();
    assert_eq!(r.output, header + &numbered(&all));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quoted_numbers_are_coerced_for_read_file() {
    let (host, dir) = builtin_host().await;
    write(dir.path(), "a.txt", "a\nb\nc\n");
    let r = ok(&host, "read_file", json!({"path": "a.txt", "offset": "2", "limit": "1"})).await;
    let (_, lines) = r.output.split_once('\n').unwrap();
    assert!(lines.starts_with(&numbered(&[(2, "b")])), "{}", r.output);
    assert!(!r.output.contains("\ta\n") && !r.output.contains("\tc\n"), "{}", r.output);
    let meta = r.metadata.unwrap();
    assert_eq!((meta["first_line"].as_u64(), meta["last_line"].as_u64()), (Some(2), Some(2)));

    // Not a number: refused by the host before the tool runs, naming the field.
    let r = call(&host, "read_file", json!({"path": "a.txt", "offset": "two"})).await;
    assert_eq!(code(&r), "invalid_args");
    assert!(message(&r).starts_with("offset: "), "{}", message(&r));
    // Below the schema's minimum.
    let r = call(&host, "read_file", json!({"path": "a.txt", "offset": "0"})).await;
    assert_eq!(code(&r), "invalid_args");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_file_errors_name_the_problem() {
    let (host, dir) = builtin_host().await;
    fs::create_dir(dir.path().join("sub")).unwrap();

    let r = call(&host, "read_file", json!({"path": "missing.txt"})).await;
    assert_eq!(code(&r), "not_found");
    assert_eq!(r.error.as_ref().unwrap().to_string(), "not_found: missing.txt does not exist");

    let r = call(&host, "read_file", json!({"path": "sub"})).await;
    assert_eq!(code(&r), "is_directory");

    for escape in ["../../etc/passwd", "/etc/passwd", "sub/../../x"] {
        let r = call(&host, "read_file", json!({"path": escape})).await;
        assert_eq!(code(&r), "path_escape", "{escape}: {:?}", r.error);
        assert!(!r.output.contains("root:"), "{escape}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_out_of_the_work_dir_is_not_read() {
    let (host, dir) = builtin_host().await;
    std::os::unix::fs::symlink("/etc/passwd", dir.path().join("passwd")).unwrap();
    std::os::unix::fs::symlink("../../../../../../../../etc/passwd", dir.path().join("rel_passwd")).unwrap();
    std::os::unix::fs::symlink("/etc", dir.path().join("etc")).unwrap();
    for path in ["passwd", "rel_passwd", "etc/passwd"] {
        let r = call(&host, "read_file", json!({"path": path})).await;
        assert!(!r.ok, "{path} was readable: {}", r.output);
        assert!(matches!(code(&r), "access_denied" | "not_found"), "{path}: {:?}", r.error);
        assert!(!r.output.contains("root:"), "{path}");
        assert!(!message(&r).contains("root:"), "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlinked_directory_out_of_the_work_dir_is_not_followed() {
    let (host, dir) = builtin_host().await;
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "secret.txt", "TOPSECRET outside the work dir\n");
    write(outside.path(), "deeper/also.rs", "TOPSECRET again\n");
    write(dir.path(), "inside.txt", "an ordinary file\n");
    std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();

    let r = ok(&host, "list_dir", json!({"path": ".", "depth": 4})).await;
    // Shown as a symlink, never entered. (The sandbox will not even read an
    // absolute link target, so the target may be missing.)
    let with_target = format!("./\n  inside.txt (17 B)\n  out@ -> {}\n", outside.path().display());
    assert!(r.output == "./\n  inside.txt (17 B)\n  out@\n" || r.output == with_target, "{}", r.output);

    let r = ok(&host, "grep_files", json!({"pattern": "TOPSECRET"})).await;
    assert!(!r.output.contains("TOPSECRET outside"), "{}", r.output);
    assert!(r.output.starts_with("No matches for `TOPSECRET`"), "{}", r.output);
    assert_eq!(r.metadata.as_ref().unwrap()["matches"], 0);

    let r = ok(&host, "find_files", json!({"pattern": "**/*.rs"})).await;
    assert!(!r.output.contains("also.rs"), "{}", r.output);

    // Naming the link directly does not get through either.
    for (tool, args) in [
        ("list_dir", json!({"path": "out"})),
        ("grep_files", json!({"pattern": "TOPSECRET", "path": "out"})),
        ("read_file", json!({"path": "out/secret.txt"})),
        ("find_files", json!({"pattern": "*", "path": "out"})),
    ] {
        let r = call(&host, tool, args.clone()).await;
        assert!(!r.ok, "{tool} {args} got through: {}", r.output);
        assert!(matches!(code(&r), "access_denied" | "not_found"), "{tool} {args}: {:?}", r.error);
        assert!(!r.output.contains("TOPSECRET") && !r.output.contains("secret.txt"), "{tool}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_file_creates_parents_and_reads_back() {
    let (host, dir) = builtin_host().await;
    let r =
        ok(&host, "write_file", json!({"path": "deep/nested/new.txt", "content": "hello\nworld\n"})).await;
    assert_eq!(r.output, "Created deep/nested/new.txt (12 bytes).");
    assert_eq!(fs::read_to_string(dir.path().join("deep/nested/new.txt")).unwrap(), "hello\nworld\n");

    let r = ok(&host, "read_file", json!({"path": "deep/nested/new.txt"})).await;
    let (_, lines) = r.output.split_once('\n').unwrap();
    assert_eq!(lines, numbered(&[(1, "hello"), (2, "world")]));
    assert_eq!(r.metadata.unwrap()["sha256"], hex::encode(Sha256::digest(b"hello\nworld\n")));

    // Overwrite: atomic, no temporary file left behind.
    let r = ok(&host, "write_file", json!({"path": "deep/nested/new.txt", "content": "bye"})).await;
    assert!(r.output.starts_with("Overwrote deep/nested/new.txt"), "{}", r.output);
    assert_eq!(fs::read_to_string(dir.path().join("deep/nested/new.txt")).unwrap(), "bye");
    let names: Vec<_> =
        fs::read_dir(dir.path().join("deep/nested")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["new.txt"]);

    // Escapes are refused and nothing is written outside.
    let r = call(&host, "write_file", json!({"path": "../escaped.txt", "content": "x"})).await;
    assert_eq!(code(&r), "permission_denied");
    assert!(message(&r).ends_with("is outside the work dir"), "{}", message(&r));
    assert!(!dir.path().parent().unwrap().join("escaped.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_file_refuses_git_and_the_host_config() {
    // The host's protected paths refuse these before the tool runs (the tool's own
    // `forbidden_path` check behind them is covered by its unit tests).
    let (host, dir) = builtin_host().await;
    write(dir.path(), ".git/config", "[core]\n\trepositoryformatversion = 0\n");
    let r =
        call(&host, "write_file", json!({"path": ".git/config", "content": "[core]\n\thooksPath = /tmp\n"}))
            .await;
    assert_eq!(code(&r), "permission_denied", "{:?}", r.error);
    assert_eq!(
        fs::read_to_string(dir.path().join(".git/config")).unwrap(),
        "[core]\n\trepositoryformatversion = 0\n"
    );

    let r =
        call(&host, "write_file", json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"})).await;
    assert_eq!(code(&r), "permission_denied");
    assert!(!dir.path().join(".git/hooks").exists());

    let r = call(&host, "write_file", json!({"path": "toolhost.toml", "content": "[limits]\n"})).await;
    assert_eq!(code(&r), "permission_denied", "{:?}", r.error);
    assert_eq!(message(&r), "\"toolhost.toml\" is a protected path");
    assert!(!dir.path().join("toolhost.toml").exists());

    // edit_file obeys the same rule.
    let r =
        call(&host, "edit_file", json!({"path": ".git/config", "old_string": "0", "new_string": "1"})).await;
    assert_eq!(code(&r), "permission_denied");
    assert_eq!(
        fs::read_to_string(dir.path().join(".git/config")).unwrap(),
        "[core]\n\trepositoryformatversion = 0\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_file_requires_a_unique_match_unless_replace_all() {
    let (host, dir) = builtin_host().await;
    write(dir.path(), "f.txt", "x = 1; x = 2; x = 3;\nkeep\n");

    let r =
        call(&host, "edit_file", json!({"path": "f.txt", "old_string": "x =", "new_string": "y ="})).await;
    assert_eq!(code(&r), "old_string_not_unique", "{:?}", r.error);
    assert!(message(&r).contains("3 times"), "{}", message(&r));
    assert_eq!(fs::read_to_string(dir.path().join("f.txt")).unwrap(), "x = 1; x = 2; x = 3;\nkeep\n");

    // A quoted boolean works for replace_all.
    let r = ok(
        &host,
        "edit_file",
        json!({"path": "f.txt", "old_string": "x =", "new_string": "y =", "replace_all": "true"}),
    )
    .await;
    assert_eq!(r.output, "Made 3 replacements in f.txt.");
    assert_eq!(fs::read_to_string(dir.path().join("f.txt")).unwrap(), "y = 1; y = 2; y = 3;\nkeep\n");
    let diff = r.display.expect("edit_file displays a diff");
    assert!(diff.starts_with("--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n"), "{diff}");
    assert!(diff.contains("\n-x = 1; x = 2; x = 3;\n+y = 1; y = 2; y = 3;\n keep\n"), "{diff}");
    let meta = r.metadata.unwrap();
    assert_eq!(meta["replacements"], 3);
    assert_eq!(meta["sha256"], hex::encode(Sha256::digest(b"y = 1; y = 2; y = 3;\nkeep\n")));

    let r = call(&host, "edit_file", json!({"path": "f.txt", "old_string": "zzz", "new_string": "q"})).await;
    assert_eq!(code(&r), "old_string_not_found");
    let r = call(&host, "edit_file", json!({"path": "nope.txt", "old_string": "a", "new_string": "b"})).await;
    assert_eq!(code(&r), "not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_files_reports_paths_and_line_numbers() {
    let (host, dir) = builtin_host().await;
    write(dir.path(), "src/main.rs", "use std::io;\n\nfn main() {\n    helper();\n}\n\nfn helper() {}\n");
    write(dir.path(), "README.md", "fn in prose\n");
    write(dir.path(), "target/gen.rs", "fn generated() {}\n");

    let r = ok(&host, "grep_files", json!({"pattern": r"^fn \w+", "glob": "*.rs"})).await;
    let hits: Vec<&str> = r.output.lines().filter(|l| !l.starts_with('[')).collect();
    assert_eq!(hits, ["src/main.rs:3:fn main() {", "src/main.rs:7:fn helper() {}"], "{}", r.output);
    let meta = r.metadata.unwrap();
    assert_eq!(meta["matches"], 2);
    assert_eq!(meta["files_matched"], 1);

    let r =
        ok(&host, "grep_files", json!({"pattern": "HELPER", "case_insensitive": "true", "max_results": "1"}))
            .await;
    let hits: Vec<&str> = r.output.lines().filter(|l| !l.starts_with('[')).collect();
    assert_eq!(hits, ["src/main.rs:4:    helper();"], "{}", r.output);
    assert_eq!(r.metadata.unwrap()["matches"], 2);

    let r = call(&host, "grep_files", json!({"pattern": "(unclosed"})).await;
    assert_eq!(code(&r), "invalid_args");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_files_literal_and_context_lines() {
    let (host, dir) = builtin_host().await;
    write(dir.path(), "a.txt", "one\ntwo\nx.y(z)\nfour\nfive\nsix\nxy(z)\n");

    // A fixed string: `.` and `(` are not special (coerced from a string).
    let r = ok(&host, "grep_files", json!({"pattern": "x.y(z)", "literal": "true"})).await;
    assert_eq!(r.output, "a.txt:3:x.y(z)\n");
    // Context lines are marked with `-`, and groups apart are separated.
    let r = ok(&host, "grep_files", json!({"pattern": "y\\(z", "before": 1, "after": "1"})).await;
    assert_eq!(r.output, "a.txt-2-two\na.txt:3:x.y(z)\na.txt-4-four\n--\na.txt-6-six\na.txt:7:xy(z)\n");
    // A huge context is refused, not clamped silently.
    let r = call(&host, "grep_files", json!({"pattern": "x", "after": 100000})).await;
    assert_eq!(code(&r), "invalid_args");
    // Refused by the host against the schema's range, or by the tool.
    assert!(message(&r).contains("20"), "{}", message(&r));
    let r = call(&host, "grep_files", json!({"pattern": "x", "before": -1})).await;
    assert!(!r.ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn find_files_matches_globs_across_directories() {
    let (host, dir) = builtin_host().await;
    for f in ["lib.rs", "src/a.rs", "src/b.txt", "src/deep/er/c.rs", "target/skip.rs", ".git/x.rs"] {
        write(dir.path(), f, "");
    }
    let r = ok(&host, "find_files", json!({"pattern": "**/*.rs"})).await;
    let found: Vec<&str> = r.output.lines().filter(|l| !l.starts_with('[')).collect();
    assert_eq!(found, ["lib.rs", "src/a.rs", "src/deep/er/c.rs"], "{}", r.output);
    let meta = r.metadata.unwrap();
    assert_eq!(meta["total"], 3);
    assert_eq!(meta["skipped_dirs"], json!([".git", "target"]));

    let r = ok(&host, "find_files", json!({"pattern": "*.rs", "path": "src"})).await;
    let found: Vec<&str> = r.output.lines().filter(|l| !l.starts_with('[')).collect();
    assert_eq!(found, ["src/a.rs", "src/deep/er/c.rs"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn walks_honour_gitignore_files_unless_asked_not_to() {
    let (host, dir) = builtin_host().await;
    write(dir.path(), ".gitignore", "*.gen.rs\n/out/\n");
    write(dir.path(), "src/.ignore", "!kept.gen.rs\n");
    for f in ["src/a.rs", "src/b.gen.rs", "src/kept.gen.rs", "out/c.rs", "lib.gen.rs"] {
        write(dir.path(), f, "needle\n");
    }
    let r = ok(&host, "find_files", json!({"pattern": "*.rs"})).await;
    let found: Vec<&str> = r.output.lines().filter(|l| !l.starts_with('[')).collect();
    assert_eq!(found, ["src/a.rs", "src/kept.gen.rs"], "{}", r.output);
    assert!(r.output.contains("3 entries ignored by .gitignore/.ignore"), "{}", r.output);
    let r = ok(&host, "find_files", json!({"pattern": "*.rs", "include_ignored": "true"})).await;
    assert_eq!(r.metadata.unwrap()["total"], 5, "{}", r.output);
    // The work dir's .gitignore applies when searching a subdirectory too.
    let r = ok(&host, "find_files", json!({"pattern": "*.rs", "path": "src"})).await;
    let found: Vec<&str> = r.output.lines().filter(|l| !l.starts_with('[')).collect();
    assert_eq!(found, ["src/a.rs", "src/kept.gen.rs"], "{}", r.output);

    let r = ok(&host, "grep_files", json!({"pattern": "needle", "literal": true})).await;
    assert_eq!(r.metadata.unwrap()["files_searched"], 4, "{}", r.output); // with the two ignore files
    let r = ok(&host, "grep_files", json!({"pattern": "needle", "include_ignored": true})).await;
    assert_eq!(r.metadata.unwrap()["files_searched"], 7, "{}", r.output);

    let r = ok(&host, "list_dir", json!({"depth": 2})).await;
    assert!(!r.output.contains("out/") && !r.output.contains("b.gen.rs"), "{}", r.output);
    assert!(r.output.contains("kept.gen.rs"), "{}", r.output);

    // A .gitignore that ignores everything leaves nothing, and says so.
    write(dir.path(), ".gitignore", "*\n");
    let r = ok(&host, "find_files", json!({"pattern": "*"})).await;
    assert!(r.output.starts_with("No files match"), "{}", r.output);
    assert!(r.output.contains("ignored by .gitignore"), "{}", r.output);
    // `../` in a path argument is still refused.
    let r = call(&host, "find_files", json!({"pattern": "*", "path": "../", "include_ignored": true})).await;
    assert_eq!(code(&r), "path_escape");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn find_files_filters_by_type_time_and_depth() {
    let (host, dir) = builtin_host().await;
    for f in ["top.rs", "src/a.rs", "src/deep/b.rs"] {
        write(dir.path(), f, "");
    }
    #[cfg(unix)]
    std::os::unix::fs::symlink("..", dir.path().join("src/up")).unwrap();
    let found = |r: &ToolResult| -> Vec<String> {
        r.output.lines().filter(|l| !l.starts_with('[')).map(String::from).collect()
    };
    let r = ok(&host, "find_files", json!({"pattern": "*", "type": "dir"})).await;
    assert_eq!(found(&r), ["src", "src/deep"], "the symlink loop is not entered: {}", r.output);
    let r = ok(&host, "find_files", json!({"pattern": "*.rs", "max_depth": "2"})).await;
    assert_eq!(found(&r), ["src/a.rs", "top.rs"]);
    let r = ok(&host, "find_files", json!({"pattern": "*.rs", "modified_since": 1})).await;
    assert_eq!(found(&r).len(), 3, "{}", r.output);
    let r = ok(&host, "find_files", json!({"pattern": "*.rs", "modified_since": 253_402_300_799_i64})).await;
    assert!(r.output.starts_with("No files match"), "{}", r.output);
    #[cfg(unix)]
    {
        let r = ok(&host, "find_files", json!({"pattern": "*", "type": "symlink"})).await;
        assert_eq!(found(&r), ["src/up"]);
    }
    for bad in [
        json!({"pattern": "*", "type": "folder"}),
        json!({"pattern": "*", "modified_since": -1}),
        json!({"pattern": "*", "modified_since": 1_700_000_000_000_i64}),
        json!({"pattern": "*", "max_depth": 0}),
        json!({"pattern": "*", "max_depth": 100_000}),
        json!({"pattern": "*", "path": "src/../../", "type": "dir"}),
    ] {
        let r = call(&host, "find_files", bad.clone()).await;
        assert!(matches!(code(&r), "invalid_args" | "path_escape"), "{bad}: {:?}", r.error);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tree_shows_directories_with_counts_bounded() {
    let (host, dir) = builtin_host().await;
    for f in ["Cargo.toml", "src/main.rs", "src/cli/args.rs", "node_modules/m/i.js", "gen/x.rs"] {
        write(dir.path(), f, "");
    }
    write(dir.path(), ".gitignore", "gen/\n");
    #[cfg(unix)]
    std::os::unix::fs::symlink(".", dir.path().join("src/loop")).unwrap();
    let r = ok(&host, "tree", json!({})).await;
    assert!(r.output.starts_with("./ (1 dir, 2 files)\n  src/ (1 dir, "), "{}", r.output);
    assert!(r.output.contains("    cli/ (1 file)\n"), "{}", r.output);
    assert!(!r.output.contains("node_modules/") && !r.output.contains("gen/"), "{}", r.output);
    assert!(r.output.contains("skipped 1 directory by name (node_modules)"), "{}", r.output);
    let r = ok(&host, "tree", json!({"files": "true", "depth": 8, "max_entries": 2})).await;
    assert!(r.output.contains("[… "), "{}", r.output);
    assert_eq!(r.metadata.unwrap()["shown"], 2);
    let r = ok(&host, "tree", json!({"include_ignored": true, "depth": 1})).await;
    assert!(r.output.contains("  gen/ (1 file)"), "{}", r.output);
    for bad in [json!({"depth": 0}), json!({"depth": 9}), json!({"max_entries": 1_000_000})] {
        assert_eq!(code(&call(&host, "tree", bad).await), "invalid_args");
    }
    assert_eq!(code(&call(&host, "tree", json!({"path": "src/../.."})).await), "path_escape");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_dir_shows_a_tree_to_the_requested_depth() {
    let (host, dir) = builtin_host().await;
    write(dir.path(), "Cargo.toml", "0123456789");
    write(dir.path(), "src/lib.rs", "");
    write(dir.path(), "src/bin/main.rs", "");
    write(dir.path(), "docs/guide.md", "abc");

    let r = ok(&host, "list_dir", json!({"depth": 2})).await;
    assert_eq!(
        r.output,
        "./\n  docs/\n    guide.md (3 B)\n  src/\n    bin/\n    lib.rs (0 B)\n  Cargo.toml (10 B)\n",
        "{}",
        r.output
    );
    assert_eq!(r.metadata.unwrap()["entries"], 6);

    // Depth 1 with a quoted number.
    let r = ok(&host, "list_dir", json!({"path": "src", "depth": "1"})).await;
    assert_eq!(r.output, "src/\n  bin/\n  lib.rs (0 B)\n");

    let r = call(&host, "list_dir", json!({"depth": 9})).await;
    assert_eq!(code(&r), "invalid_args");
    let r = call(&host, "list_dir", json!({"path": "Cargo.toml"})).await;
    assert_eq!(code(&r), "not_a_directory");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_builtins_declare_their_effects() {
    // The host grants a read-only preopen to the tools declared read-only.
    let (host, _dir) = builtin_host().await;
    let effects: Vec<(&str, bool, bool)> = [
        "edit_file",
        "find_files",
        "grep_files",
        "list_dir",
        "move_file",
        "read_file",
        "remove_file",
        "restore_file",
        "tree",
        "write_file",
    ]
    .into_iter()
    .map(|name| {
        let registry = host.registry();
        let spec = registry.get(name).unwrap_or_else(|| panic!("no builtin {name}")).spec();
        (name, spec.read_only, spec.destructive)
    })
    .collect();
    assert_eq!(
        effects,
        [
            ("edit_file", false, true),
            ("find_files", true, false),
            ("grep_files", true, false),
            ("list_dir", true, false),
            ("move_file", false, true),
            ("read_file", true, false),
            ("remove_file", false, true),
            ("restore_file", false, true),
            ("tree", true, false),
            ("write_file", false, true),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replacing_a_file_keeps_its_permission_bits() {
    use std::os::unix::fs::PermissionsExt;
    let (host, dir) = toolhost_tests::hostile_host(toolhost::Limits::default()).await;
    let script = dir.path().join("run.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o751)).unwrap();
    let mode = || std::fs::metadata(&script).unwrap().permissions().mode() & 0o7777;

    let edit = json!({"path": "run.sh", "old_string": "hi", "new_string": "hello"});
    let r = host.execute(toolhost::ToolCall::new("edit_file", edit)).await;
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(mode(), 0o751);
    let r =
        host.execute(toolhost::ToolCall::new("write_file", json!({"path": "run.sh", "content": "x"}))).await;
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(mode(), 0o751);
    assert_eq!(std::fs::read_to_string(&script).unwrap(), "x");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disk_usage_sums_directories_sorted_and_stays_inside() {
    let (host, dir) = builtin_host().await;
    let root = dir.path();
    write(root, "big/a.bin", &"x".repeat(30_000));
    write(root, "big/deeper/b.bin", &"y".repeat(20_000));
    write(root, "small.txt", &"z".repeat(100));
    write(root, "mid/c.txt", &"w".repeat(5_000));
    std::os::unix::fs::symlink("/etc", root.join("link")).unwrap();
    let r = ok(&host, "disk_usage", json!({})).await;
    let lines: Vec<&str> = r.output.lines().collect();
    let pos = |name: &str| {
        lines.iter().position(|l| l.contains(name)).unwrap_or_else(|| panic!("{name}: {}", r.output))
    };
    assert!(pos("big/") < pos("mid/") && pos("mid/") < pos("small.txt"), "{}", r.output);
    assert!(lines[pos("big/")].contains("50000"), "{}", r.output);
    assert!(r.output.contains("TOTAL"), "{}", r.output);
    assert_eq!(r.metadata.as_ref().unwrap()["total_bytes"], 55_100);
    // A symlink is not followed, and nothing outside the work dir is measured.
    let out = call(&host, "disk_usage", json!({"path": "../"})).await;
    assert_eq!(code(&out), "path_escape", "{}", message(&out));
    let limited = ok(&host, "disk_usage", json!({"max_entries": 1})).await;
    assert!(limited.output.contains("more"), "{}", limited.output);
}
