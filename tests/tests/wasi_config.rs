//! `wasi:config/store` end to end: the `config` test guest (both versions of the
//! interface) under a policy entry's `config` table.

use std::path::Path;

use serde_json::json;
use sha2::{Digest, Sha256};
use toolhost::{Host, LoadError, Mode, Policy, ToolCall};
use toolhost_tests::{TEST_CONFIG_WASM, test_engine_settings};

/// Write `policy` as toolhost.toml in `dir` and build a host over it, the host
/// environment being `env` (never the real one).
async fn build(dir: &Path, extra: &str, env: &[(&str, &str)]) -> Result<Host, LoadError> {
    let sha = hex::encode(Sha256::digest(std::fs::read(TEST_CONFIG_WASM).expect("guest")));
    let policy = format!("[plugins.weather]\nsource = {TEST_CONFIG_WASM:?}\nsha256 = \"{sha}\"\n{extra}\n");
    let path = dir.join("toolhost.toml");
    std::fs::write(&path, policy).expect("write policy");
    Host::builder()
        .work_dir(dir)
        .engine_settings(test_engine_settings())
        .without_builtins()
        .mode(Mode::Yolo)
        .host_env(env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
        .policy(Policy::load(&path)?)
        .build()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_come_from_the_entry_and_only_named_variables_from_the_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = r#"config = { API_KEY = { env = "WEATHER_KEY" }, units = "metric" }"#;
    let env = [("WEATHER_KEY", "wk-0123456789abcdef"), ("HOME", "/home/someone"), ("units", "imperial")];
    let host = build(dir.path(), config, &env).await.unwrap_or_else(|e| panic!("{e}"));

    let r = host.execute(ToolCall::new("config_read", json!({"key": "units"}))).await;
    assert_eq!(r.output, "draft: Some(\"metric\")\nrc1: Some(\"metric\")\nkeys: API_KEY,units", "{r:?}");
    let r = host.execute(ToolCall::new("config_read", json!({"key": "HOME"}))).await;
    assert!(r.output.starts_with("draft: None\nrc1: None"), "the host env is not config: {r:?}");

    // A value taken from the environment is a secret: the plugin's redactor removes it.
    let r = host.execute(ToolCall::new("config_read", json!({"key": "API_KEY"}))).await;
    assert!(!r.output.contains("wk-0123456789abcdef"), "{r:?}");
    assert!(r.output.starts_with("draft: Some(\""), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn importing_config_without_a_config_entry_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = build(dir.path(), "", &[]).await.err().expect("refused");
    match &err {
        LoadError::CapabilityDenied { interface, why } => {
            assert!(interface.starts_with("wasi:config/store@0.2.0-"), "{interface}");
            assert!(why.contains("plugins.weather.config"), "{why}");
        }
        other => panic!("expected capability_denied, got {other}"),
    }
    let bad = build(dir.path(), "config = { \"\" = \"x\" }", &[]).await.err().expect("an empty key");
    assert!(bad.to_string().contains("plugins.weather.config"), "{bad}");
}
