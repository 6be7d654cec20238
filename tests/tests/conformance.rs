//! The official MCP conformance runner (`@modelcontextprotocol/conformance`,
//! pinned in `scripts/toolchains/mcp/`, run on the Node.js 22+ that
//! `scripts/mcp-clients` installs) against `toolhost serve --http` on
//! 127.0.0.1, for the scenarios each revision requires (`--requirements
//! 2026-07-28` and `2025-11-25`).
//!
//! Every scenario is classified below, as `docs/conformance.md` explains: the
//! ones that apply to a server of tools must pass whole; the others (prompts,
//! resources, completions, logging, sampling, the tasks extension, fixture
//! tools of the SDKs' own test server) may fail only in the checks listed for
//! them, and a scenario the runner adds that is not classified fails the test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use toolhost_tests::servers::Instance;
use toolhost_tests::workspace_root;

/// A scenario that applies: every check passes (or is skipped by the runner).
const PASS: &[&str] = &[
    "server-initialize",
    "server-session-lifecycle",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-error",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
    "http-header-validation",
    "sep-2164-resource-not-found",
    "input-required-result-missing-input-response",
    "input-required-result-unsupported-methods",
    "input-required-result-ignore-extra-params",
    "input-required-result-validate-input",
    "tasks-status-notifications",
];

/// Scenarios that do not apply, the checks that may fail in them, and why.
const NOT_APPLICABLE: &[(&str, &[&str], &str)] = &[
    (
        "server-stateless",
        &["sep-2575-server-rejects-undeclared-capability", "sep-2575-missing-capability-http-400"],
        "probes a fixture tool that needs the client's sampling capability; toolhost's tools never ask a client to sample",
    ),
    (
        "completion-complete",
        &["completion-complete"],
        "completions are for prompt and resource arguments: none served",
    ),
    ("logging-set-level", &["logging-set-level"], "no logging capability: the host logs to stderr"),
    ("tools-call-with-logging", &["tools-call-with-logging"], "no logging capability"),
    ("tools-call-image", &["tools-call-image"], "calls the fixture tool test_image_content"),
    ("tools-call-audio", &["tools-call-audio"], "tools return text and images, never audio"),
    ("tools-call-embedded-resource", &["tools-call-embedded-resource"], "no resources"),
    ("tools-call-mixed-content", &["tools-call-mixed-content"], "needs audio and resource content"),
    (
        "tools-call-with-progress",
        &["tools-call-with-progress"],
        "calls the fixture tool test_tool_with_progress",
    ),
    ("tools-call-sampling", &["tools-call-sampling"], "no tool asks the client to sample"),
    ("tools-call-elicitation", &["tools-call-elicitation"], "calls the fixture tool test_elicitation"),
    (
        "elicitation-sep1034-defaults",
        &["elicitation-sep1034-general"],
        "fixture tool test_client_elicitation_defaults",
    ),
    (
        "elicitation-sep1330-enums",
        &["elicitation-sep1330-general"],
        "fixture tool test_elicitation_sep1330_enums",
    ),
    ("server-sse-polling", &["incoming-sse-event"], "fixture tool test_reconnection (pending scenario)"),
    ("resources-list", &["resources-list"], "no resources"),
    ("resources-read-text", &["resources-read-text"], "no resources"),
    ("resources-read-binary", &["resources-read-binary"], "no resources"),
    ("resources-templates-read", &["resources-templates-read"], "no resources"),
    ("resources-subscribe", &["resources-subscribe"], "no resources"),
    ("resources-unsubscribe", &["resources-unsubscribe"], "no resources"),
    ("prompts-list", &["prompts-list"], "no prompts"),
    ("prompts-get-simple", &["prompts-get-simple"], "no prompts"),
    ("prompts-get-with-args", &["prompts-get-with-args"], "no prompts"),
    ("prompts-get-embedded-resource", &["prompts-get-embedded-resource"], "no prompts"),
    ("prompts-get-with-image", &["prompts-get-with-image"], "no prompts"),
    (
        "caching",
        &[
            "sep-2549-prompts-list-caching-hints",
            "sep-2549-resources-list-caching-hints",
            "sep-2549-resources-templates-list-caching-hints",
        ],
        "tools/list's ttlMs and cacheScope pass; prompts and resources are not served",
    ),
    (
        "json-schema-2020-12",
        &["json-schema-2020-12-tool-found"],
        "fixture tool json_schema_2020_12_tool (pending)",
    ),
    (
        "http-custom-header-server-validation",
        &[
            "sep-2243-server-no-xmcp-tool",
            "sep-2243-server-decode-base64",
            "sep-2243-server-validate-param-match",
            "sep-2243-server-reject-invalid-param-chars",
            "sep-2243-server-reject-param-mismatch",
        ],
        "no tool declares x-mcp-header parameters (SEP-2243, pending)",
    ),
    // Approvals through the client (issue 18, branch `approvals`) and fixture
    // tools named test_input_required_result_*: toolhost asks only for a call
    // its policy answers `ask`, and never for sampling or roots.
    (
        "input-required-result-basic-elicitation",
        &["sep-2322-elicitation-incomplete"],
        "approvals + fixture tool",
    ),
    ("input-required-result-basic-sampling", &["sep-2322-sampling-incomplete"], "no sampling"),
    ("input-required-result-basic-list-roots", &["sep-2322-list-roots-incomplete"], "no roots"),
    (
        "input-required-result-request-state",
        &["sep-2322-request-state-incomplete"],
        "approvals + fixture tool",
    ),
    (
        "input-required-result-multiple-input-requests",
        &["sep-2322-multiple-inputs-incomplete"],
        "fixture tool",
    ),
    ("input-required-result-multi-round", &["sep-2322-multi-round-r1"], "fixture tool"),
    (
        "input-required-result-non-tool-request",
        &["sep-2322-non-tool-incomplete"],
        "asks through prompts/get: none",
    ),
    ("input-required-result-result-type", &["sep-2322-result-type-included"], "approvals + fixture tool"),
    ("input-required-result-tampered-state", &["sep-2322-reject-tampered-state"], "approvals + fixture tool"),
    (
        "input-required-result-capability-check",
        &["sep-2322-respect-client-capabilities"],
        "sampling-only requests",
    ),
];

