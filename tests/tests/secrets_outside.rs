//! The host's own secrets and state are never inside the work dir, where any
//! tool that reads could read them: `serve` refuses to start, naming the file
//! and the flag (or variable), when `--token-file`, `--state-key-file`,
//! `--store DIR`, the data dir or the config dir is reached through the work
//! dir: named plainly, through `..`, through a symlink outside that leads in,
//! or through a symlink planted inside that leads out (a tool could change
//! where it leads). The same files outside start the server.

use std::os::unix::fs::{PermissionsExt as _, symlink};
use std::path::{Path, PathBuf};
use std::time::Duration;

use toolhost_tests::servers::{START_PATIENCE, serve_command};

/// A file holding `text`, mode 0600.
fn secret(path: &Path, text: &str) -> PathBuf {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path.to_path_buf()
}

const TOKEN: &str = "a-bearer-token-of-some-length\n";
const KEY: &str = "0123456789abcdef0123456789abcdef\n";

/// `serve --http 127.0.0.1:0 FLAGS` with `env`: its stderr when it exits
/// non-zero in time; a panic when it starts serving instead.
async fn refused(work: &Path, flags: &[&str], env: &[(&str, &Path)]) -> String {
    let mut serve = serve_command(work, &[&["--http", "127.0.0.1:0"], flags].concat());
    serve.env("TOOLHOST_CONFIG_DIR", toolhost_tests::test_config_dir()).stdin(std::process::Stdio::null());
    for (name, value) in env {
        serve.env(name, value);
    }
    let out = tokio::time::timeout(Duration::from_secs(30), serve.output())
        .await
        .unwrap_or_else(|_| panic!("serve {flags:?} {env:?} started instead of refusing"))
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{flags:?}: {stderr}");
    assert!(stderr.contains("inside the work dir"), "{flags:?}: {stderr}");
    stderr
}

struct Dirs {
    _root: tempfile::TempDir,
    work: PathBuf,
    outside: PathBuf,
}

fn dirs() -> Dirs {
    let root = tempfile::tempdir().unwrap();
    let base = root.path().canonicalize().unwrap();
    let (work, outside) = (base.join("work"), base.join("outside"));
    std::fs::create_dir_all(work.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    Dirs { _root: root, work, outside }
}

fn text(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn token_and_key_files_inside_the_work_dir_are_refused_however_named() {
    let Dirs { _root, work, outside } = dirs();
    let token = secret(&work.join("tok"), TOKEN);
    let key = secret(&work.join("key"), KEY);
    // Outside, a link leading into the work dir; inside, a link leading out.
    symlink(&work, outside.join("into")).unwrap();
    let outside_token = secret(&outside.join("tok"), TOKEN);
    symlink(&outside_token, work.join("planted")).unwrap();
    symlink(&outside, work.join("planted-dir")).unwrap();
    for (flag, file, at) in [
        ("--token-file", token.clone(), token.clone()),
        ("--token-file", work.join("sub").join("..").join("tok"), work.join("sub")),
        ("--token-file", outside.join("into").join("tok"), token.clone()),
        ("--token-file", work.join("planted"), work.join("planted")),
        ("--token-file", work.join("planted-dir").join("tok"), work.join("planted-dir")),
        ("--state-key-file", key.clone(), key.clone()),
        ("--state-key-file", outside.join("into").join("sub").join("..").join("key"), work.join("sub")),
    ] {
        let stderr = refused(&work, &[flag, text(&file)], &[]).await;
        assert!(stderr.contains(&format!("{flag} {}", file.display())), "{stderr}");
        assert!(stderr.contains(text(&at)), "{flag} {file:?}: {stderr}");
    }
    // A relative name, from a current dir inside the work dir.
    let out = serve_command(&work, &["--http", "127.0.0.1:0", "--token-file", "../tok"])
        .current_dir(work.join("sub"))
        .env("TOOLHOST_CONFIG_DIR", toolhost_tests::test_config_dir())
        .output();
    let out = tokio::time::timeout(Duration::from_secs(30), out).await.expect("refused in time").unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("--token-file ../tok is inside the work dir"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_data_dir_config_dir_and_store_inside_the_work_dir_are_refused() {
    let Dirs { _root, work, outside } = dirs();
    symlink(&work, outside.join("into")).unwrap();
    let data = work.join("data");
    let stderr = refused(&work, &[], &[("TOOLHOST_DATA_DIR", &data)]).await;
    assert!(
        stderr
            .contains(&format!("the data dir (TOOLHOST_DATA_DIR, XDG_DATA_HOME or HOME) {}", data.display()))
    );
    let stderr = refused(&work, &[], &[("TOOLHOST_DATA_DIR", &outside.join("into").join("data"))]).await;
    assert!(stderr.contains("the data dir"), "{stderr}");
    let config = work.join("sub").join("..").join("config");
    let stderr = refused(&work, &[], &[("TOOLHOST_CONFIG_DIR", &config)]).await;
    assert!(stderr.contains("the config dir, holding trust records"), "{stderr}");
    for store in [work.join("outputs"), outside.join("into").join("outputs"), work.clone()] {
        let stderr = refused(&work, &["--store", text(&store)], &[]).await;
        assert!(stderr.contains(&format!("--store {}", store.display())), "{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_files_outside_the_work_dir_start_the_server() {
    let Dirs { _root, work, outside } = dirs();
    let token = secret(&outside.join("tok"), TOKEN);
    let key = secret(&outside.join("key"), KEY);
    let data = outside.join("data");
    // `..` that leaves the work dir itself (not a name inside it) stays outside.
    let store = work.join("..").join("outside").join("outputs");
    let flags = [
        "--http",
        "127.0.0.1:0",
        "--token-file",
        text(&token),
        "--state-key-file",
        text(&key),
        "--store",
        text(&store),
    ];
    let mut serve = serve_command(&work, &flags);
    serve.env("TOOLHOST_DATA_DIR", &data).env("TOOLHOST_CONFIG_DIR", toolhost_tests::test_config_dir());
    let (_child, addr) = toolhost_tests::start_http_server(serve, START_PATIENCE).await;
    assert!(addr.ip().is_loopback());
}
