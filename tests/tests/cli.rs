//! The `toolhost` command end to end: the built binary run as a process,
//! its output and its exit status (0 ok, 1 the tool failed or the component
//! is refused, 2 usage or load error).

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use sha2::{Digest, Sha256};
use toolhost_tests::{FS_TOOLS, HOSTILE_TOOLS, HOSTILE_WASM, SOCKETS_WASM, toolhost_bin};

/// Run `toolhost ARGS` in `cwd`, with `env` added.
fn run_in(cwd: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(toolhost_bin());
    cmd.current_dir(cwd)
        .args(args)
        .env_remove("TOOLHOST_LOG")
        .env("TOOLHOST_CONFIG_DIR", toolhost_tests::test_config_dir())
        .env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir());
    for (key, value) in env {
        cmd.env(key, value);
    }
    cmd.output().expect("running toolhost")
}

/// Run `toolhost ARGS` in a fresh temporary directory.
fn run(args: &[&str]) -> Output {
    let cwd = tempfile::tempdir().unwrap();
    run_in(cwd.path(), args, &[])
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn status(out: &Output) -> i32 {
    out.status.code().unwrap_or_else(|| panic!("killed by a signal: {:?}", out.status))
}

/// The single JSON document on stdout.
fn json_stdout(out: &Output) -> Value {
    let text = stdout(out);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {text:?}"))
}

fn sha256_of_file(path: &str) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
}

/// `toolhost call … --json` in `dir`: exactly one line, one JSON object.
fn call_json(dir: &Path, name: &str, args: &str, extra: &[&str]) -> (i32, Value) {
    let work = dir.to_str().unwrap();
    let mut argv = vec!["call", name, args, "--work-dir", work, "--json"];
    argv.extend_from_slice(extra);
    let out = run(&argv);
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1, "expected one line of JSON, got {text:?}; stderr {}", stderr(&out));
    (status(&out), json_stdout(&out))
}

/// Tool names as `list` prints them: sorted, unique, with every builtin
/// filesystem tool among them.
fn assert_sorted_and_has_builtins(names: &[&str]) {
    assert!(names.windows(2).all(|w| w[0] < w[1]), "not sorted or not unique: {names:?}");
    for builtin in FS_TOOLS {
        assert!(names.contains(&builtin), "{builtin} is missing from {names:?}");
    }
}

#[test]
fn version_exits_zero() {
    let out = run(&["--version"]);
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), format!("toolhost {}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn list_prints_the_builtins_sorted() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["list", "--work-dir", dir.path().to_str().unwrap()]);
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let names: Vec<&str> = text.lines().map(|l| l.split_whitespace().next().unwrap_or("")).collect();
    assert_sorted_and_has_builtins(&names);
    let read = text.lines().find(|l| l.starts_with("read_file ")).unwrap();
    assert!(read.contains("read-only"), "{read}");
    let write = text.lines().find(|l| l.starts_with("write_file ")).unwrap();
    assert!(write.contains("destructive"), "{write}");
}

#[test]
fn list_json_has_sorted_tools_with_object_schemas_and_plugins() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["list", "--json", "--work-dir", dir.path().to_str().unwrap()]);
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let doc = json_stdout(&out);
    let tools = doc["tools"].as_array().expect("a tools array");
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_sorted_and_has_builtins(&names);
    for tool in tools {
        assert_eq!(tool["parameters"]["type"], "object", "{tool}");
        if FS_TOOLS.contains(&tool["name"].as_str().unwrap()) {
            assert_eq!(tool["plugin"], "builtin:fs", "{tool}");
        }
        assert!(tool["description"].as_str().is_some_and(|d| !d.is_empty()), "{tool}");
    }
    let plugins = doc["plugins"].as_array().expect("a plugins array");
    assert_eq!(plugins[0]["name"], "builtin:fs");
    for plugin in plugins {
        assert!(plugin["name"].as_str().unwrap().starts_with("builtin:"), "no --plugin was given: {plugin}");
        let sha = plugin["sha256"].as_str().unwrap();
        assert!(sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit()), "{sha}");
    }
    assert_eq!(doc["work_dir"], dir.path().canonicalize().unwrap().display().to_string());
    assert_eq!(doc["limits"]["clamp_bytes"], 30_000);
}

