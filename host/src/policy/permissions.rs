//! Permissions: whether a call may run, decided before it enters a guest.
//!
//! [`Permissions::decide`], in order (the first that applies wins):
//!
//! 1. a tool that changes things, aimed at a path outside the work dir (also through a
//!    symlink) or at a protected path (`.git/`, the policy file, the policy's
//!    `protected` globs) → deny, in every mode;
//! 2. a deny rule matches → deny, in every mode;
//! 3. `plan` mode and the tool is not read-only → deny (no allow rule widens plan mode:
//!    its promise is that nothing changes);
//! 4. the tool is read-only → allow;
//! 5. `yolo` mode → allow;
//! 6. an allow rule matches → allow;
//! 7. `accept-edits` mode and the tool's path arguments are all inside the work dir →
//!    allow;
//! 8. otherwise → ask the [`super::Approver`] (no approver: deny).

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde_json::Value;

use super::rules::{Rule, Subject, normalize};

/// How much runs without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Read-only tools and allow rules run; everything else asks.
    #[default]
    Default,
    /// Only read-only tools run.
    Plan,
    /// Also tools that write inside the work dir.
    AcceptEdits,
    /// Everything, except what deny rules and protected paths forbid.
    Yolo,
}

impl Mode {
    /// The spelling used in the policy file and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::Plan => "plan",
            Mode::AcceptEdits => "accept-edits",
            Mode::Yolo => "yolo",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "default" => Ok(Mode::Default),
            "plan" => Ok(Mode::Plan),
            "accept-edits" => Ok(Mode::AcceptEdits),
            "yolo" => Ok(Mode::Yolo),
            _ => Err(format!("unknown mode `{s}` (expected default, plan, accept-edits or yolo)")),
        }
    }
}

/// The outcome of [`Permissions::decide`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it, and why.
    Allow(String),
    /// Don't, and why (shown to the model: what was refused, not how to widen it).
    Deny(String),
    /// Ask someone: why it needs asking, and the rule "always" would add.
    Ask {
        /// Why the call needs approval.
        reason: String,
        /// The allow rule an "always" answer saves.
        suggested_rule: String,
    },
}

/// The mode, the rules and the protected paths.
#[derive(Debug, Clone, Default)]
pub struct Permissions {
    /// The mode.
    pub mode: Mode,
    /// Allow rules.
    pub allow: Vec<Rule>,
    /// Deny rules (they win over everything else).
    pub deny: Vec<Rule>,
    protected: Option<GlobSet>,
    protected_files: Vec<PathBuf>,
    work_dir: Option<PathBuf>,
}

impl Permissions {
    /// Permissions in `mode` with no rules.
    pub fn new(mode: Mode) -> Self {
        Self { mode, ..Self::default() }
    }

    /// Judge paths against `work_dir` (canonical).
    pub fn with_work_dir(mut self, work_dir: Option<PathBuf>) -> Self {
        self.work_dir = work_dir;
        self
    }

    /// Protect these globs (relative to the work dir), on top of `.git/`.
    pub fn with_protected(mut self, globs: &[String]) -> Result<Self, String> {
        let mut set = GlobSetBuilder::new();
        for pattern in globs {
            let glob = GlobBuilder::new(pattern.trim_end_matches('/'))
                .literal_separator(true)
                .build()
                .map_err(|e| format!("protected path `{pattern}`: {e}"))?;
            set.add(glob);
            // `secrets/` or `secrets` protects what is under it too.
            let under = format!("{}/**", pattern.trim_end_matches('/'));
            set.add(GlobBuilder::new(&under).literal_separator(true).build().map_err(|e| e.to_string())?);
        }
        self.protected = Some(set.build().map_err(|e| e.to_string())?);
        Ok(self)
    }

    /// Protect one file (the policy file), given by its host path.
    pub fn protect_file(&mut self, path: &Path) {
        self.protected_files.push(path.to_path_buf());
    }