/// The tasks extension (not scored by the runner): toolhost does not offer it.
const EXTENSION_PREFIX: &str = "tasks-";

fn runner() -> (PathBuf, PathBuf) {
    let dir = workspace_root().join("target/toolchains/mcp");
    let node = dir.join("node");
    let script = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    for path in [&node, &script] {
        assert!(
            path.exists(),
            "{} is missing: install the pinned conformance runner with ./scripts/mcp-clients (./scripts/test does)",
            path.display()
        );
    }
    (node, script)
}

/// The scenario a result directory (`server-NAME-2026-12-03T07-46-27-177Z`) is for.
fn scenario_of(dir: &str) -> &str {
    let name = dir.strip_prefix("server-").unwrap_or(dir);
    let bytes = name.as_bytes();
    (0..bytes.len())
        .find(|&i| {
            bytes[i] == b'-'
                && bytes.len() > i + 12
                && bytes[i + 1..i + 5].iter().all(u8::is_ascii_digit)
                && bytes[i + 5] == b'-'
                && bytes[i + 11] == b'T'
        })
        .map_or(name, |i| &name[..i])
}

/// Run the runner for `revision` against `url`; each scenario's failed check ids.
async fn run(url: &str, revision: &str, out: &Path) -> BTreeMap<String, Vec<String>> {
    let (node, script) = runner();
    let output = tokio::time::timeout(
        Duration::from_secs(600),
        tokio::process::Command::new(node)
            .arg(script)
            .args(["server", "--url", url, "--requirements", revision, "-o"])
            .arg(out)
            .env("NO_PROXY", "127.0.0.1,localhost")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the runner finished in time")
    .expect("running the conformance runner");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary = stdout.find("=== SUMMARY ===").map_or("", |at| &stdout[at..]);
    eprintln!("conformance {revision}:\n{summary}");
    let mut failed = BTreeMap::new();
    for entry in std::fs::read_dir(out).expect("the runner wrote its results") {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        let checks: Value = serde_json::from_str(
            &std::fs::read_to_string(entry.path().join("checks.json")).expect("a scenario's checks.json"),
        )
        .expect("checks.json is JSON");
        let failures = checks
            .as_array()
            .expect("a list of checks")
            .iter()
            .filter(|c| c["status"] == "FAILURE")
            .map(|c| c["id"].as_str().unwrap_or("?").to_string())
            .collect();
        failed.insert(scenario_of(&name).to_string(), failures);
    }
    assert!(
        !failed.is_empty(),
        "the runner ran no scenario:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    failed
}

/// Check one revision's results against the classification.
fn check(revision: &str, results: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    let mut problems = Vec::new();
    for (scenario, failures) in results {
        if PASS.contains(&scenario.as_str()) {
            if !failures.is_empty() {
                problems.push(format!("{revision} {scenario}: failed {failures:?}"));
            }
        } else if let Some((_, allowed, why)) = NOT_APPLICABLE.iter().find(|(name, ..)| name == scenario) {
            let unexpected: Vec<&String> =
                failures.iter().filter(|f| !allowed.contains(&f.as_str())).collect();
            if !unexpected.is_empty() {
                problems.push(format!(
                    "{revision} {scenario} (not applicable: {why}): also failed {unexpected:?}"
                ));
            }
        } else if !scenario.starts_with(EXTENSION_PREFIX) {
            problems.push(format!(
                "{revision} {scenario}: not classified (failed {failures:?}); classify it here"
            ));
        }
    }
    problems
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_conformance_runner_passes_what_applies() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("hello.txt"), "hello\n").unwrap();
    let server = Instance::start("server", work.path(), &["--timeout-ms", "5000"]).await;
    let mut problems = Vec::new();
    let mut ran = Vec::new();
    for revision in ["2026-07-28", "2025-11-25"] {
        let out = tempfile::tempdir().unwrap();
        let results = run(&server.url(), revision, out.path()).await;
        problems.extend(check(revision, &results));
        ran.extend(results.into_keys());
    }
    // Every scenario said to pass was run in at least one revision.
    for scenario in PASS {
        if !ran.iter().any(|r| r == scenario) {
            problems.push(format!("{scenario}: listed as passing but the runner did not run it"));
        }
    }
    assert!(problems.is_empty(), "conformance:\n{}", problems.join("\n"));
}
