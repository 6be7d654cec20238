//! Which policy is in force for a work dir, and whether it may be believed.
//!
//! Two files may apply, merged:
//! - the **project policy**: `--policy FILE`, else `toolhost.toml` in the work dir.
//!   When it lies inside the work dir a tool could have written it, so it takes
//!   effect only if the user trusted its exact bytes ([`ConfigDir::trusted`]); an
//!   untrusted one is still obeyed when it only narrows (deny rules, protected paths,
//!   `default` or `plan` mode, `safe-commands = false`), and refused with
//!   [`PolicyError::Untrusted`] when it widens anything — never silently ignored,
//!   never silently obeyed.
//! - the **private policy** under the user's config dir, keyed by the work dir
//!   ([`ConfigDir::private_policy`]): the user's own, where "always" answers go.
//!
//! Files are read with [`hostfs::read_text`]: no symlink followed, regular files
//! only, bounded, non-blocking.

use std::path::Path;

use super::trust::{ConfigDir, sha256_hex};
use super::{MAX_POLICY_BYTES, Mode, POLICY_FILE, Policy, PolicyError};
use confine::hostfs;

impl Policy {
    /// The policy for a host in `work_dir` (see the module docs), with the user's
    /// config dir from the environment ([`ConfigDir::from_env`]).
    pub fn discover(explicit: Option<&Path>, work_dir: &Path) -> Result<Self, PolicyError> {
        Self::discover_in(explicit, work_dir, ConfigDir::from_env().as_ref())
    }

    /// [`Self::discover`] with the config dir `config` (`None`: no private policy and
    /// no trust records, so a project policy inside the work dir may only narrow).
    pub fn discover_in(
        explicit: Option<&Path>,
        work_dir: &Path,
        config: Option<&ConfigDir>,
    ) -> Result<Self, PolicyError> {
        let work_dir = work_dir.canonicalize().unwrap_or_else(|_| work_dir.to_path_buf());
        let project_path = explicit.map(Path::to_path_buf).unwrap_or_else(|| work_dir.join(POLICY_FILE));
        let project = match read(&project_path)? {
            Some(text) => {
                let policy = Self::parse(&text, &project_path)?;
                check_trust(&policy, &text, &project_path, &work_dir, config)?;
                Some(policy)
            }
            None if explicit.is_some() => {
                return Err(PolicyError::Read {
                    path: project_path.display().to_string(),
                    source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
                });
            }
            None => None,
        };
        let private_path = config.map(|c| c.private_policy(&work_dir));
        let private = match &private_path {
            Some(path) => read(path)?.map(|text| Self::parse(&text, path)).transpose()?,
            None => None,
        };
        let mut policy = match (project, private) {
            (Some(project), Some(private)) => project.merge(private)?,
            (Some(project), None) => project,
            (None, Some(private)) => private,
            (None, None) => Self::default(),
        };
        policy.path = Some(project_path);
        policy.private_path = private_path;
        policy.config_dir = config.map(|c| c.root().to_path_buf());
        Ok(policy)
    }

    /// What this policy grants beyond the defaults, as short phrases; empty when it
    /// only narrows (deny rules, protected paths, `default` or `plan` mode,
    /// `safe-commands = false`).
    pub fn widening(&self) -> Vec<String> {
        let mut widens = Vec::new();
        if matches!(self.mode, Mode::AcceptEdits | Mode::Yolo) {
            widens.push(format!("mode = \"{}\"", self.mode.as_str()));
        }
        if self.safe_commands == Some(true) {
            // Only `false` narrows: `true` would turn back on what another file turned off.
            widens.push("safe-commands = true (read-only commands run without asking)".into());
        }
        if self.follow_links == Some(true) {
            widens.push("follow-links = true (the file tools write through symlinks)".into());
        }
        if self.allow_private_network == Some(true) {
            widens.push("[network] allow-private = true (tools reach private and loopback addresses)".into());
        }
        if !self.allow.is_empty() {
            let rules: Vec<&str> = self.allow.iter().map(|r| r.as_str()).collect();
            widens.push(format!("allow rules ({})", rules.join(", ")));
        }
        if !self.plugins.is_empty() {
            let names: Vec<&str> = self.plugins.iter().map(|p| p.name.as_str()).collect();
            widens.push(format!("plugins ({})", names.join(", ")));
        }
        if self.sections.builtins {
            widens.push("[builtins] (what the builtins see and run)".into());
        }
        if self.sections.exec {
            widens.push("[exec] (where programs come from and their limits)".into());
        }
        if !self.tests.is_empty() {
            let names: Vec<&str> = self.tests.iter().map(|t| t.name.as_str()).collect();
            widens.push(format!("test profiles ({})", names.join(", ")));
        }
        if !self.servers.is_empty() {
            let entries: Vec<String> = self.servers.iter().map(|s| s.widening()).collect();
            widens.push(format!("servers ({}: programs that run with their tools)", entries.join("; ")));
        }
        if !self.hooks.is_empty() {
            let labels: Vec<String> = self.hooks.iter().map(|h| h.label()).collect();
            widens.push(format!("hooks ({}: programs that run and may allow calls)", labels.join(", ")));
        }
        widens
    }