#[test]
fn call_json_prints_one_object_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.txt"), "hello\nthere\n").unwrap();
    let (code, doc) = call_json(dir.path(), "read_file", r#"{"path":"x.txt"}"#, &[]);
    assert_eq!(code, 0, "{doc}");
    let object = doc.as_object().expect("a JSON object");
    for key in ["ok", "output", "error", "display", "metadata"] {
        assert!(object.contains_key(key), "missing {key}: {doc}");
    }
    let unexpected: Vec<&String> = object
        .keys()
        .filter(|k| {
            !["ok", "output", "error", "display", "metadata", "call_id", "permission"].contains(&k.as_str())
        })
        .collect();
    assert!(unexpected.is_empty(), "unexpected keys {unexpected:?}: {doc}");
    assert_eq!(doc["ok"], true);
    let hash = hex::encode(Sha256::digest(b"hello\nthere\n"));
    assert_eq!(doc["output"], format!("[sha256 {hash}, 2 lines, 12 B]\n     1\thello\n     2\tthere\n"));
    assert_eq!(doc["error"], Value::Null);
    assert_eq!(doc["metadata"]["sha256"], hex::encode(Sha256::digest(b"hello\nthere\n")));
    assert_eq!(doc["metadata"]["total_lines"], 2);
    assert_eq!(doc["permission"], serde_json::json!({"allowed": true, "reason": "read-only tool"}));
}

