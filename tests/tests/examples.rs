//! The example tools in other languages (`plugins/examples/`), built by
//! `scripts/examples` into `target/examples/`: loaded by the CLI with
//! `--plugin` and by the library with `plugin_file`, called on fixtures in a
//! temporary work dir, their output and their error codes checked.
//!
//! A missing component fails these tests (see `toolhost_tests::example_wasm`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::{Value, json};
use toolhost_tests::toolhost::{Host, ToolCall};
use toolhost_tests::{example_wasm, test_engine_settings, toolhost_bin, workspace_root};

const PEOPLE_CSV: &str = "name,age,city\nalice,30,Paris\nbob,41,\ncarol,35.5,Oslo\nalice,34,Paris\n";

const GUIDE_MD: &str = "---\ntitle: front matter\n---\n# Guide\n\nIntro.\n\n## Install ##\n\n```sh\n# not a heading\n```\n\n\
Setext title\n============\n\nPart two\n--------\n\n- a list item\n---\n\n### Deep\n#### Deeper\n";

fn python() -> PathBuf {
    example_wasm("csv_summary")
}

fn js() -> PathBuf {
    example_wasm("markdown_outline")
}

/// Run `toolhost ARGS` with the tests' compile cache.
fn toolhost(args: &[&str]) -> Output {
    Command::new(toolhost_bin())
        .args(args)
        .env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir())
        .env("TOOLHOST_CACHE_DIR", workspace_root().join("target").join("test-compile-cache"))
        .env_remove("TOOLHOST_LOG")
        .output()
        .expect("running toolhost")
}

/// Compile `wasm` into the cache once, so parallel tests do not all compile
/// the same large component at the same time.
fn warm(wasm: &Path) {
    static PY: OnceLock<()> = OnceLock::new();
    static JS: OnceLock<()> = OnceLock::new();
    let once = if wasm.ends_with("csv_summary.wasm") { &PY } else { &JS };
    once.get_or_init(|| {
        let out = toolhost(&["inspect", wasm.to_str().unwrap()]);
        assert!(out.status.success(), "inspect failed: {}", String::from_utf8_lossy(&out.stderr));
    });
}

/// `toolhost call NAME ARGS --plugin WASM --work-dir DIR --json [extra]`:
/// the exit status and the JSON object printed.
fn call(wasm: &Path, dir: &Path, name: &str, args: Value, extra: &[&str]) -> (i32, Value) {
    warm(wasm);
    let args = args.to_string();
    let mut argv = vec![
        "call",
        name,
        &args,
        "--plugin",
        wasm.to_str().unwrap(),
        "--work-dir",
        dir.to_str().unwrap(),
        "--json",
    ];
    argv.extend_from_slice(extra);
    let out = toolhost(&argv);
    let text = String::from_utf8_lossy(&out.stdout);
    let doc = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!("not one JSON object ({e}): {text:?}; stderr: {}", String::from_utf8_lossy(&out.stderr))
    });
    (out.status.code().expect("exited"), doc)
}

fn work_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("people.csv"), PEOPLE_CSV).unwrap();
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    std::fs::write(dir.path().join("docs/guide.md"), GUIDE_MD).unwrap();
    std::fs::write(dir.path().join("blob.bin"), b"\x00\x01\x02binary").unwrap();
    dir
}

fn error(doc: &Value) -> &str {
    doc["error"].as_str().unwrap_or_else(|| panic!("no error in {doc}"))
}

#[test]
fn python_csv_summary_summarises_a_csv_file() {
    let dir = work_dir();
    let (code, doc) =
        call(&python(), dir.path(), "csv_summary", json!({"path": "people.csv"}), &["--stub-sockets"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        doc["output"],
        "people.csv: 4 rows, 3 columns (delimiter \",\")\n\
         - name: text, 3 distinct; most common: \"alice\" (2), \"bob\" (1), \"carol\" (1)\n\
         - age: number, min 30, max 41, mean 35.125\n\
         - city: text, 1 empty, 2 distinct; most common: \"Paris\" (2), \"Oslo\" (1)\n"
    );
    assert_eq!(doc["metadata"]["rows"], 4);
    assert_eq!(
        doc["metadata"]["columns"][1],
        json!({"name": "age", "type": "number", "empty": 0, "min": 30, "max": 41, "mean": 35.125})
    );

    // A quoted number is coerced by the schema's `integer`; the delimiter is detected.
    std::fs::write(dir.path().join("semi.csv"), "id;tag\n1;x\n2;x\n3;y\n").unwrap();
    let (code, doc) = call(
        &python(),
        dir.path(),
        "csv_summary",
        json!({"path": "semi.csv", "top": "1"}),
        &["--stub-sockets"],
    );
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        doc["output"],
        "semi.csv: 3 rows, 2 columns (delimiter \";\")\n- id: integer, min 1, max 3, mean 2\n\
         - tag: text, 2 distinct; most common: \"x\" (2)\n"
    );
}

