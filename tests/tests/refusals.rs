//! Refusals that name their fix: a blocked private address names
//! `--allow-private-network` and the policy's `[network] allow-private` (and only
//! when that would lift it), a host not granted names `--allow-host` and the entry's
//! `network`; the policy key does what the flag does, and is a widening an untrusted
//! project policy may not make; `toolhost add` writes sources relative to the policy
//! file and shows what it replaces.

use std::path::Path;
use std::process::Output;

use serde_json::json;
use toolhost::policy::ConfigDir;
use toolhost::{Host, Policy, PolicyError, ToolCall, ToolResult};
use toolhost_tests::net::{Net, RecordingConnector, Reply, ScriptedResolver, server};
use toolhost_tests::{HOSTILE_WASM, NET_WASM, test_engine_settings, toolhost_in};

fn message(r: &ToolResult) -> &str {
    r.error.as_ref().map(|e| e.message.as_str()).unwrap_or_else(|| panic!("it succeeded: {}", r.output))
}

const FLAG: &str = "--allow-private-network";
const KEY: &str = "`allow-private = true` under [network]";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_private_address_names_the_flag_and_the_policy_key() {
    let (addr, seen) = server(|_| Reply::Ok(b"reached".to_vec())).await;
    let host = Host::builder().engine_settings(test_engine_settings()).build().await.unwrap();
    let fetch = |url: String| host.execute(ToolCall::new("fetch_url", json!({"url": url})));

    let r = fetch(format!("http://{addr}/page")).await;
    assert_eq!(r.code(), Some("blocked_url"), "{:?}", r.error);
    let text = message(&r);
    assert!(text.contains("127.0.0.1 is a blocked address (loopback)"), "{text}");
    assert!(text.contains(FLAG) && text.contains(KEY), "{text}");

    // A local name, too.
    let r = fetch("http://localhost/".into()).await;
    assert!(message(&r).contains(FLAG), "{}", message(&r));

    // What no opt-out lifts (multicast) names no flag that would not help.
    let r = fetch("http://224.0.0.1/".into()).await;
    assert_eq!(r.code(), Some("blocked_url"), "{:?}", r.error);
    assert!(!message(&r).contains(FLAG), "{}", message(&r));
    assert!(seen.lock().unwrap().is_empty(), "a refused URL must never be connected to");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_resolving_to_a_private_address_names_the_fix_and_a_host_not_granted_names_allow_host() {
    let net = Net::new(
        ScriptedResolver::default().with("inside.test", &["10.0.0.5"]),
        RecordingConnector::default(),
    );
    let host = net.host(NET_WASM, net.settings(false, &["inside.test"])).await;
    let fetch = |url: &str| host.execute(ToolCall::new("fetch_raw", json!({"url": url})));

    let r = fetch("http://inside.test/").await;
    assert_eq!(r.code(), Some("blocked_url"), "{:?}", r.error);
    let text = message(&r);
    assert!(text.contains("resolved to 10.0.0.5") && text.contains(FLAG) && text.contains(KEY), "{text}");

    let r = fetch("http://other.test/").await;
    assert_eq!(r.code(), Some("host_not_allowed"), "{:?}", r.error);
    let text = message(&r);
    assert!(text.contains("--allow-host other.test"), "{text}");
    assert!(text.contains("\"other.test\" to `network` in its [plugins.NAME] entry"), "{text}");
    net.connector.assert_no_violation();
    assert!(net.connector.attempts().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_key_lets_tools_reach_loopback_as_the_flag_does() {
    let (addr, seen) = server(|_| Reply::Ok(b"reached".to_vec())).await;
    let dir = tempfile::tempdir().unwrap();
    let policy = Policy::parse("[network]\nallow-private = true\n", &dir.path().join("p.toml")).unwrap();
    assert_eq!(policy.allow_private_network, Some(true));
    let host = Host::builder()
        .engine_settings(test_engine_settings())
        .mode(toolhost::Mode::Yolo)
        .policy(policy)
        .build()
        .await
        .unwrap();
    assert!(host.network().allow_private);
    let r = host.execute(ToolCall::new("http_request", json!({"url": format!("http://{addr}/page")}))).await;
    assert!(r.ok, "{:?}", r.error);
    assert!(r.output.contains("reached"), "{}", r.output);
    assert_eq!(seen.lock().unwrap().len(), 1);

    // `false`, a typo, and a wrong type.
    let off = Policy::parse("[network]\nallow-private = false\n", &dir.path().join("p.toml")).unwrap();
    assert_eq!(off.allow_private_network, Some(false));
    for bad in ["[network]\nallow-privat = true\n", "[network]\nallow-private = \"yes\"\n"] {
        let err = Policy::parse(bad, &dir.path().join("p.toml")).expect_err(bad).to_string();
        assert!(err.contains("line 2"), "{err}");
    }
}

#[test]
fn an_untrusted_project_policy_may_not_turn_the_private_network_on() {
    let work = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("toolhost.toml"), "[network]\nallow-private = true\n").unwrap();
    let config = ConfigDir::at(config.path());
    let err = Policy::discover_in(None, work.path(), Some(&config)).expect_err("an untrusted widening");
    let PolicyError::Untrusted { widens, .. } = &err else { panic!("{err}") };
    assert!(widens.iter().any(|w| w.contains("allow-private")), "{widens:?}");
    // Trusted, it applies.
    config.trust_current(&work.path().join("toolhost.toml")).unwrap();
    let policy = Policy::discover_in(None, work.path(), Some(&config)).unwrap();
    assert_eq!(policy.allow_private_network, Some(true));
}

fn run(cwd: &Path, args: &[&str]) -> Output {
    toolhost_in(cwd).args(args).output().expect("running toolhost")
}

#[test]
fn add_writes_a_relative_source_and_shows_what_it_replaces() {
    let root = tempfile::tempdir().unwrap();
    let (project, tools) = (root.path().join("project"), root.path().join("tools"));
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::copy(HOSTILE_WASM, tools.join("hostile.wasm")).unwrap();
    let wasm = tools.join("hostile.wasm");

    // From another directory, by absolute path: the source is relative to the policy file.
    let out = run(root.path(), &["add", wasm.to_str().unwrap(), "--work-dir", project.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("added plugins.hostile"), "{stdout}");
    let policy = std::fs::read_to_string(project.join("toolhost.toml")).unwrap();
    assert!(policy.contains("source = \"../tools/hostile.wasm\""), "{policy}");
    // It loads from there.
    let out = run(&project, &["list", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));

    // Replacing the entry shows the difference, line by line.
    let out = run(
        root.path(),
        &["add", wasm.to_str().unwrap(), "--work-dir", project.to_str().unwrap(), "--env", "LANG"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("replaced plugins.hostile in "), "{stdout}");
    assert!(stdout.contains("\n- env = []\n") && stdout.contains("\n+ env = [\"LANG\"]\n"), "{stdout}");
    assert!(stdout.contains("\n  source = \"../tools/hostile.wasm\"\n"), "unchanged lines kept: {stdout}");
}
