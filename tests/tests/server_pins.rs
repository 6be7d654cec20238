//! An upstream MCP server pinned whole: `add-server` pins every file of the
//! published server the tests run (`@modelcontextprotocol/server-memory` and its
//! `node_modules`, copied to a temp dir), a start whose files differ is refused
//! naming the file, and `update-server` lists what was added, removed and changed,
//! re-pinning only when told to.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use toolhost_tests::workspace_root;

/// The `toolhost` binary in `work` with the tests' config and data dirs.
fn toolhost(work: &Path, args: &[&str]) -> Output {
    toolhost_tests::toolhost_on(work, args)
        .env("MEMORY_FILE_PATH", work.join("memory.jsonl"))
        .output()
        .expect("running toolhost")
}

fn all(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// A copy of the installed server's `node_modules` under a fresh dir (links kept as links).
fn copy_of_the_published_server() -> (tempfile::TempDir, PathBuf) {
    let installed = workspace_root().join("target/toolchains/mcp-servers/node_modules");
    assert!(
        installed.join("@modelcontextprotocol/server-memory/dist/index.js").is_file(),
        "{} is missing: install it with ./scripts/mcp-servers (./scripts/test and .ci/run do)",
        installed.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new("cp").arg("-a").arg(&installed).arg(dir.path()).status().unwrap();
    assert!(status.success());
    let modules = dir.path().canonicalize().unwrap().join("node_modules");
    (dir, modules)
}

fn read_graph(work: &Path) -> Output {
    toolhost(work, &["call", "mcp__memory__read_graph", "{}", "--mode", "yolo"])
}

#[test]
fn a_changed_dependency_is_refused_by_name_until_update_server_repins() {
    let (_copy, modules) = copy_of_the_published_server();
    let index = modules.join("@modelcontextprotocol/server-memory/dist/index.js");
    let work = tempfile::tempdir().unwrap();
    let out = toolhost(
        work.path(),
        &[
            "add-server",
            "memory",
            "--filesystem",
            "read-write",
            "--env",
            "MEMORY_FILE_PATH",
            "--",
            "node",
            index.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let policy = std::fs::read_to_string(work.path().join("toolhost.toml")).unwrap();
    assert!(stdout.contains(&format!("package: {} (", modules.display())), "{stdout}");
    assert!(policy.contains(&format!("package = \"{}\"", modules.display())), "{policy}");
    assert!(policy.contains("package-sha256 = \""), "{policy}");
    let out = read_graph(work.path());
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));

    // One file deep in a dependency changes, not the entry file: the start is refused,
    // naming it.
    let changed = modules.join("@modelcontextprotocol/sdk/package.json");
    let mut text = std::fs::read_to_string(&changed).unwrap();
    text.push('\n');
    std::fs::write(&changed, text).unwrap();
    let out = read_graph(work.path());
    let said = all(&out);
    assert_ne!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("server_failed") && said.contains("server_changed: servers.memory: "), "{said}");
    assert!(said.contains(&format!("{} (changed)", changed.display())), "{said}");
    assert!(said.contains("toolhost update-server memory"), "{said}");
    // inspect names the pin too.
    let out = toolhost(work.path(), &["inspect", "--server", "memory"]);
    assert!(all(&out).contains("server_changed"), "{}", all(&out));

    // A file added and one removed as well: update-server lists all three, and without
    // --yes (no terminal) re-pins nothing.
    std::fs::write(modules.join("planted.js"), "process.exit(0)").unwrap();
    let removed = modules.join("@modelcontextprotocol/server-memory/README.md");
    std::fs::remove_file(&removed).unwrap();
    let out = toolhost(work.path(), &["update-server", "memory"]);
    let said = all(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    for line in [
        "  ~ @modelcontextprotocol/sdk/package.json",
        "  + planted.js",
        "  - @modelcontextprotocol/server-memory/README.md",
        "not re-pinned",
    ] {
        assert!(said.contains(line), "{line}: {said}");
    }
    assert_eq!(std::fs::read_to_string(work.path().join("toolhost.toml")).unwrap(), policy);
    assert_ne!(read_graph(work.path()).status.code(), Some(0));

    let out = toolhost(work.path(), &["update-server", "memory", "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
    assert!(all(&out).contains("re-pinned servers.memory"), "{}", all(&out));
    let out = read_graph(work.path());
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
    let out = toolhost(work.path(), &["update-server", "memory"]);
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
    assert!(all(&out).contains("is up to date"), "{}", all(&out));
}

#[test]
fn an_unpinned_entry_starts_only_when_it_says_so() {
    let script = workspace_root().join("tests/mcp_servers/hostile.py");
    let work = tempfile::tempdir().unwrap();
    let entry = format!(
        "[servers.t]\ncommand = [\"/usr/bin/python3\", {:?}]\nread-dirs = [{:?}]\n",
        script.display().to_string(),
        script.parent().unwrap().display().to_string()
    );
    // Outside the work dir: the user's own file, believed as it is.
    let outside = tempfile::tempdir().unwrap();
    let policy = outside.path().join("policy.toml");
    std::fs::write(&policy, &entry).unwrap();
    let call = |policy: &Path| {
        toolhost(
            work.path(),
            &[
                "call",
                "mcp__t__echo",
                r#"{"text": "hi"}"#,
                "--mode",
                "yolo",
                "--policy",
                policy.to_str().unwrap(),
            ],
        )
    };
    let said = all(&call(&policy));
    assert!(said.contains("server_unpinned: servers.t pins no package"), "{said}");
    std::fs::write(&policy, format!("{entry}unpinned = true\n")).unwrap();
    let out = call(&policy);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n", "{}", all(&out));
    // add-server --unpinned writes that; by default it pins the script's directory.
    let out = toolhost(
        work.path(),
        &["add-server", "u", "--unpinned", "--", "/usr/bin/python3", script.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
    let text = std::fs::read_to_string(work.path().join("toolhost.toml")).unwrap();
    assert!(text.contains("unpinned = true") && !text.contains("package"), "{text}");
}
