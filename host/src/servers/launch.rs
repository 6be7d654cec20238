//! How a stdio server is started: its `[servers.NAME]` entry resolved once, at
//! host build ([`Launch::new`]: the program found, the working directory, the
//! granted variables, the limits), and checked again at each start
//! ([`Launch::spec`]: its package walked and hashed against the entry's
//! `package-sha256` (`super::pin`), and the entry file's sha256, so a changed script
//! or dependency cannot impersonate the approved one; an entry pinning no package
//! starts only when it says `unpinned = true`).
//!
//! Its environment is only: `PATH` (the exec search path), `HOME` and `TMPDIR`
//! (the work dir, or its cwd without one), `LANG`, the variables its entry
//! grants, and — with a network grant — `HTTP_PROXY`/`HTTPS_PROXY` (and their
//! lower-case forms) naming its proxy inside its own namespace
//! (`super::proxy`). Nothing else of the host's environment reaches it.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::imports::exec::{ChildLimits, ResidentSpec};
use crate::imports::fetch::NetGrant;
use crate::policy::grants::FsGrant;
use crate::policy::servers::{PackagePin, ServerEntry, StdioServer};

/// The port a server's proxy listens on, inside the server's own network namespace.
pub(crate) const PROXY_PORT: u16 = 3128;

/// Default limits of a server process: it lives long, so CPU seconds are an hour
/// over its whole life; memory and processes as for a call's child, fewer processes.
const DEFAULT_CPU_SECONDS: u64 = 3600;
const DEFAULT_PROCESSES: u64 = 64;

/// What the host knows when it resolves an entry.
#[derive(Debug, Clone)]
pub(crate) struct HostSide {
    /// The work dir (`None`: tools have none).
    pub(crate) work_dir: Option<PathBuf>,
    /// Where programs are searched for, in order.
    pub(crate) search: Vec<PathBuf>,
    /// The `PATH` a child sees.
    pub(crate) path_var: String,
    /// The host's environment, what `env` names are taken from.
    pub(crate) host_env: Vec<(String, String)>,
    /// The limits of a call's child: a server's start from them.
    pub(crate) child_limits: ChildLimits,
    /// Whether private targets may be reached (the host's opt-out).
    pub(crate) allow_private: bool,
    /// Where pinned packages' file lists are kept (to name what changed).
    pub(crate) pins: Option<super::pin::Pins>,
}

/// A stdio server's start, resolved.
#[derive(Debug, Clone)]
pub(crate) struct Launch {
    program: PathBuf,
    arg0: String,
    args: Vec<String>,
    cwd: PathBuf,
    /// The file its sha256 pins: the script after an interpreter, or the program.
    entry_file: PathBuf,
    sha256: Option<String>,
    /// The entry's name.
    name: String,
    /// Its package pin (`None`: `unpinned` says whether it may start).
    package: Option<PackagePin>,
    unpinned: bool,
    pins: Option<super::pin::Pins>,
    env: Vec<(String, String)>,
    work_dir: Option<PathBuf>,
    filesystem: FsGrant,
    read_dirs: Vec<PathBuf>,
    limits: ChildLimits,
    /// What its proxy lets it reach (`None`: no network at all).
    pub(crate) network: Option<NetGrant>,
}

