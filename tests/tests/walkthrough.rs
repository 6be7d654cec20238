//! The walkthroughs (`docs/walkthrough-{rust,python,js}.md`) run exactly as written,
//! so the pages and this test cannot drift apart. A page's fenced blocks are its
//! steps, in order, from one temporary directory:
//!
//! - ` ```sh walkthrough ` runs with `sh -eu` where the last step left off (a `cd`
//!   carries over); it must exit 0, or N with `exit=N`;
//! - ` ```text output ` is the whole stdout of the step before; ` ```text stderr `
//!   is how its stderr ends (a warning may come first);
//! - ` ```LANG file=PATH ` writes the block to PATH; ` ```LANG excerpt=PATH ` must
//!   be a part of PATH as it is then (a generated file the page quotes);
//! - other blocks are prose.
//!
//! The differences from a user's terminal: `toolhost` is this build; the project
//! build scripts use the toolchains `scripts/examples` installed (no download) and
//! cargo works offline; a page's `127.0.0.1:8000` is a loopback server this test
//! starts on a free port, serving the page's `index.html`. No packet leaves loopback.

use std::path::PathBuf;
use std::sync::OnceLock;

use toolhost_tests::net::{Reply, Request, server};
use toolhost_tests::{toolchain, toolhost_bin, workspace_root};

/// The address the pages use for the page they fetch.
const PAGE_ADDR: &str = "127.0.0.1:8000";

/// One step of a walkthrough.
#[derive(Debug)]
enum Step {
    /// A shell block, the exit status it must end with, and what it must print.
    Run { script: String, exit: i32, stdout: Option<String>, stderr_end: Option<String> },
    /// A file to write.
    File { path: String, text: String },
    /// A quoted part of a file.
    Excerpt { path: String, text: String },
}

/// The steps of `doc`, in order. Panics on a block this test cannot place (an
/// output with no step before it, an unknown attribute).
fn steps(doc: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.strip_prefix("```") else { continue };
        let mut body = String::new();
        for line in lines.by_ref() {
            if line.starts_with("```") {
                break;
            }
            body.push_str(line);
            body.push('\n');
        }
        let mut words = info.split_whitespace();
        let lang = words.next().unwrap_or_default();
        let attrs: Vec<&str> = words.collect();
        match (lang, attrs.as_slice()) {
            ("sh", ["walkthrough", rest @ ..]) => {
                let exit = match rest {
                    [] => 0,
                    [exit] => exit.strip_prefix("exit=").and_then(|n| n.parse().ok()).expect(info),
                    _ => panic!("unknown attributes: {info}"),
                };
                steps.push(Step::Run { script: body, exit, stdout: None, stderr_end: None });
            }
            ("text", [which @ ("output" | "stderr")]) => match steps.last_mut() {
                Some(Step::Run { stdout, stderr_end, .. }) => {
                    let slot = if *which == "output" { stdout } else { stderr_end };
                    assert!(slot.replace(body).is_none(), "two `{info}` blocks for one step");
                }
                _ => panic!("a `{info}` block must follow a ```sh walkthrough block"),
            },
            (_, [attr]) if attr.starts_with("file=") => {
                steps.push(Step::File { path: attr["file=".len()..].to_string(), text: body });
            }
            (_, [attr]) if attr.starts_with("excerpt=") => {
                steps.push(Step::Excerpt { path: attr["excerpt=".len()..].to_string(), text: body });
            }
            (_, []) => {}
            _ => panic!("unknown attributes: {info}"),
        }
    }
    steps
}

/// The page the walkthroughs fetch: their `index.html`, which they all write alike.
static PAGE: OnceLock<Vec<u8>> = OnceLock::new();

fn page(_: &Request) -> Reply {
    Reply::Ok(PAGE.get().cloned().unwrap_or_default())
}

/// Serve `index.html` from `doc`'s steps on a free loopback port; its address.
async fn serve_page(doc: &[Step]) -> String {
    let text = doc.iter().find_map(|step| match step {
        Step::File { path, text } if path == "index.html" => Some(text.as_bytes().to_vec()),
        _ => None,
    });
    if let Some(text) = text {
        let served = PAGE.get_or_init(|| text.clone());
        assert_eq!(*served, text, "the walkthroughs serve one page: their index.html blocks must match");
    }
    let (addr, _seen) = server(page).await;
    addr.to_string()
}