    /// Decide a call to `tool` (`read_only` as it declares) with `args`.
    pub fn decide(&self, tool: &str, read_only: bool, args: &Value) -> Decision {
        if read_only && self.deny.is_empty() {
            // The common case needs no look at the arguments.
            return Decision::Allow("read-only tool".into());
        }
        let subject = Subject::new(args, self.work_dir.as_deref());
        if !read_only && let Some(reason) = self.refuse_path(&subject) {
            return Decision::Deny(reason);
        }
        if let Some(rule) = self.deny.iter().find(|r| r.matches(tool, &subject)) {
            return Decision::Deny(format!("rule deny {rule}"));
        }
        if read_only {
            return Decision::Allow("read-only tool".into());
        }
        match self.mode {
            Mode::Plan => {
                return Decision::Deny(format!("plan mode runs read-only tools only; {tool} is not"));
            }
            Mode::Yolo => return Decision::Allow("yolo mode".into()),
            Mode::Default | Mode::AcceptEdits => {}
        }
        if let Some(rule) = self.allow.iter().find(|r| r.matches(tool, &subject)) {
            return Decision::Allow(format!("rule allow {rule}"));
        }
        if self.mode == Mode::AcceptEdits && subject.paths().next().is_some() {
            // refuse_path already denied every path outside the work dir.
            return Decision::Allow("accept-edits mode: writes inside the work dir".into());
        }
        Decision::Ask {
            reason: format!("{tool} can change things, and {} mode asks first", self.mode.as_str()),
            suggested_rule: suggest_rule(tool, &subject),
        }
    }

    /// Why a writing call may not touch one of its paths, if it may not.
    fn refuse_path(&self, subject: &Subject) -> Option<String> {
        let work_dir = self.work_dir.as_deref()?;
        for (_, path) in subject.paths() {
            if path.is_absolute() || path.starts_with("..") {
                return Some(format!("{} is outside the work dir", path.display()));
            }
            let Some(resolved) = resolve_links(work_dir, path) else {
                return Some(format!("{} leads outside the work dir through a symlink", path.display()));
            };
            for candidate in [path, resolved.as_path()] {
                if candidate.components().any(|c| c.as_os_str() == ".git")
                    || self.protected.as_ref().is_some_and(|set| set.is_match(candidate))
                    || self.protected_files.iter().any(|f| work_dir.join(candidate) == *f)
                {
                    return Some(format!("{} is a protected path", path.display()));
                }
            }
        }
        None
    }
}

/// `rel` (inside `work_dir`) with its existing part resolved through symlinks, relative
/// to the work dir again; `None` when that leaves the work dir. Walks down from the
/// work dir with one `lstat` per existing component, and resolves only when it meets
/// a symlink (the common case, plain directories, costs no `realpath`).
fn resolve_links(work_dir: &Path, rel: &Path) -> Option<PathBuf> {
    let mut current = work_dir.to_path_buf();
    let mut components = rel.components();
    for component in components.by_ref() {
        current.push(component);
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = current.canonicalize().ok()?;
                let mut resolved = target.strip_prefix(work_dir).ok()?.to_path_buf();
                resolved.extend(components);
                // The rest may hold more links: judge it again from the resolved prefix.
                return resolve_links(work_dir, &normalize(&resolved.to_string_lossy(), None));
            }
            Ok(_) => {}
            // Missing from here on: nothing left to resolve.
            Err(_) => {
                current.extend(components);
                break;
            }
        }
    }
    Some(current.strip_prefix(work_dir).ok()?.to_path_buf())
}

/// The narrowest useful allow rule for a call: the exact path, the URL's origin, or
/// the bare tool.
fn suggest_rule(tool: &str, subject: &Subject) -> String {
    if let Some((key, path)) = subject.paths().next() {
        return format!("{tool}({key}={})", globset::escape(&path.to_string_lossy()));
    }
    if let Some(url) = subject.get("url").and_then(|u| url::Url::parse(u).ok())
        && let Some(host) = url.host_str()
    {
        return format!("{tool}(url={}://{}/**)", url.scheme(), globset::escape(host));
    }
    tool.to_string()
}