#[test]
fn call_without_json_prints_the_output() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.txt"), "plain\n").unwrap();
    let out = run(&["call", "read_file", r#"{"path":"x.txt"}"#, "--work-dir", dir.path().to_str().unwrap()]);
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let hash = hex::encode(Sha256::digest(b"plain\n"));
    assert_eq!(stdout(&out), format!("[sha256 {hash}, 1 line, 6 B]\n     1\tplain\n"));

    let out =
        run(&["call", "read_file", r#"{"path":"gone.txt"}"#, "--work-dir", dir.path().to_str().unwrap()]);
    assert_eq!(status(&out), 1);
    assert_eq!(stdout(&out), "");
    assert!(stderr(&out).contains("not_found: gone.txt does not exist"), "{}", stderr(&out));
}

#[test]
fn a_failing_call_prints_ok_false_and_exits_one() {
    let dir = tempfile::tempdir().unwrap();
    let (code, doc) = call_json(dir.path(), "read_file", r#"{"path":"missing.txt"}"#, &[]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["output"], "");
    let error = doc["error"].as_str().expect("error is a string");
    assert!(error.starts_with("not_found: "), "{error}");
    assert!(error.contains("missing.txt"), "{error}");
}

#[test]
fn a_path_escape_is_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let (code, doc) = call_json(dir.path(), "read_file", r#"{"path":"../../etc/passwd"}"#, &[]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["ok"], false);
    let error = doc["error"].as_str().unwrap();
    assert!(error.starts_with("path_escape: "), "{error}");
    assert!(!doc.to_string().contains("root:"));
}

#[test]
fn an_unknown_tool_exits_one() {
    let dir = tempfile::tempdir().unwrap();
    let (code, doc) = call_json(dir.path(), "nope", "{}", &[]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["error"], "unknown_tool: nope");
}

#[test]
fn bad_args_json_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().to_str().unwrap();
    let out = run(&["call", "read_file", "{not json", "--work-dir", work]);
    assert_eq!(status(&out), 2, "stdout {:?} stderr {:?}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains("ARGS_JSON"), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");

    // Valid JSON that is not an object.
    let out = run(&["call", "read_file", "[1]", "--work-dir", work, "--json"]);
    assert_eq!(status(&out), 2);
    assert!(stderr(&out).contains("ARGS_JSON must be a JSON object"), "{}", stderr(&out));
}

#[test]
fn unknown_subcommands_and_flags_are_usage_errors() {
    let out = run(&["frobnicate"]);
    assert_eq!(status(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("frobnicate"), "{}", stderr(&out));
    let out = run(&["list", "--no-such-flag"]);
    assert_eq!(status(&out), 2, "{}", stderr(&out));
    let out = run(&[]);
    assert_eq!(status(&out), 2, "{}", stderr(&out));
}

#[test]
fn a_missing_work_dir_is_a_load_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("absent");
    let out = run(&["call", "read_file", r#"{"path":"x"}"#, "--work-dir", missing.to_str().unwrap()]);
    assert_eq!(status(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("bad work dir"), "{}", stderr(&out));
}

#[test]
fn a_plugin_flag_makes_its_tools_callable() {
    let dir = tempfile::tempdir().unwrap();
    let (code, doc) = call_json(dir.path(), "noop", "{}", &["--plugin", HOSTILE_WASM]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["output"], "ok");

    // Without the flag the tool does not exist.
    let (code, doc) = call_json(dir.path(), "noop", "{}", &[]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["error"], "unknown_tool: noop");

    // A refused plugin fails the whole command.
    let out = run(&["list", "--work-dir", dir.path().to_str().unwrap(), "--plugin", SOCKETS_WASM]);
    assert_eq!(status(&out), 2);
    assert!(stderr(&out).contains("capability_denied: wasi:sockets/"), "{}", stderr(&out));
}

#[test]
fn the_tools_flag_narrows_the_list() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().to_str().unwrap();
    let out =
        run(&["list", "--json", "--work-dir", work, "--plugin", HOSTILE_WASM, "--tools", "read_file,noop"]);
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let doc = json_stdout(&out);
    let names: Vec<&str> =
        doc["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["noop", "read_file"]);
}

#[test]
fn the_compile_cache_is_reported_by_list_json() {
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let args = ["list", "--json", "--work-dir", work.path().to_str().unwrap(), "--plugin", HOSTILE_WASM];
    let cached = |out: &Output| -> Vec<(String, bool)> {
        assert_eq!(status(out), 0, "{}", stderr(out));
        json_stdout(out)["plugins"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["name"].as_str().unwrap().to_string(), p["cached"].as_bool().unwrap()))
            .collect()
    };
    let env = [("TOOLHOST_CACHE_DIR", cache.path())];
    let first = cached(&run_in(work.path(), &args, &env));
    assert_eq!(first.first().map(|p| p.0.as_str()), Some("builtin:fs"));
    assert_eq!(first.last().map(|p| p.0.as_str()), Some(HOSTILE_WASM));
    // The builtins' code is in the binary (precompiled at build time); the
    // plugin from a file is compiled on the first run.
    let builtin = |name: &str| name.starts_with("builtin:");
    assert!(
        first.iter().all(|(name, cached)| *cached == builtin(name)),
        "only the builtins are cached: {first:?}"
    );
    let second = cached(&run_in(work.path(), &args, &env));
    assert_eq!(second.len(), first.len());
    assert!(second.iter().all(|(_, cached)| *cached), "every plugin loads from the cache: {second:?}");
}

#[test]
fn inspect_shows_hash_imports_and_tools() {
    let out = run(&["inspect", HOSTILE_WASM]);
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let sha_line = text.lines().find(|l| l.starts_with("sha256:")).unwrap_or_else(|| panic!("{text}"));
    assert_eq!(sha_line.trim_start_matches("sha256:").trim(), sha256_of_file(HOSTILE_WASM));
    let size = std::fs::metadata(HOSTILE_WASM).unwrap().len();
    assert!(text.contains(&format!("size:    {size} bytes")), "{text}");
    // The hostile guest never logs, so it imports the toolhost types but not
    // `toolhost:plugin/log`; what it uses of WASI is listed beside them.
    let imports: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "imports:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(str::trim)
        .collect();
    assert!(imports.contains(&"toolhost:plugin/types@0.1.0"), "{imports:?}");
    assert!(imports.iter().any(|i| i.starts_with("wasi:filesystem/preopens@")), "{imports:?}");
    assert!(
        imports.iter().all(|i| i.starts_with("toolhost:plugin/") || i.starts_with("wasi:")),
        "{imports:?}"
    );
    assert!(!text.contains("refused"), "{text}");
    let tools_at = text.find("\ntools:\n").unwrap_or_else(|| panic!("no tools section: {text}"));
    let tools: Vec<&str> = text[tools_at..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.trim().split([':', ' ']).next().unwrap_or(""))
        .collect();
    assert_eq!(tools, HOSTILE_TOOLS, "{text}");
    assert!(text.contains("  noop (read-only): Does nothing."), "{text}");

    let out = run(&["inspect", HOSTILE_WASM, "--json"]);
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let doc = json_stdout(&out);
    assert_eq!(doc["sha256"], sha256_of_file(HOSTILE_WASM));
    assert_eq!(doc["refused"], Value::Null);
    assert_eq!(doc["tools"].as_array().unwrap().len(), HOSTILE_TOOLS.len());
    let json_imports: Vec<&str> =
        doc["imports"].as_array().unwrap().iter().map(|i| i.as_str().unwrap()).collect();
    assert_eq!(json_imports, imports, "the text and JSON reports list the same imports");
}

#[test]
fn inspect_of_a_sockets_plugin_shows_the_stub_its_entry_needs() {
    let out = run(&["inspect", SOCKETS_WASM]);
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.lines().any(|l| l.trim().starts_with("wasi:sockets/")), "imports listed: {text}");
    assert!(text.contains("  sockets:    imported"), "what it asks for: {text}");
    assert!(text.contains("\ntools:\n  connect: Opens a TCP connection."), "{text}");
    // The entry `add` would write links the sockets stubbed; nothing else grants them.
    assert!(text.contains("[plugins.toolhost_sockets]\n"), "{text}");
    assert!(text.contains("sockets = \"stub\"\n"), "{text}");
    assert!(!text.contains("\nrefused:"), "{text}");
    let sha_line = text.lines().find(|l| l.starts_with("sha256:")).unwrap();
    assert_eq!(sha_line.trim_start_matches("sha256:").trim(), sha256_of_file(SOCKETS_WASM));
}

#[test]
fn inspect_of_a_file_that_is_not_a_component_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.wasm");
    std::fs::write(&junk, b"definitely not wasm").unwrap();
    let out = run(&["inspect", junk.to_str().unwrap()]);
    assert_eq!(status(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("not a loadable WebAssembly component"), "{}", stderr(&out));
    let out = run(&["inspect", dir.path().join("absent.wasm").to_str().unwrap()]);
    assert_eq!(status(&out), 2, "{}", stderr(&out));
}

#[test]
fn limit_flags_reach_the_sandbox() {
    let dir = tempfile::tempdir().unwrap();

    let started = std::time::Instant::now();
    let (code, doc) = call_json(dir.path(), "spin", "{}", &["--plugin", HOSTILE_WASM, "--timeout-ms", "300"]);
    assert_eq!(code, 1, "{doc}");
    let error = doc["error"].as_str().unwrap();
    assert!(error.starts_with("timeout: ") && error.contains("300 ms"), "{error}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "took {:?}", started.elapsed());

    let (code, doc) = call_json(
        dir.path(),
        "spin",
        "{}",
        &["--plugin", HOSTILE_WASM, "--fuel", "5000000", "--mode", "yolo"],
    );
    assert_eq!(code, 1, "{doc}");
    let error = doc["error"].as_str().unwrap();
    assert!(error.starts_with("fuel_exhausted: ") && error.contains("5000000 fuel"), "{error}");

    let (code, doc) = call_json(
        dir.path(),
        "hog",
        "{}",
        &["--plugin", HOSTILE_WASM, "--memory-mib", "32", "--mode", "yolo"],
    );
    assert_eq!(code, 1, "{doc}");
    let error = doc["error"].as_str().unwrap();
    assert!(error.starts_with("memory_limit: ") && error.contains("32 MiB"), "{error}");
}

#[test]
fn a_bad_limit_flag_is_a_usage_error_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().to_str().unwrap();
    for (flag, value, needle) in [
        ("--timeout-ms", "0", "--timeout-ms: 0 is too small: it must be at least 1"),
        ("--memory-mib", "lots", "--memory-mib: `lots` is not a whole number of at least 1"),
        ("--fuel", "-3", "--fuel: `-3` is not a whole number"),
        ("--clamp-bytes", "0", "--clamp-bytes: 0 is too small"),
        ("--memory-mib", "99999999999999999999", "--memory-mib: 99999999999999999999 is too large: at most"),
    ] {
        let out = run(&["call", "read_file", "{}", "--work-dir", work, &format!("{flag}={value}")]);
        assert_eq!(status(&out), 2, "{flag} {value}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{flag} {value}: {}", stderr(&out));
        assert_eq!(stdout(&out), "");
    }
    // `_` groups digits, as in the policy file.
    let (code, doc) = call_json(dir.path(), "list_dir", r#"{"path": "."}"#, &["--fuel", "100_000_000_000"]);
    assert_eq!(code, 0, "{doc}");
}

#[test]
fn clamp_bytes_cuts_what_the_model_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (code, doc) = call_json(
        dir.path(),
        "big_output",
        r#"{"bytes": 50000}"#,
        &["--plugin", HOSTILE_WASM, "--clamp-bytes", "1000"],
    );
    assert_eq!(code, 0, "{doc}");
    let output = doc["output"].as_str().unwrap();
    let call_id = doc["call_id"].as_str().expect("the JSON names the call id");
    assert!(output.starts_with("line 0\n"), "{output}");
    let marker =
        output.lines().find(|l| l.starts_with("[... ")).unwrap_or_else(|| panic!("no marker: {output}"));
    assert!(marker.contains("omitted from the middle") && marker.contains(call_id), "{marker}");
    assert!(output.len() < 1300, "{} bytes", output.len());
    // What was cut, as the result carries it.
    let omitted = &doc["omitted"];
    let (lines, bytes) = (omitted["lines"].as_u64(), omitted["bytes"].as_u64());
    let (Some(lines), Some(bytes)) = (lines, bytes) else { panic!("no omitted lines and bytes: {doc}") };
    assert!(bytes > 40_000 && lines > 1000, "{omitted}");
    assert!(marker.contains(&format!("[... {lines} lines ({bytes} bytes) omitted")), "{marker} {omitted}");

    // Quoted numbers are coerced on the command line too.
    let (code, doc) = call_json(dir.path(), "big_output", r#"{"bytes": "20"}"#, &["--plugin", HOSTILE_WASM]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["output"], "line 0\nline 1\nline 2\n");
}

#[test]
fn call_json_shows_what_the_hooks_said() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let policy = elsewhere.path().join("policy.toml");
    std::fs::write(
        &policy,
        "[[hooks]]\nevent = \"pre-tool-use\"\nmatcher = \"write_file\"\n\
         command = [\"sh\", \"-c\", \"cat >/dev/null; echo '{\\\"decision\\\": \\\"allow\\\", \\\"reason\\\": \\\"ok by the hook\\\"}'\"]\n",
    )
    .unwrap();
    let (code, json) = call_json(
        dir.path(),
        "write_file",
        r#"{"path": "a.txt", "content": "x"}"#,
        &["--policy", policy.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["permission"]["reason"], "hook allowed: ok by the hook", "{json}");
    assert_eq!(json["permission"]["hooks"][0]["decision"], "allow", "{json}");
    assert!(dir.path().join("a.txt").exists());
}
