//! A host killed mid-call (issue 35). A confined command makes `.git` dirs with a
//! `core.fsmonitor` and a hook, in the work dir and in a subdir, then sleeps; the
//! `toolhost` process running it is killed with SIGKILL meanwhile. Nothing the
//! command wrote may be in the work dir afterwards — the user's next `git status`
//! there would run the fsmonitor unconfined — and the next `toolhost` to start
//! removes the overlay layer the dead one left outside the work dir.
//!
//! The test runs the real binary (`toolhost call terminal`), kills it itself, and
//! checks with its own, unconfined, git.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost_tests::toolhost_bin;

/// `toolhost call terminal COMMAND` over `work`, its data dir `data`.
fn terminal(work: &Path, data: &Path, command: &str) -> Command {
    let mut cmd = Command::new(toolhost_bin());
    let args = json!({ "command": command, "timeout_ms": 120_000 }).to_string();
    cmd.args(["call", "terminal", &args, "--mode", "yolo", "--json", "--work-dir"])
        .arg(work)
        .env("TOOLHOST_DATA_DIR", data)
        .env("TOOLHOST_CONFIG_DIR", toolhost_tests::test_config_dir())
        .env_remove("TOOLHOST_LOG")
        .stdin(Stdio::null());
    cmd
}

/// Every path named `name` beneath `dir` (not following links).
fn find(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_name() == name {
                out.push(path.clone());
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            }
        }
    }
    out
}

/// `git ARGS` in `dir` as a user runs it: the repository's own config applies
/// (its fsmonitor and hooks), no user or system config.
fn user_git(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_DIR")
        .env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap())
        .output()
        .expect("git runs")
}

/// SIGKILL the processes whose command line is exactly `argv` (the sleep the
/// killed host's command left running, which the test made unique).
fn kill_exact(argv: &[&str]) {
    let want: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        if std::fs::read(entry.path().join("cmdline")).is_ok_and(|c| c == want) {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        }
    }
}

#[test]
fn a_killed_host_leaves_no_git_and_the_next_start_removes_its_layer() {
    let work_dir = tempfile::tempdir().unwrap();
    let data_dir = tempfile::tempdir().unwrap();
    let work = work_dir.path().canonicalize().unwrap();
    let data = data_dir.path().canonicalize().unwrap();
    // What the planted fsmonitor and hook would run: it leaves PWNED.
    std::fs::write(work.join("evil"), "#!/bin/sh\ntouch \"$(dirname \"$0\")/PWNED\"\necho 1\n").unwrap();
    std::fs::set_permissions(work.join("evil"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir(work.join("sub")).unwrap();
    std::fs::write(work.join("sub/evil"), std::fs::read(work.join("evil")).unwrap()).unwrap();
    std::fs::set_permissions(work.join("sub/evil"), std::fs::Permissions::from_mode(0o755)).unwrap();

    let pause = format!("{}.{}", 600, std::process::id());
    let command = format!(
        "for d in . sub; do git init -q $d && git -C $d config core.fsmonitor \"$PWD/$d/evil\" && \
         printf '#!/bin/sh\\ntouch PWNED\\n' > $d/.git/hooks/pre-commit && chmod +x $d/.git/hooks/pre-commit; \
         done; echo data > made.txt; touch started; exec sleep {pause}"
    );
    let mut host =
        terminal(&work, &data, &command).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    // It has written everything once `started` is somewhere: the work dir (a host
    // that writes there directly) or a layer under the data dir.
    let until = Instant::now() + Duration::from_secs(60);
    while !work.join("started").exists() && find(&data, "started").is_empty() {
        assert!(Instant::now() < until, "the command never started");
        assert!(host.try_wait().unwrap().is_none(), "toolhost ended before it was killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    host.kill().unwrap();
    host.wait().unwrap();

    let left: Vec<&str> = [".git", "sub/.git", "made.txt", "started"]
        .into_iter()
        .filter(|p| std::fs::symlink_metadata(work.join(p)).is_ok())
        .collect();
    // The user's git, in both dirs: no repository there, so nothing planted runs.
    for dir in [&work, &work.join("sub")] {
        let _ = user_git(dir, &["status"]);
        let _ = user_git(dir, &["commit", "-q", "--allow-empty", "-m", "x"]);
    }
    let pwned = find(&work, "PWNED");
    kill_exact(&["sleep", &pause]);
    assert!(left.is_empty(), "the killed host's command left {left:?} in the work dir");
    assert!(pwned.is_empty(), "the planted fsmonitor or hook ran unconfined: {pwned:?}");

    // The layer it wrote to is outside the work dir, until the next start.
    let layers = find(&data, "started");
    assert_eq!(layers.len(), 1, "{layers:?}");
    assert!(layers[0].with_file_name(".git").join("config").is_file());
    let next = terminal(&work, &data, "echo next > next.txt").output().unwrap();
    assert!(next.status.success(), "{}", String::from_utf8_lossy(&next.stdout));
    assert!(find(&data, "started").is_empty(), "the dead host's layer is still there");
    assert!(find(&data, ".git").is_empty());
    assert_eq!(std::fs::read_to_string(work.join("next.txt")).unwrap(), "next\n");
    // The next host leaves no layer either (at most its lock and its empty dir, when
    // it exits without dropping its runtime).
    let staging = data.join("exec-staging");
    for entry in std::fs::read_dir(&staging).unwrap().flatten() {
        let path = entry.path();
        let empty = std::fs::read_dir(&path).is_ok_and(|mut d| d.next().is_none());
        assert!(path.extension().is_some_and(|e| e == "lock") || empty, "{} is left", path.display());
    }
}
