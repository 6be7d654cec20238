//! `docs/publishing.md` as a script: every `sh` block of the page, in order, run
//! with bash against Debian's `docker-registry` on 127.0.0.1 (so `REGISTRY` and
//! `REGISTRY_FLAGS` are set, as the page's first block allows), from `toolhost new`
//! to a signed image and an agent's `toolhost add` and call. The page and this test
//! cannot drift: a command the page shows that fails, fails here.

use std::path::Path;
use std::process::Command;

use toolhost_tests::registry::Registry;
use toolhost_tests::{toolhost_bin, workspace_root};

/// The `sh` fenced blocks of `markdown`, in order.
fn shell_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```sh") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), line) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    assert!(current.is_none(), "an unclosed block");
    blocks
}

#[test]
fn the_publishing_page_runs_as_written() {
    let page = std::fs::read_to_string(workspace_root().join("docs/publishing.md")).unwrap();
    let blocks = shell_blocks(&page);
    assert!(blocks.len() >= 6, "{blocks:?}");
    let registry = Registry::start();
    let dir = tempfile::tempdir().unwrap();
    let (config, data, cache) =
        (dir.path().join("config"), dir.path().join("data"), dir.path().join("cache"));
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let bin_dir = toolhost_bin().parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut transcript = String::new();
    for block in &blocks {
        let mut cmd = Command::new("bash");
        cmd.args(["-euo", "pipefail", "-c", block])
            .current_dir(&work)
            .env("PATH", &path)
            .env("REGISTRY", format!("{}/you", registry.host()))
            .env("REGISTRY_FLAGS", "--plain-http")
            .env("TOOLHOST_CONFIG_DIR", &config)
            .env("TOOLHOST_DATA_DIR", &data)
            .env("TOOLHOST_CACHE_DIR", &cache)
            // The guest build: this workspace's crates, offline, in a target dir the
            // new-project tests share.
            .env("CARGO_TARGET_DIR", workspace_root().join("target/new-project-rust"))
            .env("CARGO_NET_OFFLINE", "true")
            .env_remove("TOOLHOST_LOG")
            .env_remove("TOOLHOST_KEY_PASSWORD")
            .stdin(std::process::Stdio::null());
        for var in ["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_TARGET", "RUSTC_WRAPPER"] {
            cmd.env_remove(var);
        }
        let out = cmd.output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        transcript.push_str(&format!("$ {block}{stdout}"));
        assert!(
            out.status.success(),
            "this block of docs/publishing.md failed:\n{block}\n{stdout}\n{stderr}"
        );
        // No network here: the project builds with this workspace's lockfile.
        if block.contains("toolhost new ") {
            let project = work.join("word-count");
            std::fs::copy(workspace_root().join("Cargo.lock"), project.join("Cargo.lock")).unwrap();
        }
    }
    for needle in
        ["signed by: key alice (sha256:", "manifest: sha256:", "asks for:", "added plugins.word-count"]
    {
        assert!(transcript.contains(needle), "{needle}:\n{transcript}");
    }
    let policy = std::fs::read_to_string(work.join("toolhost.toml")).unwrap();
    assert!(policy.contains(&format!("oci://{}/you/word-count:v1@sha256:", registry.host())), "{policy}");
    assert!(Path::new(&cache).join("oci").is_dir());
}