impl Launch {
    /// Resolve `stdio`, the transport of `entry`, on `host`. Fails naming what is
    /// missing (the program, the working directory).
    pub(crate) fn new(entry: &ServerEntry, stdio: &StdioServer, host: &HostSide) -> Result<Self, String> {
        let work_dir = host.work_dir.clone().filter(|_| stdio.filesystem != FsGrant::None);
        let cwd = match (&stdio.cwd, &work_dir) {
            (Some(cwd), _) => cwd.canonicalize().map_err(|e| format!("cwd {}: {e}", cwd.display()))?,
            (None, Some(work)) => work.clone(),
            (None, None) => PathBuf::from("/"),
        };
        let program = find_program(&stdio.command[0], &cwd, &host.search)?;
        let entry_file = entry_file(&stdio.command, &cwd, &program);
        let mut env = vec![
            ("PATH".to_string(), host.path_var.clone()),
            ("HOME".to_string(), work_dir.as_ref().unwrap_or(&cwd).display().to_string()),
            ("TMPDIR".to_string(), work_dir.as_ref().unwrap_or(&cwd).display().to_string()),
            ("LANG".to_string(), "C.UTF-8".to_string()),
        ];
        let granted = crate::policy::env::select(&entry.env, host.host_env.iter().cloned());
        env.retain(|(k, _)| !granted.iter().any(|(g, _)| g == k));
        env.extend(granted);
        let network = (!stdio.network.is_empty())
            .then(|| NetGrant { hosts: stdio.network.clone(), allow_private: host.allow_private });
        if network.is_some() {
            let proxy = format!("http://127.0.0.1:{PROXY_PORT}");
            let names = ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"];
            env.retain(|(k, _)| !names.contains(&k.as_str()) && k != "NO_PROXY" && k != "no_proxy");
            env.extend(names.iter().map(|n| (n.to_string(), proxy.clone())));
        }
        let base = &host.child_limits;
        let limits = ChildLimits {
            cpu_seconds: entry.limits.cpu_seconds.unwrap_or(DEFAULT_CPU_SECONDS),
            memory_bytes: entry.limits.memory_mib.map_or(base.memory_bytes, |m| m << 20),
            file_size_bytes: base.file_size_bytes,
            processes: entry.limits.processes.unwrap_or(DEFAULT_PROCESSES),
            output_bytes: base.output_bytes,
        };
        Ok(Self {
            program,
            arg0: stdio.command[0].clone(),
            args: stdio.command[1..].to_vec(),
            cwd,
            entry_file,
            sha256: stdio.sha256.clone(),
            name: entry.name.clone(),
            package: stdio.package.clone(),
            unpinned: stdio.unpinned,
            pins: host.pins.clone(),
            env,
            work_dir,
            filesystem: stdio.filesystem,
            read_dirs: stdio.read_dirs.clone(),
            limits,
            network,
        })
    }

    /// Whether the entry may write the work dir (then read-only tools get an
    /// instance of their own that cannot).
    pub(crate) fn writable(&self) -> bool {
        self.filesystem == FsGrant::ReadWrite && self.work_dir.is_some()
    }

    /// The variables granted to it (what its redactor removes from results).
    pub(crate) fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// The child to start, writing the work dir or not, once its package and entry
    /// file are what the policy pinned (`server_unpinned`, `server_changed`,
    /// `identity_mismatch` otherwise).
    pub(crate) fn spec(&self, writable: bool) -> Result<ResidentSpec, String> {
        match &self.package {
            Some(pin) => super::pin::check(&self.name, &pin.root, &pin.sha256, self.pins.as_ref())?,
            None if self.unpinned => {}
            None => {
                return Err(format!(
                    "{}: servers.{name} pins no package: pin its files with `toolhost update-server {name}` \
                     (or say `unpinned = true` in its entry to start it whatever they are)",
                    crate::error::codes::SERVER_UNPINNED,
                    name = self.name
                ));
            }
        }
        if let Some(expected) = &self.sha256 {
            let actual = sha256_file(&self.entry_file)?;
            if &actual != expected {
                return Err(format!(
                    "{}: {} has sha256 {actual}, the policy pins {expected}; it changed since it was approved \
                     (re-approve it with `toolhost add-server`)",
                    crate::error::codes::IDENTITY_MISMATCH,
                    self.entry_file.display()
                ));
            }
        }
        Ok(ResidentSpec {
            program: self.program.clone(),
            arg0: self.arg0.clone(),
            args: self.args.clone(),
            cwd: self.cwd.clone(),
            env: self.env.clone(),
            work_dir: self.work_dir.clone(),
            writable: writable && self.writable(),
            read_dirs: self.read_dirs.clone(),
            limits: self.limits.clone(),
            loopback_port: self.network.as_ref().map(|_| PROXY_PORT),
        })
    }

