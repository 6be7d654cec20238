//! `toolhost new --lang rust|python|js NAME`: the generated projects build
//! (with the toolchains `scripts/examples` installs, and no network: the Rust
//! one builds `--offline` with this workspace's lockfile), load in the host,
//! and the test invocation their README gives works as written.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use toolhost_tests::{toolchain, toolhost_bin, workspace_root};

const NOTES: &str = "one two\nthree\n";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn cache_dir() -> PathBuf {
    workspace_root().join("target").join("test-compile-cache")
}

/// Run `toolhost ARGS` in `cwd`.
fn toolhost(cwd: &Path, args: &[&str]) -> Output {
    Command::new(toolhost_bin())
        .current_dir(cwd)
        .args(args)
        .env("TOOLHOST_CACHE_DIR", cache_dir())
        .env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir())
        .env_remove("TOOLHOST_LOG")
        .output()
        .expect("running toolhost")
}

/// `toolhost new ARGS` in `parent`, which must succeed.
fn new_project(parent: &Path, args: &[&str]) -> String {
    let mut argv = vec!["new"];
    argv.extend_from_slice(args);
    let out = toolhost(parent, &argv);
    assert!(out.status.success(), "toolhost new {args:?} failed: {}", text(&out.stderr));
    text(&out.stdout)
}

/// Run the project's `build.sh` with `env` and extra arguments; it must
/// leave `TOOL.wasm` in the project.
fn build(project: &Path, tool: &str, env: &[(&str, PathBuf)], args: &[&str]) -> PathBuf {
    let mut cmd = Command::new(project.join("build.sh"));
    cmd.args(args).current_dir(project);
    // The outer cargo's settings are for the host, not for this build.
    for var in
        ["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_TARGET", "RUSTC_WRAPPER", "CARGO_TARGET_DIR"]
    {
        cmd.env_remove(var);
    }
    for (key, value) in env {
        cmd.env(key, value);
    }
    let out = cmd.output().expect("running build.sh");
    assert!(out.status.success(), "build.sh failed:\n{}\n{}", text(&out.stdout), text(&out.stderr));
    let wasm = project.join(format!("{tool}.wasm"));
    assert!(wasm.is_file(), "build.sh left no {}", wasm.display());
    wasm
}

/// Call the built tool on a fixture, then its error path, then run the
/// README's test invocation exactly as written, in the project directory.
fn check_tool(project: &Path, tool: &str, wasm: &Path, extra: &[&str]) {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("notes.txt"), NOTES).unwrap();
    let call = |args: Value| {
        let args = args.to_string();
        let mut argv = vec![
            "call",
            tool,
            &args,
            "--plugin",
            wasm.to_str().unwrap(),
            "--work-dir",
            work.path().to_str().unwrap(),
        ];
        argv.extend_from_slice(extra);
        argv.push("--json");
        let out = toolhost(work.path(), &argv);
        let doc: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {} / {}", text(&out.stdout), text(&out.stderr)));
        (out.status.code(), doc)
    };
    let (code, doc) = call(json!({"path": "notes.txt"}));
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(doc["output"], "notes.txt: 2 lines, 3 words, 14 bytes");
    assert_eq!(doc["metadata"], json!({"path": "notes.txt", "lines": 2, "words": 3, "bytes": 14}));
    let (code, doc) = call(json!({"path": "gone.txt"}));
    assert_eq!(code, Some(1), "{doc}");
    assert_eq!(doc["error"], "not_found: gone.txt does not exist");
    let (code, doc) = call(json!({"path": "../x"}));
    assert_eq!(code, Some(1), "{doc}");
    assert_eq!(doc["error"], "path_escape: ../x is outside the work directory");

    // The README's invocation, with this build's toolhost first on PATH.
    let readme = std::fs::read_to_string(project.join("README.md")).unwrap();
    let line =
        readme.lines().find(|l| l.starts_with("toolhost call ")).expect("the README has a test invocation");
    let bin_dir = toolhost_bin().parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new("sh")
        .args(["-c", line])
        .current_dir(project)
        .env("PATH", path)
        .env("TOOLHOST_CACHE_DIR", cache_dir())
        .env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir())
        .output()
        .unwrap();
    assert!(out.status.success(), "`{line}` failed: {}", text(&out.stderr));
    let lines = readme.matches('\n').count();
    let expected = format!(
        "README.md: {lines} lines, {} words, {} bytes\n",
        readme.split_whitespace().count(),
        readme.len()
    );
    assert_eq!(text(&out.stdout), expected, "`{line}`");
}

