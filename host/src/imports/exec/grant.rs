//! What a plugin may run ([`ExecGrant`], from the policy), and the same resolved at
//! load to absolute paths ([`ResolvedGrant`]) so that a call never searches `PATH`
//! and a binary the model wrote into the work dir never runs by name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The `exec` grant of one plugin: the programs it may start, and whether it may run
/// shell command lines.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct ExecGrant {
    /// Program names (bare names, no `/`) it may start.
    pub programs: Vec<String>,
    /// Whether it may run `bash -c COMMAND` (the shell profile).
    pub shell: bool,
    /// Run children without Landlock, namespaces, seccomp and the process cap. Only
    /// ever set explicitly; the CPU, memory and file-size rlimits, the empty env, the
    /// process group and the deadline still apply.
    pub unconfined: bool,
    /// Children may commit: a `.git` stays writable for repository data (objects,
    /// refs, the index, `HEAD`: `GitPart::Data`). What git runs or
    /// trusts (hooks, config, info, …: `Guarded`) stays read-only even then.
    pub commit: bool,
}

impl ExecGrant {
    /// Whether `name` can be an allow-list entry: a bare file name.
    pub fn valid_program_name(name: &str) -> Result<(), String> {
        if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
            return Err(format!(
                "`{name}` is not a program name: give a bare name such as `git`, found on the host's PATH"
            ));
        }
        Ok(())
    }

    /// Whether the grant allows anything at all.
    pub fn is_empty(&self) -> bool {
        self.programs.is_empty() && !self.shell
    }

    /// Resolve every program name against `search` (in order), skipping results
    /// inside `work_dir`. A name that is not found stays unresolved: running it is
    /// refused, naming why.
    pub fn resolve(&self, search: &[PathBuf], work_dir: Option<&Path>) -> ResolvedGrant {
        let resolve =
            |name: &str| ExecGrant::valid_program_name(name).ok().and_then(|()| find(name, search, work_dir));
        let programs = self.programs.iter().map(|name| (name.clone(), resolve(name))).collect();
        let shell = if self.shell { resolve("bash") } else { None };
        ResolvedGrant {
            programs,
            shell_enabled: self.shell,
            shell,
            unconfined: self.unconfined,
            commit: self.commit,
        }
    }
}

/// The first executable file named `name` in `search`, canonical, and not inside
/// `work_dir`.
pub(crate) fn find(name: &str, search: &[PathBuf], work_dir: Option<&Path>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    for dir in search {
        let Ok(path) = dir.join(name).canonicalize() else { continue };
        if work_dir.is_some_and(|w| path.starts_with(w)) {
            tracing::warn!(program = name, path = %path.display(), "allow-listed program resolves inside the work dir; skipped");
            continue;
        }
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() && meta.permissions().mode() & 0o111 != 0 => return Some(path),
            _ => continue,
        }
    }
    None
}

/// An [`ExecGrant`] with every program resolved to an absolute path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResolvedGrant {
    /// Name → absolute path (`None`: not found on the host).
    programs: BTreeMap<String, Option<PathBuf>>,
    shell_enabled: bool,
    /// `bash` for the shell profile.
    shell: Option<PathBuf>,
    /// Run without Landlock and namespaces.
    pub unconfined: bool,
    /// Children may write repository data beneath a `.git` ([`ExecGrant::commit`]).
    pub commit: bool,
}

/// Why a program may not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not on the allow-list, a path, or not found on the host.
    Program(String),
    /// A shell line without the shell profile.
    Shell(String),
}

impl ResolvedGrant {
    /// The absolute path of the allow-listed program `name`.
    pub fn program(&self, name: &str) -> Result<&Path, Refusal> {
        if name.contains('/') {
            return Err(Refusal::Program(format!(
                "`{name}` is a path; only allow-listed program names run (resolved by the host outside the work dir)"
            )));
        }
        match self.programs.get(name) {
            Some(Some(path)) => Ok(path),
            Some(None) => Err(Refusal::Program(format!("`{name}` is allowed but not installed on the host"))),
            None => Err(Refusal::Program(format!("`{name}` is not on this plugin's list of programs"))),
        }
    }

    /// The shell for `bash -c`, when the grant has the shell profile.
    pub fn shell(&self) -> Result<&Path, Refusal> {
        if !self.shell_enabled {
            return Err(Refusal::Shell("this plugin may not run shell command lines".into()));
        }
        self.shell
            .as_deref()
            .ok_or_else(|| Refusal::Shell("the shell profile is granted but bash is not installed".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(programs: &[&str], shell: bool) -> ExecGrant {
        ExecGrant {
            programs: programs.iter().map(|s| s.to_string()).collect(),
            shell,
            unconfined: false,
            commit: false,
        }
    }

    #[test]
    fn names_resolve_to_absolute_paths_outside_the_work_dir() {
        let search = vec![PathBuf::from("/usr/bin"), PathBuf::from("/bin")];
        let resolved = grant(&["true", "no-such-program-xyz"], false).resolve(&search, None);
        assert!(resolved.program("true").unwrap().is_absolute());
        assert!(
            matches!(resolved.program("no-such-program-xyz"), Err(Refusal::Program(m)) if m.contains("not installed"))
        );
        assert!(
            matches!(resolved.program("ls"), Err(Refusal::Program(m)) if m.contains("not on this plugin's list"))
        );
        for path in ["./true", "../bin/true", "/usr/bin/true", "bin/true"] {
            assert!(
                matches!(resolved.program(path), Err(Refusal::Program(m)) if m.contains("is a path")),
                "{path}"
            );
        }
        assert!(matches!(resolved.shell(), Err(Refusal::Shell(_))));
    }

    #[test]
    fn a_binary_in_the_work_dir_never_resolves() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().canonicalize().unwrap();
        let bin = work.join("bin");
        std::fs::create_dir(&bin).unwrap();
        let fake = bin.join("git");
        std::fs::write(&fake, "#!/bin/sh\necho pwned\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        // The work dir's bin comes first in the search path: it is still skipped.
        let search = vec![bin.clone(), PathBuf::from("/usr/bin")];
        let resolved = grant(&["git"], false).resolve(&search, Some(&work));
        if let Ok(path) = resolved.program("git") {
            assert!(!path.starts_with(&work), "{}", path.display());
        }
    }

    #[test]
    fn the_shell_profile_resolves_bash_without_listing_it() {
        let resolved = grant(&[], true).resolve(&[PathBuf::from("/usr/bin"), PathBuf::from("/bin")], None);
        assert!(resolved.shell().unwrap().ends_with("bash"));
        assert!(resolved.program("bash").is_err());
        assert!(ExecGrant::valid_program_name("a/b").is_err());
        assert!(ExecGrant::valid_program_name("..").is_err());
        assert!(ExecGrant::valid_program_name("cargo").is_ok());
    }

    #[test]
    fn the_commit_grant_carries_over_to_the_resolved_grant() {
        let search = [PathBuf::from("/usr/bin")];
        assert!(!grant(&["true"], false).resolve(&search, None).commit);
        let committing = ExecGrant { commit: true, ..grant(&["true"], false) };
        assert!(committing.resolve(&search, None).commit);
    }
}
