//! The policy from the command line: `toolhost add` writes an entry with the
//! hash, `list`/`call` load it (and refuse it once the bytes change), a typo in
//! the file is a usage error naming its line, a call needing approval is denied
//! without a terminal and asked on one ("always" saved to the user's private
//! policy, outside the work dir).

use std::path::Path;
use std::process::{Command, Output, Stdio};

use toolhost_tests::{EXEC_WASM, HOSTILE_WASM, NET_WASM, test_config_dir, toolhost_bin};

fn run(cwd: &Path, args: &[&str]) -> Output {
    toolhost_tests::toolhost_in(cwd).args(args).output().expect("running toolhost")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn add_writes_the_entry_and_the_pinned_hash_guards_it() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("tools/hostile.wasm");
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    std::fs::copy(HOSTILE_WASM, &wasm).unwrap();

    // inspect shows the entry and writes nothing
    let out = run(dir.path(), &["inspect", "tools/hostile.wasm"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("[plugins.hostile]\nsource = \"tools/hostile.wasm\"\n"),
        "{}",
        text(&out.stdout)
    );
    assert!(!dir.path().join("toolhost.toml").exists());

    let out = run(dir.path(), &["add", "tools/hostile.wasm", "--env", "LANG"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("added plugins.hostile to ./toolhost.toml"), "{}", text(&out.stdout));
    let policy = std::fs::read_to_string(dir.path().join("toolhost.toml")).unwrap();
    let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(std::fs::read(&wasm).unwrap()));
    assert!(policy.contains(&format!("sha256 = \"{sha}\"")), "{policy}");
    // It has writing tools, so it asked for (and got) the work dir read-write.
    assert!(policy.contains("filesystem = \"read-write\""), "{policy}");
    assert!(policy.contains("env = [\"LANG\"]"), "{policy}");

    // The policy in the work dir is found and its plugin loaded, under its name.
    let out = run(dir.path(), &["list", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools = doc["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["name"] == "noop" && t["plugin"] == "hostile"), "{doc}");
    let plugin = doc["plugins"].as_array().unwrap().iter().find(|p| p["name"] == "hostile").unwrap();
    assert_eq!(plugin["grants"]["filesystem"], "read-write", "{plugin}");
    assert_eq!(plugin["grants"]["network"], serde_json::Value::Null, "no fetch import, no network: {plugin}");
    assert_eq!(doc["permissions"]["mode"], "default");

    // Changed bytes: refused at load, naming both hashes.
    let mut bytes = std::fs::read(&wasm).unwrap();
    bytes.extend_from_slice(b"\x00\x09\x08trailing"); // a custom section: still a valid component
    std::fs::write(&wasm, bytes).unwrap();
    let out = run(dir.path(), &["call", "noop", "{}"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("identity_mismatch: hostile: ") && err.contains(&sha), "{err}");

    // Re-approving updates the hash in place (one entry, not two).
    let out = run(dir.path(), &["add", "tools/hostile.wasm"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let policy = std::fs::read_to_string(dir.path().join("toolhost.toml")).unwrap();
    assert_eq!(policy.matches("[plugins.hostile]").count(), 1, "{policy}");
    assert!(!policy.contains(&sha), "{policy}");
    assert_eq!(run(dir.path(), &["call", "noop", "{}"]).status.code(), Some(0));
}

/// Quotes, backslashes, a control character (ESC), a newline, non-ASCII, and what
/// ends a TOML literal or multi-line string.
const ODD: &str = "q\"uote b\\ack e\u{1b}sc n\nl é ✓ '''";

#[test]
fn add_writes_what_it_shows_and_odd_strings_parse_back_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let file = format!("tools/{ODD}.wasm");
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    std::fs::copy(HOSTILE_WASM, dir.path().join(&file)).unwrap();
    let env = format!("MY {ODD}");

    let out = run(dir.path(), &["inspect", &file, "--json", "--name", "odd", "--env", &env]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let shown = shown["entry"].as_str().unwrap().to_string();
    assert!(!shown.contains('\u{1b}'), "a control character is escaped: {shown:?}");

    let out = run(dir.path(), &["add", &file, "--name", "odd", "--env", &env]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(&format!("policy entry:\n{shown}")), "{}", text(&out.stdout));
    let written = std::fs::read_to_string(dir.path().join("toolhost.toml")).unwrap();
    assert_eq!(written, shown, "add writes the entry it showed");

    // Parsed back, the source names the file (it loads) and the env name is the one
    // given (the variable of that name is granted).
    let out = Command::new(toolhost_bin())
        .current_dir(dir.path())
        .args(["list", "--json"])
        .env_remove("TOOLHOST_LOG")
        .env("TOOLHOST_CONFIG_DIR", test_config_dir())
        .env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir())
        .env(&env, "odd-value")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let plugin = doc["plugins"].as_array().unwrap().iter().find(|p| p["name"] == "odd").unwrap();
    assert_eq!(plugin["grants"]["env"], serde_json::json!([env]), "{plugin}");
}

#[test]
fn add_refuses_a_name_the_policy_could_not_hold() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a\"b", "a\\b", "a\u{1b}b", "a\nb", "wörd", "a.b", ""] {
        let out = run(dir.path(), &["add", HOSTILE_WASM, "--name", name]);
        assert_eq!(out.status.code(), Some(2), "{name:?}: {}", text(&out.stdout));
        let err = text(&out.stderr);
        assert!(err.contains(&format!("--name: plugin name {name:?}: use letters, digits")), "{err}");
        assert!(!err.contains('\u{1b}'), "{err:?}");
        assert!(!dir.path().join("toolhost.toml").exists());
    }
}

/// `inspect --json` in `dir`: its exit status and report.
fn inspect_json(dir: &Path, args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let mut argv = vec!["inspect", "--json"];
    argv.extend_from_slice(args);
    let out = run(dir, &argv);
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stderr)));
    (out.status.code(), doc)
}

#[test]
fn inspect_judges_the_component_against_the_grants_its_entry_would_have() {
    let dir = tempfile::tempdir().unwrap();
    for (wasm, name, grant, needle) in [
        (NET_WASM, "net", ["--allow-host", "docs.rs"], "plugins.net.network"),
        (EXEC_WASM, "runner", ["--allow-program", "echo"], "plugins.runner.exec"),
    ] {
        let (code, doc) = inspect_json(dir.path(), &[wasm, "--name", name]);
        assert_eq!(code, Some(1), "{doc}");
        let refused = doc["refused"].as_str().unwrap_or_else(|| panic!("not refused: {doc}"));
        assert!(refused.contains("capability_denied") && refused.contains(needle), "{refused}");

        let (code, doc) = inspect_json(dir.path(), &[wasm, "--name", name, grant[0], grant[1]]);
        assert_eq!(code, Some(0), "{doc}");
        assert_eq!(doc["refused"], serde_json::Value::Null, "{doc}");
        assert!(!doc["tools"].as_array().unwrap().is_empty(), "its tools are listed either way: {doc}");
        assert!(doc["entry"].as_str().unwrap().contains(grant[1]), "{doc}");
    }
    assert!(!dir.path().join("toolhost.toml").exists());
}

#[test]
fn add_refuses_a_fetching_plugin_without_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["add", NET_WASM, "--name", "net"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--allow-host PATTERN"), "{}", text(&out.stderr));
    assert!(!dir.path().join("toolhost.toml").exists());
    let out = run(dir.path(), &["add", NET_WASM, "--name", "net", "--allow-host", "docs.rs"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let policy = std::fs::read_to_string(dir.path().join("toolhost.toml")).unwrap();
    assert!(policy.contains("network = [\"docs.rs\"]"), "{policy}");
}

#[test]
fn add_and_the_flags_grant_exec_by_program_name() {
    let dir = tempfile::tempdir().unwrap();
    // A component that imports exec is not added without programs.
    let out = run(dir.path(), &["add", EXEC_WASM, "--name", "runner"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stdout).contains("exec:       yes"), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("--allow-program NAME"), "{}", text(&out.stderr));
    assert!(!dir.path().join("toolhost.toml").exists());
    // A path is not a program name.
    let out = run(dir.path(), &["add", EXEC_WASM, "--allow-program", "../bin/sh"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not a program name"), "{}", text(&out.stderr));

    let out = run(dir.path(), &["add", EXEC_WASM, "--name", "runner", "--allow-program", "echo"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let policy = std::fs::read_to_string(dir.path().join("toolhost.toml")).unwrap();
    assert!(policy.contains("exec = { programs = [\"echo\"], shell = false }"), "{policy}");
    // Its children run in the work dir, so it gets one (read-write: `spawn` writes).
    assert!(policy.contains("filesystem = \"read-write\""), "{policy}");
    let out = run(dir.path(), &["list", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let plugin = doc["plugins"].as_array().unwrap().iter().find(|p| p["name"] == "runner").unwrap();
    assert_eq!(plugin["grants"]["exec"]["programs"], serde_json::json!(["echo"]), "{plugin}");
    let out = run(
        dir.path(),
        &["call", "--mode", "yolo", "spawn", r#"{"program": "echo", "args": ["from-policy"]}"#],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("from-policy"), "{}", text(&out.stdout));

    // Ad hoc: --allow-program and --allow-shell for --plugin components.
    let other = tempfile::tempdir().unwrap();
    let adhoc = |extra: &[&str], args: &str| {
        let mut argv = vec!["call", "--mode", "yolo", "--plugin", EXEC_WASM];
        argv.extend_from_slice(extra);
        argv.extend_from_slice(&["spawn", args]);
        run(other.path(), &argv)
    };
    let out = adhoc(&[], r#"{"program": "echo"}"#);
    assert_eq!(out.status.code(), Some(2), "no grant: refused at load");
    assert!(text(&out.stderr).contains("capability_denied"), "{}", text(&out.stderr));
    let out = adhoc(&["--allow-program", "echo"], r#"{"program": "echo", "args": ["ad-hoc"]}"#);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("ad-hoc"));
    let out = adhoc(&["--allow-program", "echo"], r#"{"shell": "echo hi"}"#);
    assert!(text(&out.stderr).contains("shell_not_allowed"), "{}", text(&out.stderr));
    assert_eq!(out.status.code(), Some(1));
    let out = adhoc(&["--allow-shell"], r#"{"shell": "echo via-shell"}"#);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("via-shell"));
}

#[test]
fn a_typo_in_the_policy_is_a_usage_error_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), "[permissions]\nmode = \"plan\"\ndenny = [\"x\"]\n")
        .unwrap();
    let out = run(dir.path(), &["list"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("toolhost.toml, line 3: unknown field `denny`"), "{err}");
    // --policy points elsewhere; a missing file there is an error, not the defaults.
    let out = run(dir.path(), &["list", "--policy", "absent.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("policy absent.toml: "), "{}", text(&out.stderr));
}

#[test]
fn without_a_terminal_a_write_is_denied_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().to_str().unwrap();
    let args = r#"{"path":"a.txt","content":"x"}"#;
    let out = run(dir.path(), &["call", "write_file", args, "--work-dir", work]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr).trim(),
        "permission_denied: write_file needs approval and there is no one to ask (headless)"
    );
    assert!(!dir.path().join("a.txt").exists());
    let out = run(dir.path(), &["call", "write_file", args, "--work-dir", work, "--mode", "accept-edits"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(dir.path().join("a.txt").exists());
    let out = run(dir.path(), &["call", "write_file", args, "--work-dir", work, "--mode", "plan"]);
    assert!(text(&out.stderr).starts_with("permission_denied: plan mode"), "{}", text(&out.stderr));
}

/// `toolhost ARGS` on a pseudo-terminal (util-linux `script`), typing `answer`.
fn on_terminal(cwd: &Path, args: &[&str], answer: &str) -> Output {
    let command = std::iter::once(toolhost_bin().display().to_string())
        .chain(args.iter().map(|a| format!("'{a}'")))
        .collect::<Vec<_>>()
        .join(" ");
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(cwd)
        .env_remove("TOOLHOST_LOG")
        .env("TOOLHOST_CONFIG_DIR", test_config_dir())
        .env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux `script` runs");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(answer.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn on_a_terminal_the_user_is_asked_and_always_is_saved() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().to_str().unwrap();
    let write = |name: &str| format!(r#"{{"path":"{name}","content":"x"}}"#);

    let out = on_terminal(dir.path(), &["call", "write_file", &write("no.txt"), "--work-dir", work], "n\n");
    let shown = text(&out.stdout);
    assert!(shown.contains("write_file (builtin:fs) wants to run"), "{shown}");
    assert!(shown.contains("permission_denied: the user denied write_file"), "{shown}");
    assert!(!dir.path().join("no.txt").exists());

    let out = on_terminal(dir.path(), &["call", "write_file", &write("yes.txt"), "--work-dir", work], "a\n");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(dir.path().join("yes.txt").exists());
    // Saved to the user's private policy for this work dir, never inside the work dir.
    assert!(!dir.path().join("toolhost.toml").exists());
    let private = toolhost::policy::ConfigDir::at(test_config_dir())
        .private_policy(&dir.path().canonicalize().unwrap());
    let policy = std::fs::read_to_string(&private).unwrap();
    assert!(policy.contains("allow = [\"write_file(path=yes.txt)\"]"), "{policy}");
    // The saved rule answers next time, without a terminal.
    let out = run(dir.path(), &["call", "write_file", &write("yes.txt"), "--work-dir", work, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("rule allow write_file(path=yes.txt)"), "{}", text(&out.stdout));
}