#[test]
fn python_csv_summary_error_codes() {
    let dir = work_dir();
    let cases = [
        (json!({"path": "missing.csv"}), "not_found: missing.csv does not exist"),
        (json!({"path": "docs"}), "is_directory: docs is a directory, not a CSV file"),
        (json!({"path": "../outside.csv"}), "path_escape: ../outside.csv is outside the work directory"),
        (json!({"path": "blob.bin"}), "binary_file: blob.bin is a binary file, not CSV"),
        (
            json!({"path": "people.csv", "delimiter": "::"}),
            "invalid_args: delimiter must be one character other than a quote or newline, got '::'",
        ),
    ];
    for (args, expected) in cases {
        let (code, doc) = call(&python(), dir.path(), "csv_summary", args.clone(), &["--stub-sockets"]);
        assert_eq!(code, 1, "{args}: {doc}");
        assert_eq!(doc["ok"], false);
        assert_eq!(error(&doc), expected, "{args}");
    }
    // The host validates against the tool's schema before the guest runs.
    let (code, doc) = call(
        &python(),
        dir.path(),
        "csv_summary",
        json!({"path": "people.csv", "top": 50}),
        &["--stub-sockets"],
    );
    assert_eq!(code, 1, "{doc}");
    assert!(error(&doc).starts_with("invalid_args: top"), "{doc}");
}