    /// This (project) policy with the user's `private` one over it: the private
    /// mode, `safe-commands`, `require-fresh`, `follow-links`, `[builtins]` and `[exec]` win when it sets them; rules,
    /// protected paths, plugins and test profiles add up (a plugin or profile name in both is an error).
    pub fn merge(mut self, private: Policy) -> Result<Policy, PolicyError> {
        let clash = |what: &str, name: &str| PolicyError::Invalid {
            path: private.path.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            line: 0,
            message: format!(
                "{what} `{name}` is also defined in {}; keep one",
                self.path.as_ref().map(|p| p.display().to_string()).unwrap_or_default()
            ),
        };
        if let Some(p) = private.plugins.iter().find(|p| self.plugins.iter().any(|q| q.name == p.name)) {
            return Err(clash("plugin", &p.name));
        }
        if let Some(t) = private.tests.iter().find(|t| self.tests.iter().any(|q| q.name == t.name)) {
            return Err(clash("test profile", &t.name));
        }
        if let Some(s) = private.servers.iter().find(|s| self.servers.iter().any(|q| q.name == s.name)) {
            return Err(clash("server", &s.name));
        }
        if private.sections.mode {
            self.mode = private.mode;
            self.sections.mode = true;
        }
        if private.safe_commands.is_some() {
            self.safe_commands = private.safe_commands;
        }
        if private.require_fresh.is_some() {
            self.require_fresh = private.require_fresh;
        }
        if private.follow_links.is_some() {
            self.follow_links = private.follow_links;
        }
        if private.allow_private_network.is_some() {
            self.allow_private_network = private.allow_private_network;
        }
        if private.shape_output.is_some() {
            self.shape_output = private.shape_output;
        }
        if private.sections.builtins {
            self.builtins = private.builtins;
            self.sections.builtins = true;
        }
        if private.sections.exec {
            self.exec = private.exec;
            self.sections.exec = true;
        }
        self.allow.extend(private.allow);
        self.deny.extend(private.deny);
        self.protected.extend(private.protected);
        self.plugins.extend(private.plugins);
        self.tests.extend(private.tests);
        self.hooks.extend(private.hooks);
        self.servers.extend(private.servers);
        self.files.extend(private.files);
        Ok(self)
    }
}

/// A project policy inside the work dir is believed only when trusted, or when it
/// only narrows.
fn check_trust(
    policy: &Policy,
    text: &str,
    path: &Path,
    work_dir: &Path,
    config: Option<&ConfigDir>,
) -> Result<(), PolicyError> {
    if !inside(path, work_dir) {
        return Ok(());
    }
    let sha256 = sha256_hex(text.as_bytes());
    if config.and_then(|c| c.trusted(path)).as_deref() == Some(sha256.as_str()) {
        return Ok(());
    }
    let widens = policy.widening();
    if widens.is_empty() {
        return Ok(());
    }
    Err(PolicyError::Untrusted { path: path.display().to_string(), sha256, widens })
}

/// Read a policy file (absent: `None`).
fn read(path: &Path) -> Result<Option<String>, PolicyError> {
    hostfs::read_text(path, MAX_POLICY_BYTES)
        .map_err(|source| PolicyError::Read { path: path.display().to_string(), source })
}

