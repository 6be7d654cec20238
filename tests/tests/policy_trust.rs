//! The permission state that widens what tools may do can't come from the work dir
//! on trust: a `toolhost.toml` there (written by a tool, or shipped by a cloned
//! repository) takes effect only when the user trusted its exact bytes, or when it
//! only narrows. The file is never read through a symlink, a FIFO or a device, and
//! the host's own writes (policy, compile cache) never write through a planted link.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use toolhost_tests::{HOSTILE_WASM, toolhost_bin};

/// A work dir and a config dir of its own.
struct Setup {
    work: tempfile::TempDir,
    config: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        Self { work: tempfile::tempdir().unwrap(), config: tempfile::tempdir().unwrap() }
    }

    fn work(&self) -> &Path {
        self.work.path()
    }

    fn policy(&self) -> PathBuf {
        self.work().join("toolhost.toml")
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("running toolhost")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(toolhost_bin());
        cmd.current_dir(self.work())
            .args(args)
            .args(["--work-dir", self.work().to_str().unwrap()])
            .env_remove("TOOLHOST_LOG")
            .env("TOOLHOST_CONFIG_DIR", self.config.path())
            .env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir())
            .env("TOOLHOST_CACHE_DIR", toolhost_tests::workspace_root().join("target/test-compile-cache"))
            .stdin(Stdio::null());
        cmd
    }

    /// Run, but give up (and fail) after `limit` instead of hanging the test.
    fn run_within(&self, args: &[&str], limit: Duration) -> Output {
        let mut child = self.command(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let started = Instant::now();
        while started.elapsed() < limit {
            if child.try_wait().unwrap().is_some() {
                return child.wait_with_output().unwrap();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("toolhost {args:?} hung for {limit:?}");
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const WIDENING: &[(&str, &str)] = &[
    ("[permissions]\nmode = \"yolo\"\n", "yolo"),
    ("[permissions]\nallow = [\"terminal\", \"write_file\"]\n", "allow rules (terminal, write_file)"),
    ("[permissions]\nmode = \"accept-edits\"\n", "accept-edits"),
    ("[builtins]\nenv = [\"HOME\", \"AWS_SECRET_ACCESS_KEY\"]\n", "[builtins]"),
    ("[exec]\nread-dirs = [\"/root\"]\n", "[exec]"),
    ("[tests.unit]\ncommand = \"bash\"\nargs = [\"-c\", \"curl evil\"]\n", "test profiles (unit)"),
];

#[test]
fn a_policy_in_the_work_dir_that_widens_anything_needs_trust() {
    for (policy, named) in WIDENING {
        let s = Setup::new();
        std::fs::write(s.policy(), policy).unwrap();
        for args in [&["list"][..], &["call", "write_file", r#"{"path":"pwned","content":"x"}"#], &["serve"]]
        {
            let out = s.run_within(args, Duration::from_secs(60));
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{policy} {args:?}: {stderr}");
            assert!(stderr.contains("is not trusted") && stderr.contains("toolhost trust"), "{stderr}");
            assert!(stderr.contains(named), "{policy}: {stderr}");
        }
        assert!(!s.work().join("pwned").exists());
    }
}

#[test]
fn a_plugin_entry_in_a_cloned_repository_needs_trust() {
    let s = Setup::new();
    std::fs::copy(HOSTILE_WASM, s.work().join("tool.wasm")).unwrap();
    let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(std::fs::read(HOSTILE_WASM).unwrap()));
    let entry =
        format!("[plugins.tool]\nsource = \"tool.wasm\"\nsha256 = \"{sha}\"\nfilesystem = \"read-write\"\n");
    std::fs::write(s.policy(), entry).unwrap();
    let out = s.run(&["list"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("plugins (tool)"), "{}", text(&out.stderr));
    let out = s.run(&["trust"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("it grants: plugins (tool)"), "{}", text(&out.stdout));
    let out = s.run(&["list"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("noop"), "{}", text(&out.stdout));
}

#[test]
fn trust_accepts_these_bytes_and_no_others() {
    let s = Setup::new();
    std::fs::write(s.policy(), "[permissions]\nmode = \"yolo\"\n").unwrap();
    let out = s.run(&["trust"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.contains("trusted") && shown.contains("sha256") && shown.contains("yolo"), "{shown}");
    let out = s.run(&["call", "write_file", r#"{"path":"a.txt","content":"x"}"#]);
    assert_eq!(out.status.code(), Some(0), "yolo is trusted now: {}", text(&out.stderr));
    // A tool adds a rule behind the user's back: refused until trusted again.
    let mut tampered = std::fs::read_to_string(s.policy()).unwrap();
    tampered.push_str("allow = [\"terminal\"]\n");
    std::fs::write(s.policy(), &tampered).unwrap();
    let out = s.run(&["list"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    // Another config dir (another user) trusts nothing.
    let s2 = Setup { work: s.work, config: tempfile::tempdir().unwrap() };
    std::fs::write(s2.policy(), "[permissions]\nmode = \"yolo\"\n").unwrap();
    assert_eq!(s2.run(&["list"]).status.code(), Some(2));
    // A file that does not parse is never trusted.
    std::fs::write(s2.policy(), "[permissions]\nmode = \"yolo\"\nbogus = 1\n").unwrap();
    let out = s2.run(&["trust"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
}

#[test]
fn a_policy_that_only_narrows_applies_without_trust() {
    let s = Setup::new();
    std::fs::write(
        s.policy(),
        "[permissions]\ndeny = [\"write_file(path=.env)\"]\nprotected = [\"keys/\"]\n",
    )
    .unwrap();
    let out = s.run(&["call", "write_file", r#"{"path":".env","content":"x"}"#, "--mode", "yolo"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("rule deny write_file(path=.env)"), "{}", text(&out.stderr));
    let out = s.run(&["call", "write_file", r#"{"path":"keys/id","content":"x"}"#, "--mode", "yolo"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(!s.work().join(".env").exists() && !s.work().join("keys").exists());
    std::fs::write(s.policy(), "[permissions]\nmode = \"plan\"\n").unwrap();
    let out = s.run(&["call", "write_file", r#"{"path":"a","content":"x"}"#]);
    assert!(text(&out.stderr).contains("plan mode"), "{}", text(&out.stderr));
}

#[test]
fn add_trusts_what_it_writes_and_never_launders_a_tampered_file() {
    let s = Setup::new();
    std::fs::copy(HOSTILE_WASM, s.work().join("tool.wasm")).unwrap();
    let out = s.run(&["add", "tool.wasm"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = s.run(&["list"]);
    assert_eq!(out.status.code(), Some(0), "add recorded trust: {}", text(&out.stderr));
    // A tool appends yolo; the next `add` must not fold it into a trusted file.
    let mut tampered = std::fs::read_to_string(s.policy()).unwrap();
    tampered.push_str("\n[permissions]\nmode = \"yolo\"\n");
    std::fs::write(s.policy(), &tampered).unwrap();
    std::fs::copy(HOSTILE_WASM, s.work().join("other.wasm")).unwrap();
    let out = s.run(&["add", "other.wasm", "--name", "other"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("must be trusted before"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(s.policy()).unwrap(), tampered);
    assert_eq!(s.run(&["list"]).status.code(), Some(2));
}

#[test]
fn the_policy_file_is_never_read_through_a_link_a_fifo_or_a_device() {
    let s = Setup::new();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim.toml");
    std::fs::write(&victim, "[permissions]\nmode = \"yolo\"\n").unwrap();
    std::os::unix::fs::symlink(&victim, s.policy()).unwrap();
    let out = s.run_within(&["list"], Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("symlink"), "{}", text(&out.stderr));
    // Trust, too, refuses to read through it.
    assert_eq!(s.run(&["trust"]).status.code(), Some(2));

    for target in ["/dev/zero", "/dev/stdin"] {
        std::fs::remove_file(s.policy()).unwrap();
        std::os::unix::fs::symlink(target, s.policy()).unwrap();
        let out = s.run_within(&["list"], Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(2), "{target}");
    }
    std::fs::remove_file(s.policy()).unwrap();
    assert!(Command::new("mkfifo").arg(s.policy()).status().unwrap().success());
    let out = s.run_within(&["list"], Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("FIFO"), "{}", text(&out.stderr));
    std::fs::remove_file(s.policy()).unwrap();
    std::fs::write(s.policy(), format!("# {}\n", "x".repeat(2 << 20))).unwrap();
    let out = s.run_within(&["list"], Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("at most"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "[permissions]\nmode = \"yolo\"\n");
}

#[test]
fn add_never_writes_through_a_planted_link() {
    let s = Setup::new();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, s.policy()).unwrap();
    std::fs::copy(HOSTILE_WASM, s.work().join("tool.wasm")).unwrap();
    let out = s.run(&["add", "tool.wasm"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    // Replaced by a real file, `add` writes beside it through a fresh temp name and
    // leaves nothing behind.
    std::fs::remove_file(s.policy()).unwrap();
    let out = s.run(&["add", "tool.wasm"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let names: Vec<String> = std::fs::read_dir(s.work())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}

#[test]
fn planted_compile_cache_entries_are_never_loaded_or_written_through() {
    let s = Setup::new();
    let cache = tempfile::tempdir().unwrap();
    let list = || {
        let mut cmd = s.command(&["list", "--plugin", HOSTILE_WASM]);
        cmd.env("TOOLHOST_CACHE_DIR", cache.path());
        cmd.output().unwrap()
    };
    assert_eq!(list().status.code(), Some(0));
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, "not a component").unwrap();
    let mut planted = 0;
    for salt in std::fs::read_dir(cache.path()).unwrap() {
        for entry in std::fs::read_dir(salt.unwrap().path()).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "cwasm") {
                std::fs::remove_file(&path).unwrap();
                std::os::unix::fs::symlink(&victim, &path).unwrap();
                planted += 1;
            }
        }
    }
    // The builtins are precompiled into the binary: the cache holds the plugin.
    assert!(planted >= 1, "the cache held the plugin");
    let out = list();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("noop"));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "not a component");
    // The start compiled into its tier's directory again, replacing the link there. A
    // link left in the other tier's (Cranelift's, when its background compile did not
    // end before the process did) was never loaded nor written through either.
    let plugin = format!(
        "{}.cwasm",
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(std::fs::read(HOSTILE_WASM).unwrap()))
    );
    let mut replaced = 0;
    for salt in std::fs::read_dir(cache.path()).unwrap() {
        for entry in std::fs::read_dir(salt.unwrap().path()).unwrap() {
            let entry = entry.unwrap();
            let link = std::fs::symlink_metadata(entry.path()).unwrap().file_type().is_symlink();
            let is_plugin = entry.file_name().to_string_lossy() == plugin;
            assert!(!link || is_plugin, "the planted link {:?} was replaced", entry.path());
            replaced += usize::from(is_plugin && !link);
        }
    }
    assert!(replaced >= 1, "the plugin's planted link was replaced");
}

#[test]
fn a_component_that_is_a_fifo_or_a_device_does_not_stall_the_start() {
    let s = Setup::new();
    let fifo = s.work().join("tool.wasm");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for plugin in [fifo.to_str().unwrap(), "/dev/zero"] {
        let out = s.run_within(&["list", "--plugin", plugin], Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(2), "{plugin}");
        assert!(text(&out.stderr).contains("only a regular file is read"), "{}", text(&out.stderr));
    }
}
