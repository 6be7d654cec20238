//! Output shaping over real outputs (`tests/fixtures/shape/`, made by
//! `scripts/shape-corpus` from small projects run with the real tools): every
//! failure, error and panic line of each log is in the model's copy (found by
//! a plain regex list, not the shaper's own), the logs and test runs together
//! cost at least 60 % fewer tokens (`o200k_base`), and diffs and file contents
//! pass byte for byte. Then through the host: `terminal` and `run_tests`
//! results shaped with `metadata.output_kind` and `output_tokens`, the markers'
//! windows read back with `read_output`, `raw: true` and `[output] shape =
//! false` giving the text as today.

use std::collections::HashSet;
use std::path::PathBuf;

use regex::Regex;
use toolhost::Part;
use toolhost::shape::{Request, Shape, count_tokens, shape};

/// The model's budget the fixtures are shaped for (the host's default clamp).
const BUDGET: usize = 30_000;

/// A fixture: its name, whether it must pass byte for byte, the command that
/// made it, and its text.
struct Fixture {
    name: String,
    exact: bool,
    command: String,
    text: String,
}

fn fixtures() -> Vec<Fixture> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/shape");
    let manifest = std::fs::read_to_string(dir.join("MANIFEST")).expect("the MANIFEST");
    manifest
        .lines()
        .map(|line| {
            let mut fields = line.splitn(3, '\t');
            let (name, class, command) =
                (fields.next().unwrap(), fields.next().unwrap(), fields.next().unwrap());
            let text = std::fs::read_to_string(dir.join(format!("{name}.txt"))).expect("a fixture");
            Fixture { name: name.into(), exact: class == "exact", command: command.into(), text }
        })
        .collect()
}

/// What a failure, error, panic or warning line looks like: a plain list,
/// independent of the shaper's classes (`failure-patterns`, shared with the
/// shaper's property tests).
fn failure_matcher() -> Vec<Regex> {
    include_str!("../fixtures/shape/failure-patterns")
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|p| Regex::new(p).unwrap())
        .collect()
}

/// The lines of `raw` the matcher finds that are not whole lines of `copy`.
fn lost(raw: &str, copy: &str) -> Vec<String> {
    let matcher = failure_matcher();
    let ansi = Regex::new("\x1b\\[[0-9;]*[A-Za-z]").unwrap();
    let kept: HashSet<&str> = copy.lines().collect();
    raw.lines()
        .map(|l| ansi.replace_all(l, "").into_owned())
        .filter(|l| matcher.iter().any(|re| re.is_match(l)))
        .filter(|l| !kept.contains(l.as_str()))
        .collect()
}

#[test]
fn every_failure_line_is_kept_with_60_percent_fewer_tokens_and_diffs_pass_whole() {
    let fixtures = fixtures();
    assert!(fixtures.len() >= 7, "the corpus: {}", fixtures.len());
    let (mut before, mut after) = (0, 0);
    println!("| fixture | command | lines | tokens before | tokens after | fewer |");
    println!("|---|---|---:|---:|---:|---:|");
    for f in &fixtures {
        let request =
            Request { command: Some(&f.command), call_id: "fixture", part: Part::Content, budget: BUDGET };
        let copy = match shape(&f.text, &request) {
            Shape::Shaped(shaped) => {
                assert!(!f.exact, "{}: a diff or a file was shaped", f.name);
                assert!(shaped.text.len() <= BUDGET, "{}: the copy is over the clamp", f.name);
                shaped.text
            }
            Shape::Untouched(_) => f.text.clone(),
            Shape::Unknown => panic!("{}: not recognised", f.name),
        };
        if f.exact {
            assert_eq!(copy, f.text, "{}: not byte-identical", f.name);
            continue;
        }
        let lost = lost(&f.text, &copy);
        assert!(lost.is_empty(), "{}: lost {} failure lines: {lost:#?}", f.name, lost.len());
        let (b, a) = (count_tokens(&f.text), count_tokens(&copy));
        println!(
            "| {} | `{}` | {} | {b} | {a} | {:.0} % |",
            f.name,
            f.command,
            f.text.lines().count(),
            100.0 * (1.0 - a as f64 / b as f64)
        );
        before += b;
        after += a;
    }
    let saved = 1.0 - after as f64 / before as f64;
    println!("| all logs | | | {before} | {after} | {:.0} % |", 100.0 * saved);
    assert!(saved >= 0.60, "only {:.1} % fewer tokens ({before} -> {after})", 100.0 * saved);
}

