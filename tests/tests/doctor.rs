//! `toolhost doctor` and the refusals it explains: each sandbox feature made
//! unavailable in turn (`TOOLHOST_SANDBOX_WITHOUT` for the binary,
//! `HostBuilder::sandbox_unavailable` for the library, both of which only take
//! features away), and then doctor's report and exit status, and the code and
//! message of a `terminal` call, which must name the missing feature and point at
//! `toolhost doctor`.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use toolhost::{Host, SandboxFeature, ToolCall};
use toolhost_tests::{is_root, test_engine_settings};

fn toolhost(work: &Path, args: &[&str], without: Option<&str>) -> Output {
    let mut cmd = toolhost_tests::toolhost_in(work);
    cmd.args(args).arg("--work-dir").arg(work).env_remove("TOOLHOST_SANDBOX_WITHOUT");
    if let Some(features) = without {
        cmd.env("TOOLHOST_SANDBOX_WITHOUT", features);
    }
    cmd.output().expect("running toolhost")
}

fn doctor_json(work: &Path, without: Option<&str>) -> (i32, Value) {
    let out = toolhost(work, &["doctor", "--json"], without);
    let doc = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code().expect("an exit status"), doc)
}

fn feature<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["sandbox"]["features"].as_array().unwrap().iter().find(|f| f["name"] == name).expect(name)
}

fn tool<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).expect(name)
}

/// Whether the sandbox needs `feature` on this host (a pids cgroup only as root).
fn needed(feature: SandboxFeature) -> bool {
    feature != SandboxFeature::PidsCgroup || is_root()
}

#[test]
fn on_this_machine_everything_is_here_and_doctor_says_so() {
    let work = tempfile::tempdir().unwrap();
    let (status, doc) = doctor_json(work.path(), None);
    assert_eq!(status, 0, "{doc:#}");
    assert_eq!(doc["ok"], true);
    assert!(doc["kernel"].as_str().is_some_and(|k| !k.is_empty()), "{doc}");
    for f in SandboxFeature::ALL {
        let found = feature(&doc, f.name());
        assert_eq!(found["required"], needed(f), "{found}");
        if needed(f) {
            assert_eq!(found["available"], true, "{found}");
        }
    }
    assert!(feature(&doc, "landlock")["detail"].as_str().unwrap().contains("ABI"), "{doc}");
    assert_eq!(doc["sandbox"]["children"]["ok"], true, "{doc}");
    let roles: Vec<&str> =
        doc["dirs"].as_array().unwrap().iter().map(|d| d["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["cache", "data", "config"]);
    let data = &doc["dirs"][1];
    assert_eq!(data["path"], json!(toolhost_tests::test_data_dir()));
    assert_eq!(data["writable"], true);
    for name in ["terminal", "git", "read_file"] {
        assert_eq!(tool(&doc, name)["works"], true, "{doc}");
    }
    assert_eq!(tool(&doc, "terminal")["needs_sandbox"], true);
    assert_eq!(tool(&doc, "read_file")["needs_sandbox"], false);

    let out = toolhost(work.path(), &["doctor"], None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("ok      Landlock ABI 6 (Linux 6.12+)"), "{text}");
    assert!(text.contains("all that the current policy needs is here"), "{text}");
}

#[test]
fn each_missing_feature_fails_doctor_and_refuses_terminal_naming_it() {
    let work = tempfile::tempdir().unwrap();
    for f in SandboxFeature::ALL {
        let (status, doc) = doctor_json(work.path(), Some(f.name()));
        let found = feature(&doc, f.name());
        assert_eq!(found["available"], false, "{found}");
        let terminal = tool(&doc, "terminal");
        if !needed(f) {
            // Not root: a pids cgroup is not needed, RLIMIT_NPROC caps processes.
            assert_eq!((status, &terminal["works"]), (0, &json!(true)), "{doc:#}");
            continue;
        }
        assert_eq!(status, 1, "{}: {doc:#}", f.name());
        assert_eq!(doc["ok"], false);
        assert_eq!(doc["sandbox"]["children"]["ok"], false, "{doc}");
        let refusal = terminal["refusal"].as_str().unwrap_or_else(|| panic!("{terminal}"));
        assert!(refusal.starts_with("sandbox_unavailable: this machine lacks"), "{refusal}");
        assert!(refusal.contains(f.title()) && refusal.contains("toolhost doctor"), "{refusal}");
        assert_eq!(tool(&doc, "git")["works"], false, "{doc}");
        assert_eq!(tool(&doc, "read_file")["works"], true, "{doc}");

        let out = toolhost(work.path(), &["doctor"], Some(f.name()));
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{text}");
        assert!(text.contains(&format!("MISSING {}", f.title())), "{text}");
        assert!(text.contains("REFUSES terminal"), "{text}");

        // The call itself: refused with the code, naming the feature and doctor.
        let args = ["call", "terminal", r#"{"command": "echo ran"}"#, "--json", "--mode", "yolo"];
        let out = toolhost(work.path(), &args, Some(f.name()));
        let result: Value = serde_json::from_slice(&out.stdout).expect("one JSON result");
        assert_eq!(out.status.code(), Some(1), "{result}");
        let error = result["error"].as_str().unwrap();
        assert!(error.starts_with("sandbox_unavailable: this machine lacks"), "{error}");
        assert!(error.contains(f.title()) && error.contains("run `toolhost doctor`"), "{error}");
        assert!(!result["output"].as_str().unwrap().contains("ran"), "{result}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_library_switch_refuses_the_exec_tools_with_the_same_message() {
    let dir = tempfile::tempdir().unwrap();
    for f in SandboxFeature::ALL.into_iter().filter(|f| needed(*f)) {
        let host = Host::builder()
            .work_dir(dir.path())
            .engine_settings(test_engine_settings())
            .mode(toolhost::Mode::Yolo)
            .sandbox_unavailable([f])
            .build()
            .await
            .unwrap();
        for (name, args) in [("terminal", json!({"command": "true"})), ("git", json!({"command": "status"}))]
        {
            let r = host.execute(ToolCall::new(name, args)).await;
            assert_eq!(r.code(), Some("sandbox_unavailable"), "{name}: {:?}", r.error);
            let message = &r.error.as_ref().unwrap().message;
            assert!(message.contains(f.title()) && message.contains("toolhost doctor"), "{message}");
        }
        assert!(host.exec_runtime().availability().is_err_and(|e| e.contains(f.title())));
    }
}

#[test]
fn a_bad_feature_name_is_a_usage_error_naming_the_variable() {
    let work = tempfile::tempdir().unwrap();
    let out = toolhost(work.path(), &["doctor"], Some("landlock,apparmor"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("TOOLHOST_SANDBOX_WITHOUT") && err.contains("\"apparmor\""), "{err}");
}

#[test]
fn an_untrusted_widening_policy_is_reported_and_fails_doctor() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("toolhost.toml"), "[permissions]\nmode = \"yolo\"\n").unwrap();
    let (status, doc) = doctor_json(work.path(), None);
    assert_eq!(status, 1, "{doc:#}");
    let error = doc["policy"]["error"].as_str().unwrap_or_else(|| panic!("{doc}"));
    assert!(error.contains("toolhost trust") || error.contains("trust"), "{error}");
    assert!(doc["problems"][0].as_str().unwrap().contains("the policy is refused"), "{doc}");
}
