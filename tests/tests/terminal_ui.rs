//! What the person at the terminal sees: `toolhost list` one short line per tool
//! (`--long` for the rest, `--json` unchanged), and progress while a component
//! compiles: drawn on a terminal (a pseudo-terminal from `script`), not a byte of
//! it when stderr is a pipe or under `serve`.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use toolhost_tests::servers::require;
use toolhost_tests::{HOSTILE_WASM, toolhost_bin};

fn run(args: &[&str], cache: &Path) -> Output {
    Command::new(toolhost_bin())
        .args(args)
        .env_remove("TOOLHOST_LOG")
        .env("TOOLHOST_CACHE_DIR", cache)
        .env("TOOLHOST_CONFIG_DIR", toolhost_tests::test_config_dir())
        .env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir())
        .output()
        .expect("running toolhost")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The first sentence as `list` shows it.
fn first_sentence(description: &str) -> String {
    let line = description.trim_start().lines().next().unwrap_or("").trim_end();
    match line.find(". ") {
        Some(at) => line[..=at].to_string(),
        None => line.to_string(),
    }
}

#[test]
fn list_prints_one_short_line_per_tool() {
    let work = tempfile::tempdir().unwrap();
    let cache = toolhost_tests::workspace_root().join("target").join("test-compile-cache");
    let dir = work.path().to_str().unwrap();
    let json = run(&["list", "--json", "--work-dir", dir, "--plugin", HOSTILE_WASM], &cache);
    assert_eq!(json.status.code(), Some(0), "{}", text(&json.stderr));
    let doc: Value = serde_json::from_slice(&json.stdout).unwrap();
    let tools = doc["tools"].as_array().unwrap();

    let out = run(&["list", "--work-dir", dir, "--plugin", HOSTILE_WASM], &cache);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), tools.len(), "one line per tool:\n{listed}");
    for (line, tool) in lines.iter().zip(tools) {
        // Not a terminal: 100 columns; never more than 120.
        assert!(line.chars().count() <= 100, "{line:?}");
        let name = tool["name"].as_str().unwrap();
        let mut words = line.split_whitespace();
        assert_eq!(words.next(), Some(name), "{line}");
        let kind = match (&tool["read_only"], &tool["destructive"]) {
            (Value::Bool(true), _) => "read-only",
            (_, Value::Bool(true)) => "destructive",
            _ => "writes",
        };
        assert_eq!(words.next(), Some(kind), "{line}");
        let sentence = first_sentence(tool["description"].as_str().unwrap());
        let shown = line.split_once(kind).unwrap().1.trim();
        match shown.strip_suffix('…') {
            Some(head) => assert!(sentence.starts_with(head), "{shown:?} is not the start of {sentence:?}"),
            None => assert_eq!(shown, sentence, "{line}"),
        }
    }

    // --long has the rest: every description whole, and the arguments.
    let long = run(&["list", "--long", "--work-dir", dir], &cache);
    let long = text(&long.stdout);
    let read_file = tools.iter().find(|t| t["name"] == "read_file").unwrap();
    for line in read_file["description"].as_str().unwrap().trim().lines() {
        assert!(long.contains(line), "{line:?} missing from --long");
    }
    assert!(long.contains("read_file  (read-only, from builtin:fs)"), "{long}");
    assert!(long.contains("    - path: string"), "{long}");
    assert!(long.contains("    - offset?: "), "{long}");
    let out = run(&["list", "--long", "--json"], &cache);
    assert_eq!(out.status.code(), Some(2), "--long and --json do not go together");
}

/// `script` running `command` on a pseudo-terminal: everything it drew.
fn on_a_terminal(command: &str, cache: &Path) -> String {
    let script = require("script", "apt-get install bsdutils");
    let out = Command::new(script)
        .args(["-q", "-e", "-c", command, "/dev/null"])
        .env_remove("TOOLHOST_LOG")
        .env("TOOLHOST_CACHE_DIR", cache)
        .env("TOOLHOST_CONFIG_DIR", toolhost_tests::test_config_dir())
        .env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir())
        .output()
        .expect("running script");
    text(&out.stdout)
}

#[test]
fn compiling_shows_progress_on_a_terminal_and_nothing_through_a_pipe_or_under_serve() {
    let bin = toolhost_bin().to_str().unwrap().to_string();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().to_str().unwrap();

    // A pipe: the plugin compiles (an empty cache), and stderr holds no progress byte.
    let cache = tempfile::tempdir().unwrap();
    let out = run(&["list", "--work-dir", dir, "--plugin", HOSTILE_WASM], cache.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stderr.is_empty(), "progress bytes on a pipe: {:?}", text(&out.stderr));

    // Under serve, even on a terminal: nothing (stdin at its end, so it stops).
    let cache = tempfile::tempdir().unwrap();
    let drawn = on_a_terminal(
        &format!("{bin} serve --work-dir {dir} --plugin {HOSTILE_WASM} < /dev/null"),
        cache.path(),
    );
    assert!(!drawn.contains("compiling"), "progress under serve: {drawn:?}");
    assert!(std::fs::read_dir(cache.path()).unwrap().next().is_some(), "it did compile (into the cache)");

    // A terminal: the compile is shown while it runs.
    let cache = tempfile::tempdir().unwrap();
    let drawn = on_a_terminal(&format!("{bin} list --work-dir {dir} --plugin {HOSTILE_WASM}"), cache.path());
    assert!(drawn.contains("compiling "), "no progress on a terminal: {drawn:?}");
    // Cached now: nothing to show.
    let drawn = on_a_terminal(&format!("{bin} list --work-dir {dir} --plugin {HOSTILE_WASM}"), cache.path());
    assert!(!drawn.contains("compiling"), "{drawn:?}");
}