#[test]
fn the_matcher_finds_the_failures_of_each_log() {
    // The check above means something only if each log has failure lines.
    for f in fixtures().iter().filter(|f| !f.exact) {
        let found = lost(&f.text, "").len();
        assert!(found >= 2, "{}: the matcher finds {found} failure lines", f.name);
    }
}

// ---------------------------------------------------------------------------
// Through the host
// ---------------------------------------------------------------------------

use serde_json::{Value, json};
use toolhost::{Host, Mode, Policy, ToolCall, ToolResult};
use toolhost_tests::{HOSTILE_WASM, test_engine_settings};

/// A host over a fresh work dir holding the cargo fixture and `emit.sh`, which
/// prints it (or `$1.txt`) and exits with `$2`: the builtins, the hostile
/// plugin, a `run_tests` profile running it, and `policy` besides.
async fn host(policy: &str) -> (Host, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    for f in fixtures() {
        std::fs::write(dir.path().join(format!("{}.txt", f.name)), &f.text).unwrap();
    }
    std::fs::write(dir.path().join("emit.sh"), "cat \"$1.txt\"\nexit \"$2\"\n").unwrap();
    let path = dir.path().join("toolhost.toml");
    let profile = "[tests.unit]\ncommand = \"sh\"\nargs = [\"emit.sh\", \"cargo-test\", \"101\"]\n";
    std::fs::write(&path, format!("{profile}{policy}")).unwrap();
    let host = Host::builder()
        .work_dir(dir.path())
        .engine_settings(test_engine_settings())
        .mode(Mode::Yolo)
        .plugin_file(HOSTILE_WASM)
        .policy(Policy::load(&path).unwrap())
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    (host, dir)
}

async fn call(host: &Host, id: &str, tool: &str, args: Value) -> ToolResult {
    host.execute(ToolCall::new(tool, args).with_id(id)).await
}

fn cargo_fixture() -> String {
    fixtures().into_iter().find(|f| f.name == "cargo-test").unwrap().text
}