#[test]
fn a_rust_project_builds_and_loads() {
    let parent = tempfile::tempdir().unwrap();
    let sdk = workspace_root().join("guest-sdk");
    let printed =
        new_project(parent.path(), &["--lang", "rust", "word-count", "--sdk-path", sdk.to_str().unwrap()]);
    assert!(printed.contains("cd word-count && ./build.sh"), "{printed}");
    let project = parent.path().join("word-count");
    let manifest = std::fs::read_to_string(project.join("Cargo.toml")).unwrap();
    let sdk = sdk.canonicalize().unwrap();
    assert!(manifest.contains(&format!("toolhost-guest = {{ path = \"{}\" }}", sdk.display())), "{manifest}");
    assert_eq!(
        std::fs::read_to_string(project.join("wit/plugin.wit")).unwrap(),
        include_str!("../../wit/plugin.wit")
    );
    // No network: the crates this workspace already fetched, at its versions.
    std::fs::copy(workspace_root().join("Cargo.lock"), project.join("Cargo.lock")).unwrap();
    let target = workspace_root().join("target").join("new-project-rust");
    let wasm = build(&project, "word_count", &[("CARGO_TARGET_DIR", target)], &["--offline"]);
    check_tool(&project, "word_count", &wasm, &[]);
}

#[test]
fn a_python_project_builds_and_loads() {
    let parent = tempfile::tempdir().unwrap();
    new_project(parent.path(), &["--lang", "python", "line-stats"]);
    let project = parent.path().join("line-stats");
    let cpy = toolchain("py/bin/componentize-py");
    let wasm = build(&project, "line_stats", &[("COMPONENTIZE_PY", cpy)], &[]);
    check_tool(&project, "line_stats", &wasm, &["--stub-sockets"]);
}

#[test]
fn a_js_project_builds_and_loads() {
    let parent = tempfile::tempdir().unwrap();
    new_project(parent.path(), &["--lang", "js", "js-count"]);
    let project = parent.path().join("js-count");
    let cjs = toolchain("js/node_modules/.bin/componentize-js");
    let wasm = build(&project, "js_count", &[("COMPONENTIZE_JS", cjs)], &[]);
    check_tool(&project, "js_count", &wasm, &[]);
}

#[test]
fn new_refuses_bad_names_existing_directories_and_misplaced_options() {
    let parent = tempfile::tempdir().unwrap();
    let refused = |args: &[&str], needle: &str| {
        let mut argv = vec!["new"];
        argv.extend_from_slice(args);
        let out = toolhost(parent.path(), &argv);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(needle), "{args:?}: {}", text(&out.stderr));
    };
    for bad in ["Tool", "2tool", "../escape", "a/b", "tool-", "self"] {
        refused(&["--lang", "python", bad], "invalid NAME");
    }
    refused(&["--lang", "cobol", "tool"], "invalid value 'cobol'");
    refused(&["--lang", "python", "tool", "--sdk-path", "."], "for --lang rust only");
    refused(
        &["--lang", "rust", "tool", "--sdk-path", parent.path().to_str().unwrap()],
        "no toolhost-guest crate",
    );

    std::fs::create_dir(parent.path().join("taken")).unwrap();
    std::fs::write(parent.path().join("taken/keep.txt"), "mine").unwrap();
    refused(&["--lang", "js", "taken"], "already exists; refusing to overwrite it");
    assert_eq!(std::fs::read_to_string(parent.path().join("taken/keep.txt")).unwrap(), "mine");
    assert_eq!(std::fs::read_dir(parent.path().join("taken")).unwrap().count(), 1);

    // Nothing was created for the refused names.
    let names: Vec<String> = std::fs::read_dir(parent.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["taken"]);
}

#[test]
fn a_rust_project_defaults_to_the_sdk_of_this_checkout() {
    let parent = tempfile::tempdir().unwrap();
    new_project(parent.path(), &["--lang", "rust", "wc"]);
    let manifest = std::fs::read_to_string(parent.path().join("wc/Cargo.toml")).unwrap();
    let sdk = workspace_root().join("guest-sdk").canonicalize().unwrap();
    assert!(manifest.contains(&format!("path = \"{}\"", sdk.display())), "{manifest}");
    assert!(manifest.contains("\n[workspace]\n"), "a workspace of its own: {manifest}");
    let build = parent.path().join("wc/build.sh");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&build).unwrap().permissions().mode() & 0o111, 0o111);
    }
}