/// Run `doc`'s steps in a fresh directory with `env` for the shell steps.
async fn walk(doc_name: &str, env: &[(&str, PathBuf)]) {
    let path = workspace_root().join("docs").join(doc_name);
    let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let steps = steps(&doc);
    assert!(steps.iter().any(|s| matches!(s, Step::Run { .. })), "{doc_name} has no ```sh walkthrough block");
    let addr = serve_page(&steps).await;
    let root = tempfile::tempdir().unwrap();
    let mut cwd = root.path().to_path_buf();
    for step in &steps {
        match step {
            Step::File { path, text } => {
                let file = cwd.join(path);
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                std::fs::write(&file, text).unwrap();
            }
            Step::Excerpt { path, text } => {
                let file = std::fs::read_to_string(cwd.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
                assert!(
                    file.contains(text.as_str()),
                    "{doc_name}: not a part of {path}:\n{text}\n--- {path}:\n{file}"
                );
            }
            Step::Run { script, exit, stdout, stderr_end } => {
                let script = script.replace(PAGE_ADDR, &addr);
                let (status, out, err) = run(&script, &mut cwd, env).await;
                let shown =
                    format!("{doc_name}: `{script}` in {}\nstdout:\n{out}\nstderr:\n{err}", cwd.display());
                assert_eq!(status, Some(*exit), "{shown}");
                if let Some(want) = stdout {
                    assert_eq!(out, want.replace(PAGE_ADDR, &addr), "{shown}");
                }
                if let Some(want) = stderr_end {
                    assert!(
                        err.ends_with(&want.replace(PAGE_ADDR, &addr)),
                        "{shown}\nwanted at its end:\n{want}"
                    );
                }
            }
        }
    }
}

/// Run `script` with `sh -eu` in `cwd`, then move `cwd` to where it ended.
async fn run(script: &str, cwd: &mut PathBuf, env: &[(&str, PathBuf)]) -> (Option<i32>, String, String) {
    let marker = tempfile::NamedTempFile::new().unwrap();
    let wrapped = format!("trap 'pwd > \"$WALKTHROUGH_CWD\"' EXIT\n{script}");
    let bin_dir = toolhost_bin().parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut cmd = tokio::process::Command::new("sh");
    cmd.args(["-eu", "-c", &wrapped])
        .current_dir(&*cwd)
        .env("PATH", path)
        .env("WALKTHROUGH_CWD", marker.path())
        .env("TOOLHOST_CACHE_DIR", workspace_root().join("target").join("test-compile-cache"))
        .env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir())
        .env("TOOLHOST_CONFIG_DIR", toolhost_tests::test_config_dir())
        .env_remove("TOOLHOST_LOG")
        .stdin(std::process::Stdio::null());
    // The outer cargo's settings are for the host, not for a project's build.
    for var in ["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_TARGET", "RUSTC_WRAPPER"] {
        cmd.env_remove(var);
    }
    for (key, value) in env {
        cmd.env(key, value);
    }
    let out = cmd.output().await.expect("running sh");
    let ended = std::fs::read_to_string(marker.path()).unwrap();
    *cwd = PathBuf::from(ended.trim_end_matches('\n'));
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

fn cargo_target() -> PathBuf {
    workspace_root().join("target").join("walkthrough-rust")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_walkthrough_runs_as_written() {
    walk(
        "walkthrough-rust.md",
        &[("CARGO_TARGET_DIR", cargo_target()), ("CARGO_NET_OFFLINE", "true".into())],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_walkthrough_runs_as_written() {
    walk("walkthrough-python.md", &[("COMPONENTIZE_PY", toolchain("py/bin/componentize-py"))]).await;
}

/// Also: a tool built without `wasi:http` whose `fetch()` runs anyway fails with an
/// error naming the stub it trapped in and what to do, not a bare trap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_js_walkthrough_runs_as_written() {
    walk("walkthrough-js.md", &[("COMPONENTIZE_JS", toolchain("js/node_modules/.bin/componentize-js"))])
        .await;
}

#[test]
fn steps_are_read_in_order_with_their_outputs() {
    let doc = "# T\n```sh walkthrough\necho hi\n```\n```text output\nhi\n```\n\
               ```rust file=src/lib.rs\nfn f() {}\n```\n```sh\nnot run\n```\n\
               ```sh walkthrough exit=2\nfalse\n```\n```text stderr\nno\n```\n```rust excerpt=a.rs\nx\n```\n";
    let steps = steps(doc);
    assert_eq!(steps.len(), 4, "{steps:?}");
    assert!(matches!(&steps[0], Step::Run { script, exit: 0, stdout: Some(o), stderr_end: None }
            if script == "echo hi\n" && o == "hi\n"));
    assert!(matches!(&steps[1], Step::File { path, text } if path == "src/lib.rs" && text == "fn f() {}\n"));
    assert!(matches!(&steps[2], Step::Run { exit: 2, stderr_end: Some(e), .. } if e == "no\n"));
    assert!(matches!(&steps[3], Step::Excerpt { path, .. } if path == "a.rs"));
}

#[test]
#[should_panic(expected = "must follow a ```sh walkthrough block")]
fn an_output_without_a_step_is_refused() {
    steps("```text output\nhi\n```\n");
}