/// The first fold marker of `text`: its `offset` and `limit`, and its `part` when named.
fn first_marker(text: &str) -> (usize, usize, Option<String>) {
    let re = Regex::new(r#"call read_output with \{"call_id": "[^"]+"(, "part": "(\w+)")?, "offset": (\d+), "limit": (\d+)\}"#)
        .unwrap();
    let m = re.captures(text).unwrap_or_else(|| panic!("no marker in {text}"));
    (m[3].parse().unwrap(), m[4].parse().unwrap(), m.get(2).map(|p| p.as_str().to_string()))
}

/// The lines `read_output` shows for a marker's window, without their numbers.
async fn read_window(host: &Host, call_id: &str, text: &str) -> Vec<String> {
    let (offset, limit, part) = first_marker(text);
    let mut args = json!({"call_id": call_id, "offset": offset, "limit": limit});
    if let Some(part) = part {
        args["part"] = json!(part);
    }
    let read = host.execute(ToolCall::new("read_output", args)).await;
    assert!(read.ok, "{:?}", read.error);
    read.output.lines().filter_map(|l| l.split_once('\t')).map(|(_, l)| l.to_string()).take(limit).collect()
}

fn assert_shaped(metadata: &Value, folded: u64) {
    assert_eq!(metadata["output_kind"], json!({"format": "cargo", "folded_lines": folded}), "{metadata}");
    let tokens = &metadata["output_tokens"];
    let (before, after) = (tokens["before"].as_u64().unwrap(), tokens["after"].as_u64().unwrap());
    assert!(after * 2 < before, "{tokens}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_output_is_shaped_and_the_folded_lines_read_back() {
    let (host, _dir) = host("").await;
    let raw = cargo_fixture();
    let ok = call(&host, "t-ok", "terminal", json!({"command": "sh emit.sh cargo-test 0"})).await;
    assert!(ok.ok, "{:?}", ok.error);
    assert!(
        ok.output.contains("[... 400 passing tests folded (lines 16-415); call read_output with"),
        "{}",
        ok.output
    );
    assert!(lost(&raw, &ok.output).is_empty());
    assert!(ok.output.ends_with("[exit 0]"), "{}", ok.output);
    let metadata = ok.metadata.as_ref().unwrap();
    assert_shaped(metadata, 400);
    assert_eq!(metadata["exit_code"], 0, "the tool's own metadata stays");
    let folded = read_window(&host, "t-ok", &ok.output).await;
    let expected: Vec<&str> = raw.lines().skip(15).take(400).collect();
    assert_eq!(folded, expected);

    // A failed run: its message is shaped the same way, the markers name the error part.
    let failed = call(&host, "t-fail", "terminal", json!({"command": "sh emit.sh cargo-test 101"})).await;
    assert_eq!(failed.code(), Some("command_failed"));
    let message = &failed.error.as_ref().unwrap().message;
    assert!(
        message.contains(r#"{"call_id": "t-fail", "part": "error", "offset": 16, "limit": 400}"#),
        "{message}"
    );
    assert!(lost(&raw, message).is_empty());
    assert_shaped(failed.metadata.as_ref().unwrap(), 400);
    assert_eq!(read_window(&host, "t-fail", message).await, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_calls_and_tools_that_do_not_opt_in_get_the_text_as_printed() {
    let (host, _dir) = host("").await;
    let raw = cargo_fixture();
    let printed =
        call(&host, "t-raw", "terminal", json!({"command": "sh emit.sh cargo-test 0", "raw": true})).await;
    assert_eq!(printed.output, format!("{raw}[exit 0]"));
    assert!(printed.metadata.as_ref().unwrap().get("output_kind").is_none());
    // The hostile plugin's read_path declares no `raw` argument: not shaped.
    let read = call(&host, "r", "read_path", json!({"path": "cargo-test.txt"})).await;
    assert_eq!(read.output, raw);
    assert!(read.metadata.as_ref().is_none_or(|m| m.get("output_kind").is_none()));
    // Diffs and file contents pass byte for byte, with what they were recognised as.
    for (name, command, format) in
        [("git-log-p", "sh emit.sh git-log-p 0", "diff"), ("cat-file", "cat cat-file.txt", "file")]
    {
        let text = fixtures().into_iter().find(|f| f.name == name).unwrap().text;
        let r = call(&host, name, "terminal", json!({ "command": command })).await;
        assert_eq!(r.output, format!("{text}[exit 0]"), "{name}");
        assert_eq!(r.metadata.as_ref().unwrap()["output_kind"], json!({"format": format, "folded_lines": 0}));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_tests_gives_the_whole_log_shaped_unless_raw() {
    let (host, _dir) = host("").await;
    let raw = cargo_fixture();
    let run = call(&host, "rt", "run_tests", json!({})).await;
    assert_eq!(run.code(), Some("tests_failed"));
    let message = &run.error.as_ref().unwrap().message;
    assert!(message.starts_with("FAILED (exit 101") && message.contains("; log:\n"), "{message}");
    assert!(message.contains("400 passing tests folded"), "{message}");
    assert!(lost(&raw, message).is_empty());
    assert_shaped(run.metadata.as_ref().unwrap(), 400);
    let expected: Vec<&str> = raw.lines().skip(15).take(400).collect();
    // The stored message has one line before the log.
    let (offset, _, _) = first_marker(message);
    assert_eq!(offset, 17);
    assert_eq!(read_window(&host, "rt", message).await, expected);

    let tail = call(&host, "rt-raw", "run_tests", json!({"raw": true})).await;
    let message = &tail.error.as_ref().unwrap().message;
    assert!(message.contains("; end of the log:\n") && !message.contains("read_output"), "{message}");
    assert!(message.len() < 8_300 && raw.ends_with(message.split_once(":\n").unwrap().1));
    assert!(tail.metadata.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_turns_shaping_off() {
    let (host, _dir) = host("[output]\nshape = false\n").await;
    let raw = cargo_fixture();
    let printed = call(&host, "t", "terminal", json!({"command": "sh emit.sh cargo-test 0"})).await;
    assert_eq!(printed.output, format!("{raw}[exit 0]"));
    assert!(printed.metadata.as_ref().unwrap().get("output_kind").is_none());
    let run = call(&host, "rt", "run_tests", json!({})).await;
    let message = &run.error.as_ref().unwrap().message;
    assert!(message.contains("; end of the log:\n") && !message.contains("folded"), "{message}");
    // A typo in the section is an error naming it.
    let dir = tempfile::tempdir().unwrap();
    let err =
        Policy::parse("[output]\nshape = \"no\"\n", &dir.path().join("p.toml")).unwrap_err().to_string();
    assert!(err.contains("line 2") && err.contains("bool"), "{err}");
    let err = Policy::parse("[output]\nshap = false\n", &dir.path().join("p.toml")).unwrap_err().to_string();
    assert!(err.contains("shap"), "{err}");
}