/// Whether `path` (which may not exist) lies inside the canonical `dir`.
pub fn inside(path: &Path, dir: &Path) -> bool {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    parent.canonicalize().is_ok_and(|p| p.starts_with(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(
        project: Option<&str>,
        private: Option<&str>,
    ) -> (tempfile::TempDir, tempfile::TempDir, ConfigDir) {
        let work = tempfile::tempdir().unwrap();
        let config_dir = tempfile::tempdir().unwrap();
        let config = ConfigDir::at(config_dir.path());
        if let Some(text) = project {
            std::fs::write(work.path().join(POLICY_FILE), text).unwrap();
        }
        if let Some(text) = private {
            let path = config.private_policy(&work.path().canonicalize().unwrap());
            hostfs::create_private_dir(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        (work, config_dir, config)
    }

    #[test]
    fn an_untrusted_project_policy_that_widens_is_refused_until_trusted() {
        let (work, _c, config) =
            setup(Some("[permissions]\nmode = \"yolo\"\nallow = [\"terminal\"]\n"), None);
        let err = Policy::discover_in(None, work.path(), Some(&config)).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("toolhost trust") && text.contains("yolo") && text.contains("terminal"),
            "{text}"
        );
        config.trust_current(&work.path().join(POLICY_FILE)).unwrap();
        let policy = Policy::discover_in(None, work.path(), Some(&config)).unwrap();
        assert_eq!(policy.mode, Mode::Yolo);
        // Any change to the bytes needs trust again.
        std::fs::write(work.path().join(POLICY_FILE), "[permissions]\nmode = \"yolo\"\n").unwrap();
        assert!(Policy::discover_in(None, work.path(), Some(&config)).is_err());
        // Without a config dir nothing inside the work dir can be trusted.
        assert!(Policy::discover_in(None, work.path(), None).is_err());
    }

    #[test]
    fn an_untrusted_policy_that_only_narrows_is_obeyed() {
        let text = "[permissions]\nmode = \"plan\"\nsafe-commands = false\nrequire-fresh = true\nfollow-links = false\ndeny = [\"write_file(path=.env)\"]\nprotected = [\"keys/\"]\n";
        let (work, _c, config) = setup(Some(text), None);
        let policy = Policy::discover_in(None, work.path(), Some(&config)).unwrap();
        assert_eq!(policy.mode, Mode::Plan);
        assert_eq!(policy.deny.len(), 1);
        assert_eq!(policy.safe_commands, Some(false));
        assert_eq!((policy.require_fresh, policy.follow_links), (Some(true), Some(false)));
        assert!(!policy.permissions(None).unwrap().safe_commands);
        assert!(policy.widening().is_empty());
        for widening in [
            "[builtins]\nenv = [\"HOME\"]\n",
            "[exec]\nmax-children = 1\n",
            "[permissions]\nmode = \"accept-edits\"\n",
            "[[hooks]]\nevent = \"pre-tool-use\"\nmatcher = \"*\"\ncommand = [\"true\"]\n",
            "[permissions]\nsafe-commands = true\n",
            "[permissions]\nfollow-links = true\n",
        ] {
            std::fs::write(work.path().join(POLICY_FILE), widening).unwrap();
            assert!(Policy::discover_in(None, work.path(), Some(&config)).is_err(), "{widening}");
        }
    }

    #[test]
    fn the_private_policy_is_merged_over_the_project_one() {
        let (work, _c, config) = setup(
            Some("[permissions]\ndeny = [\"write_file(path=.env)\"]\n"),
            Some("[permissions]\nmode = \"accept-edits\"\nsafe-commands = false\nallow = [\"terminal\"]\n"),
        );
        let policy = Policy::discover_in(None, work.path(), Some(&config)).unwrap();
        assert_eq!(policy.mode, Mode::AcceptEdits);
        assert_eq!(policy.safe_commands, Some(false), "the private policy's wins");
        assert_eq!((policy.allow.len(), policy.deny.len()), (1, 1));
        assert!(policy.private_path.as_ref().unwrap().starts_with(config.root()));
        assert_eq!(policy.files.len(), 2);
    }

    #[test]
    fn a_policy_outside_the_work_dir_needs_no_trust() {
        let (work, _c, config) = setup(None, None);
        let elsewhere = tempfile::tempdir().unwrap();
        let path = elsewhere.path().join("p.toml");
        std::fs::write(&path, "[permissions]\nmode = \"yolo\"\n").unwrap();
        let policy = Policy::discover_in(Some(&path), work.path(), Some(&config)).unwrap();
        assert_eq!(policy.mode, Mode::Yolo);
    }

    #[test]
    fn planted_links_and_fifos_are_not_read() {
        let (work, _c, config) = setup(None, None);
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("yolo.toml");
        std::fs::write(&target, "[permissions]\nmode = \"yolo\"\n").unwrap();
        std::os::unix::fs::symlink(&target, work.path().join(POLICY_FILE)).unwrap();
        let err = Policy::discover_in(None, work.path(), Some(&config)).unwrap_err().to_string();
        assert!(err.contains("symlink"), "{err}");
        std::fs::remove_file(work.path().join(POLICY_FILE)).unwrap();
        std::os::unix::fs::symlink("/dev/zero", work.path().join(POLICY_FILE)).unwrap();
        assert!(Policy::discover_in(None, work.path(), Some(&config)).is_err());
    }
}