#[test]
fn python_components_need_stub_sockets() {
    let out = toolhost(&["inspect", python().to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let imports: Vec<&str> = doc["imports"].as_array().unwrap().iter().map(|i| i.as_str().unwrap()).collect();
    assert!(imports.iter().any(|i| i.starts_with("wasi:sockets/tcp@")), "{imports:?}");

    let dir = work_dir();
    warm(&python());
    let args = json!({"path": "people.csv"}).to_string();
    let out = toolhost(&[
        "call",
        "csv_summary",
        &args,
        "--plugin",
        python().to_str().unwrap(),
        "--work-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("capability_denied: wasi:sockets/") && stderr.contains("--stub-sockets"),
        "{stderr}"
    );
}

#[test]
fn js_markdown_outline_lists_headings() {
    let dir = work_dir();
    let (code, doc) = call(&js(), dir.path(), "markdown_outline", json!({"path": "docs/guide.md"}), &[]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        doc["output"],
        "docs/guide.md: 6 headings\n 4  # Guide\n 8    ## Install\n14  # Setext title\n17    ## Part two\n\
         23      ### Deep\n24        #### Deeper\n"
    );
    assert_eq!(doc["metadata"]["headings"][1], json!({"level": 2, "text": "Install", "line": 8}));

    let absolute = dir.path().join("docs/guide.md");
    let args = json!({"path": absolute.to_str().unwrap(), "max_depth": "1"});
    let (code, doc) = call(&js(), dir.path(), "markdown_outline", args, &[]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["output"], "docs/guide.md: 2 headings\n 4  # Guide\n14  # Setext title\n");
}

#[test]
fn js_markdown_outline_error_codes() {
    let dir = work_dir();
    let cases = [
        (json!({"path": "missing.md"}), "not_found: missing.md does not exist"),
        (json!({"path": "docs"}), "is_directory: docs is a directory, not a Markdown file"),
        (json!({"path": "../../etc/passwd"}), "path_escape: ../../etc/passwd is outside the work directory"),
        (json!({"path": "blob.bin"}), "binary_file: blob.bin is a binary file"),
    ];
    for (args, expected) in cases {
        let (code, doc) = call(&js(), dir.path(), "markdown_outline", args.clone(), &[]);
        assert_eq!(code, 1, "{args}: {doc}");
        assert_eq!(error(&doc), expected, "{args}");
    }
    let (code, doc) =
        call(&js(), dir.path(), "markdown_outline", json!({"path": "a.md", "max_depth": 9}), &[]);
    assert_eq!(code, 1, "{doc}");
    assert!(error(&doc).starts_with("invalid_args: max_depth"), "{doc}");
}

#[test]
fn js_components_import_no_network() {
    let out = toolhost(&["inspect", js().to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let imports: Vec<&str> = doc["imports"].as_array().unwrap().iter().map(|i| i.as_str().unwrap()).collect();
    assert!(imports.iter().any(|i| i.starts_with("wasi:filesystem/preopens@")), "{imports:?}");
    assert!(
        !imports.iter().any(|i| i.starts_with("wasi:sockets/") || i.starts_with("wasi:http/")),
        "{imports:?}"
    );
}

/// Both examples beside the builtins in one library host: listed read-only,
/// and run in one batch (read-only calls run in parallel).
#[tokio::test(flavor = "multi_thread")]
async fn the_library_loads_both_examples_beside_the_builtins() {
    warm(&python());
    warm(&js());
    let dir = work_dir();
    let host = Host::builder()
        .work_dir(dir.path())
        .engine_settings(test_engine_settings())
        .stub_sockets(true)
        .plugin_file(python())
        .plugin_file(js())
        .build()
        .await
        .expect("the examples load");
    let defs = host.definitions();
    for name in ["csv_summary", "markdown_outline", "read_file"] {
        assert!(defs.iter().any(|d| d.name == name), "{name} missing");
    }
    let registry = host.registry();
    for name in ["csv_summary", "markdown_outline"] {
        let spec = registry.iter().map(|t| t.spec()).find(|s| s.name == name).expect(name);
        assert!(spec.read_only && !spec.destructive, "{name}");
        assert_eq!(spec.parameters["additionalProperties"], false, "{name}");
    }
    let results = host
        .execute_batch(vec![
            ToolCall::new("csv_summary", json!({"path": "people.csv", "top": 1})),
            ToolCall::new("markdown_outline", json!({"path": "docs/guide.md", "max_depth": 2})),
            ToolCall::new("csv_summary", json!({"path": "nope.csv"})),
        ])
        .await;
    assert!(results[0].ok, "{:?}", results[0].error);
    assert!(
        results[0].output.contains("- name: text, 3 distinct; most common: \"alice\" (2)\n"),
        "{}",
        results[0].output
    );
    assert!(results[1].ok, "{:?}", results[1].error);
    assert!(results[1].output.starts_with("docs/guide.md: 4 headings\n"), "{}", results[1].output);
    let err = results[2].error.as_ref().expect("a missing file fails");
    assert_eq!(err.code, "not_found");
}

/// Every file under `dir`, at any depth.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() { files.extend(files_under(&path)) } else { files.push(path) }
    }
    files
}

/// The 18.9 MB Python component imports `wasi:sockets`, which only `stub_sockets`
/// grants: without it the component is refused from its bytes, with nothing
/// compiled (the compile cache stays empty) and in well under the seconds a
/// compile takes.
#[tokio::test(flavor = "multi_thread")]
async fn a_large_component_without_its_grant_is_refused_before_compiling() {
    let cache = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let built = Host::builder()
        .without_builtins()
        .engine_settings(toolhost_tests::toolhost::EngineSettings {
            cache_dir: Some(cache.path().to_path_buf()),
            ..toolhost_tests::toolhost::EngineSettings::default()
        })
        .plugin_file(python())
        .build()
        .await;
    let took = started.elapsed();
    let Err(err) = built else { panic!("the component loaded without the grant its imports need") };
    match &err {
        toolhost_tests::toolhost::LoadError::CapabilityDenied { interface, why } => {
            assert!(interface.starts_with("wasi:sockets/"), "{interface}");
            assert!(why.contains("--stub-sockets"), "{why}");
        }
        other => panic!("expected capability_denied, got {other:?}"),
    }
    assert!(err.to_string().starts_with("capability_denied: "), "{err}");
    assert_eq!(files_under(cache.path()), Vec::<PathBuf>::new(), "nothing was compiled");
    assert!(took < std::time::Duration::from_secs(2), "refused after {took:?}");
}