    /// The command as one line.
    pub(crate) fn command_line(&self) -> String {
        std::iter::once(self.arg0.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// What confines it, in words (`toolhost inspect --server`).
    pub(crate) fn describe(&self) -> Vec<String> {
        let work = match (&self.work_dir, self.filesystem) {
            (None, _) => "work dir: none".to_string(),
            (Some(dir), FsGrant::ReadWrite) => format!(
                "work dir: {} read-write; its read-only tools (readOnlyHint) run in a second instance whose work \
                 dir is read-only (the hint alone would not stop a write: Landlock holds per process)",
                dir.display()
            ),
            (Some(dir), _) => format!("work dir: {} read-only", dir.display()),
        };
        let dirs: Vec<String> = self.read_dirs.iter().map(|d| d.display().to_string()).collect();
        let reads = format!(
            "reads: the system dirs{}",
            if dirs.is_empty() { String::new() } else { format!(", {}", dirs.join(", ")) }
        );
        let network = match &self.network {
            None => "network: none (a network namespace of its own)".to_string(),
            Some(grant) => {
                let hosts: Vec<&str> = grant.hosts.iter().map(|h| h.as_str()).collect();
                format!("network: only through its proxy (HTTPS_PROXY), to {}", hosts.join(", "))
            }
        };
        let fixed = ["PATH", "HOME", "TMPDIR", "LANG"];
        let names: Vec<&str> =
            self.env.iter().map(|(k, _)| k.as_str()).filter(|k| !fixed.contains(k)).collect();
        let env = format!(
            "env: {}",
            if names.is_empty() { "nothing granted".to_string() } else { names.join(", ") }
        );
        let entry = match &self.sha256 {
            Some(sha) => {
                format!("entry file: {} (sha256 {sha}, checked at each start)", self.entry_file.display())
            }
            None => format!("entry file: {} (no sha256 of its own in its entry)", self.entry_file.display()),
        };
        let package = match (&self.package, self.unpinned) {
            (Some(pin), _) => format!(
                "package: {} (every file, package-sha256 {}, walked and checked at each start)",
                pin.root.display(),
                pin.sha256
            ),
            (None, true) => "package: not pinned (`unpinned = true`: its files may change)".to_string(),
            (None, false) => {
                "package: not pinned, so it does not start (`toolhost update-server`)".to_string()
            }
        };
        let limits = format!(
            "limits: {} MiB of address space, {} CPU seconds, {} processes",
            self.limits.memory_bytes >> 20,
            self.limits.cpu_seconds,
            self.limits.processes
        );
        vec![work, reads, network, env, package, entry, limits]
    }
}

/// The program `name`: a path (relative to `cwd`) as it is, a bare name searched
/// for in `search`.
pub fn find_program(name: &str, cwd: &Path, search: &[PathBuf]) -> Result<PathBuf, String> {
    if name.contains('/') {
        let path = cwd.join(name);
        return match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() => Ok(path),
            Ok(_) => Err(format!("command: {} is not a file", path.display())),
            Err(e) => Err(format!("command: {}: {e}", path.display())),
        };
    }
    crate::imports::exec::find_program(name, search, None).ok_or_else(|| {
        let dirs: Vec<String> = search.iter().map(|d| d.display().to_string()).collect();
        format!("command: no program `{name}` in {}", dirs.join(":"))
    })
}

/// The file a server's sha256 pins: the first argument after the program when it
/// names a file (`node server.js`, `python3 srv.py`), else the program itself.
pub fn entry_file(command: &[String], cwd: &Path, program: &Path) -> PathBuf {
    match command.get(1).map(|arg| cwd.join(arg)) {
        Some(path) if std::fs::metadata(&path).is_ok_and(|m| m.is_file()) => path,
        _ => program.canonicalize().unwrap_or_else(|_| program.to_path_buf()),
    }
}

/// The sha256 of the file at `path`, as 64 lower-case hex digits.
pub fn sha256_file(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(hex::encode(Sha256::digest(&bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;

    fn host(work: &Path) -> HostSide {
        HostSide {
            work_dir: Some(work.to_path_buf()),
            search: crate::imports::exec::ExecSettings::default().search_path(),
            path_var: "/usr/bin:/bin".into(),
            host_env: vec![("KEEP".into(), "k".into()), ("SECRET_TOKEN".into(), "s".into())],
            child_limits: ChildLimits::default(),
            allow_private: false,
            pins: None,
        }
    }

    fn launch(text: &str, work: &Path) -> Result<Launch, String> {
        let policy = Policy::parse(text, &work.join("toolhost.toml")).map_err(|e| e.to_string())?;
        let entry = &policy.servers[0];
        let crate::policy::servers::ServerTransport::Stdio(stdio) = &entry.transport else { panic!() };
        Launch::new(entry, stdio, &host(work))
    }

    #[test]
    fn the_environment_is_only_what_is_granted() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().canonicalize().unwrap();
        std::fs::write(work.join("s.py"), "print()").unwrap();
        let l = launch(
            "[servers.a]\ncommand = [\"sh\", \"s.py\"]\nenv = [\"KEEP\", \"*\"]\nunpinned = true\n",
            &work,
        )
        .unwrap();
        let names: Vec<&str> = l.env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["PATH", "HOME", "TMPDIR", "LANG", "KEEP"]);
        assert_eq!(l.entry_file, work.join("s.py"));
        assert!(l.network.is_none() && !l.writable());
        let spec = l.spec(true).unwrap();
        assert!(!spec.writable && spec.loopback_port.is_none());

        let l = launch(
            "[servers.a]\ncommand = [\"sh\"]\nnetwork = [\"example.com\"]\nfilesystem = \"read-write\"\nunpinned = true\n",
            &work,
        )
        .unwrap();
        assert!(l.env.iter().any(|(k, v)| k == "HTTPS_PROXY" && v == "http://127.0.0.1:3128"));
        assert!(l.writable() && l.spec(true).unwrap().writable && !l.spec(false).unwrap().writable);
        assert!(l.entry_file.is_absolute());
    }

    #[test]
    fn a_changed_entry_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().canonicalize().unwrap();
        std::fs::write(work.join("s.py"), "one").unwrap();
        let pin = sha256_file(&work.join("s.py")).unwrap();
        let l = launch(
            &format!("[servers.a]\ncommand = [\"sh\", \"s.py\"]\nsha256 = \"{pin}\"\nunpinned = true\n"),
            &work,
        )
        .unwrap();
        assert!(l.spec(false).is_ok());
        std::fs::write(work.join("s.py"), "two").unwrap();
        let err = l.spec(false).unwrap_err();
        assert!(err.starts_with("identity_mismatch: ") && err.contains(&pin), "{err}");
        let err = launch("[servers.a]\ncommand = [\"no-such-program-here\"]\n", &work).unwrap_err();
        assert!(err.contains("no program `no-such-program-here`"), "{err}");
    }

    #[test]
    fn a_package_pin_is_required_and_checked_at_each_start() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().canonicalize().unwrap();
        std::fs::create_dir(work.join("pkg")).unwrap();
        std::fs::write(work.join("pkg/s.py"), "one").unwrap();
        std::fs::write(work.join("pkg/dep.py"), "dep").unwrap();
        let err = launch("[servers.a]\ncommand = [\"sh\", \"pkg/s.py\"]\n", &work)
            .unwrap()
            .spec(false)
            .unwrap_err();
        assert!(err.starts_with("server_unpinned: servers.a pins no package"), "{err}");
        let digest =
            super::super::pin::Manifest::walk(&work.join("pkg"), &Default::default()).unwrap().digest();
        let text = format!(
            "[servers.a]\ncommand = [\"sh\", \"pkg/s.py\"]\npackage = \"pkg\"\npackage-sha256 = \"{digest}\"\n"
        );
        let l = launch(&text, &work).unwrap();
        assert!(l.spec(false).is_ok());
        assert!(l.describe().iter().any(|d| d.contains(&format!("package-sha256 {digest}"))));
        // A dependency changed, not the entry file: refused all the same.
        std::fs::write(work.join("pkg/dep.py"), "DEP").unwrap();
        let err = l.spec(false).unwrap_err();
        assert!(err.starts_with("server_changed: servers.a: ") && err.contains(&digest), "{err}");
    }
}
