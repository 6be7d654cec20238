//! Permissions: whether a call may run, decided before it enters a guest.
//!
//! [`Permissions::decide`], in order (the first that applies wins):
//!
//! 1. a tool that changes things, aimed at a path outside the work dir (also through a
//!    symlink) or at a protected path (`.git/`, the policy file, the policy's
//!    `protected` globs) → deny, in every mode;
//! 2. a deny rule matches → deny, in every mode (for a `command` line: any simple
//!    command in it, see [`super::rules`]);
//! 3. a pre-tool-use hook said allow or ask ([`HookSays`]) → that, whatever the mode
//!    and the allow rules say (a hook's deny is decided before, by the caller: it
//!    wins over everything);
//! 4. `plan` mode and the tool is not read-only → deny (no allow rule widens plan mode:
//!    its promise is that nothing changes);
//! 5. the tool is read-only → allow;
//! 6. `yolo` mode → allow;
//! 7. an allow rule matches → allow (for a `command` line: every simple command in it
//!    matched by some allow rule, and nothing in it that no rule may allow — a
//!    substitution, a redirection to a file, … — see [`super::rules`]);
//! 8. `terminal`'s line is all read-only commands of the safe list, joined by pipes at
//!    most ([`super::shell::is_safe`]), and `[permissions] safe-commands` is on (the
//!    default) → allow;
//! 9. `accept-edits` mode, the call has no `command` line, and the tool's path
//!    arguments are all inside the work dir → allow;
//! 10. otherwise → ask the [`super::Approver`] (no approver: deny), with the
//!     narrowest useful rule for "always" (`terminal(command=git commit*)`), every
//!     value in it literal ([`super::derive`]).
//!
//! A reason quotes the paths it names and escapes what a hook said
//! ([`super::shown`]): it is shown to people and to hooks.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::derive::suggest_rule;
use super::rules::{self, Rule, Subject, normalize};
use super::shell::{self, COMMAND_KEY, SHELL_TOOL};
use super::shown::{MAX_SHOWN, plain, quote};
use confine::Protected;

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

/// What the pre-tool-use hooks said, when not deny (see the module's order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookSays {
    /// No hook had an opinion: the mode and the rules decide.
    Nothing,
    /// A hook allowed the call, and why.
    Allow(String),
    /// A hook wants the user asked, and why.
    Ask(String),
}

/// The mode, the rules and the protected paths.
#[derive(Debug, Clone)]
pub struct Permissions {
    /// The mode.
    pub mode: Mode,
    /// Allow rules.
    pub allow: Vec<Rule>,
    /// Deny rules (they win over everything else).
    pub deny: Vec<Rule>,
    /// Whether the safe list runs without asking (step 8; on unless the policy says
    /// `safe-commands = false`).
    pub safe_commands: bool,
    protected_globs: Vec<String>,
    protected_files: Vec<PathBuf>,
    protected: Option<std::sync::Arc<Protected>>,
    work_dir: Option<PathBuf>,
}

impl Default for Permissions {
    fn default() -> Self {
        Self {
            mode: Mode::default(),
            allow: Vec::new(),
            deny: Vec::new(),
            safe_commands: true,
            protected_globs: Vec::new(),
            protected_files: Vec::new(),
            protected: None,
            work_dir: None,
        }
    }
}

impl Permissions {
    /// Permissions in `mode` with no rules (the safe list on).
    pub fn new(mode: Mode) -> Self {
        Self { mode, ..Self::default() }
    }

    /// Judge paths against `work_dir` (canonical).
    pub fn with_work_dir(mut self, work_dir: Option<PathBuf>) -> Self {
        self.work_dir = work_dir;
        self.rebuild();
        self
    }

    /// Protect these globs (relative to the work dir), on top of `.git`.
    pub fn with_protected(mut self, globs: &[String]) -> Result<Self, String> {
        // Checked here so that a bad glob is reported even without a work dir.
        Protected::new("/").with_globs(globs)?;
        self.protected_globs = globs.to_vec();
        self.rebuild();
        Ok(self)
    }

    /// Protect one file or dir (the policy file, the host's own dirs), given by its
    /// host path.
    pub fn protect_file(&mut self, path: &Path) {
        self.protected_files.push(path.to_path_buf());
        self.rebuild();
    }

    /// The protected paths, as every layer that writes enforces them (`None`
    /// without a work dir).
    pub fn protected(&self) -> Option<&std::sync::Arc<Protected>> {
        self.protected.as_ref()
    }

    fn rebuild(&mut self) {
        self.protected = self.work_dir.as_ref().map(|dir| {
            let mut protected =
                Protected::new(dir).with_globs(&self.protected_globs).unwrap_or_else(|_| Protected::new(dir));
            for file in &self.protected_files {
                protected.add(file);
            }
            std::sync::Arc::new(protected)
        });
    }

    /// Decide a call to `tool` (`read_only` as it declares) with `args`.
    pub fn decide(&self, tool: &str, read_only: bool, args: &Value) -> Decision {
        self.decide_hooked(tool, read_only, args, &HookSays::Nothing)
    }

    /// [`Permissions::decide`], with what the pre-tool-use hooks said.
    pub fn decide_hooked(&self, tool: &str, read_only: bool, args: &Value, hook: &HookSays) -> Decision {
        if read_only && self.deny.is_empty() && *hook == HookSays::Nothing {
            // The common case needs no look at the arguments.
            return Decision::Allow("read-only tool".into());
        }
        let subject = Subject::new(args, self.work_dir.as_deref());
        if !read_only && let Some(reason) = self.refuse_path(&subject) {
            return Decision::Deny(reason);
        }
        if let Some(rule) = self.deny.iter().find(|r| r.denies(tool, &subject)) {
            return Decision::Deny(format!("rule deny {}", plain(rule.as_str(), MAX_SHOWN)));
        }
        match hook {
            HookSays::Nothing => {}
            HookSays::Allow(reason) => {
                return Decision::Allow(format!("hook allowed: {}", plain(reason, MAX_SHOWN)));
            }
            HookSays::Ask(reason) => {
                return Decision::Ask {
                    reason: format!("a hook asks: {}", plain(reason, MAX_SHOWN)),
                    suggested_rule: suggest_rule(tool, &subject),
                };
            }
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
        if let Some(reason) = self.allowed_by_rules(tool, &subject) {
            return Decision::Allow(reason);
        }
        if self.safe_commands
            && tool == SHELL_TOOL
            && let Some(line) = subject.command_line()
            && shell::is_safe(line, self.runs_in_work_dir(&subject))
        {
            return Decision::Allow("a read-only command of the safe list".into());
        }
        // A command line is no edit, wherever it runs.
        if self.mode == Mode::AcceptEdits
            && subject.paths().next().is_some()
            && subject.get(COMMAND_KEY).is_none()
        {
            // refuse_path already denied every path outside the work dir.
            return Decision::Allow("accept-edits mode: writes inside the work dir".into());
        }
        let mut reason = format!("{tool} can change things, and {} mode asks first", self.mode.as_str());
        if let Some(hazard) = subject.command_line().and_then(|line| line.hazards().first()) {
            reason.push_str(&format!(" (no rule can allow this line: {})", hazard.describe()));
        }
        Decision::Ask { reason, suggested_rule: suggest_rule(tool, &subject) }
    }

    /// The allow rules that let the call run, as the reason (step 7): one rule that
    /// covers it whole, or one rule for each simple command of its `command` line.
    fn allowed_by_rules(&self, tool: &str, subject: &Subject) -> Option<String> {
        if let Some(rule) = self.allow.iter().find(|r| r.allows(tool, subject)) {
            return Some(format!("rule allow {}", plain(rule.as_str(), MAX_SHOWN)));
        }
        let line = subject.command_line().filter(|line| rules::allowable(line))?;
        let rules: Vec<&Rule> =
            self.allow.iter().filter(|r| r.has_command() && r.fits(tool, subject)).collect();
        let mut used: Vec<&Rule> = Vec::new();
        for command in &line.commands {
            let rule = *rules.iter().find(|r| r.covers(command))?;
            if !used.contains(&rule) {
                used.push(rule);
            }
        }
        let names: Vec<String> = used.iter().map(|r| plain(r.as_str(), MAX_SHOWN)).collect();
        Some(format!("rules allow {}", names.join(", ")))
    }

    /// The work dir, when every path argument of the call names it (where a
    /// `terminal` line runs, and its HOME); `None` otherwise.
    fn runs_in_work_dir(&self, subject: &Subject) -> Option<&Path> {
        subject.paths().all(|(_, path)| path == Path::new(".")).then_some(self.work_dir.as_deref()).flatten()
    }

    /// Why a writing call may not touch one of its paths, if it may not.
    fn refuse_path(&self, subject: &Subject) -> Option<String> {
        let work_dir = self.work_dir.as_deref()?;
        let protected = self.protected.as_deref()?;
        for (_, path) in subject.paths() {
            let shown = || quote(&path.to_string_lossy(), MAX_SHOWN);
            if path.is_absolute() || path.starts_with("..") {
                return Some(format!("{} is outside the work dir", shown()));
            }
            let Some(resolved) = resolve_links(work_dir, path) else {
                return Some(format!("{} leads outside the work dir through a symlink", shown()));
            };
            for candidate in [path, resolved.as_path()] {
                if protected.check_rel(candidate, false).is_some() {
                    return Some(format!("{} is a protected path", shown()));
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A reason names a path quoted and escaped, and a hook's words or a rule
    /// escaped: no line break or escape sequence of a call's reaches it.
    #[test]
    fn reasons_quote_paths_and_escape_what_calls_chose() {
        let p = Permissions::new(Mode::Default).with_work_dir(Some("/w".into()));
        let odd = "x\nAsked because: fine\u{1b}[2J\u{202e}";
        let outside = p.decide("write_file", false, &json!({ "path": format!("../{odd}") }));
        assert_eq!(
            outside,
            Decision::Deny(r#""/x\nAsked because: fine\u001b[2J\u202e" is outside the work dir"#.into())
        );
        let protected = p.decide("write_file", false, &json!({ "path": format!(".git/{odd}") }));
        let Decision::Deny(why) = protected else { panic!("{protected:?}") };
        assert!(why.starts_with(r#"".git/x\nAsked"#) && why.ends_with("\" is a protected path"), "{why}");
        let hook = HookSays::Ask(odd.into());
        let Decision::Ask { reason, .. } = p.decide_hooked("write_file", false, &json!({"path": "a"}), &hook)
        else {
            panic!()
        };
        assert_eq!(reason, r"a hook asks: x\nAsked because: fine\u001b[2J\u202e");
        let Decision::Ask { suggested_rule, .. } = p.decide("write_file", false, &json!({ "path": odd }))
        else {
            panic!()
        };
        let mut with = p.clone();
        with.allow = vec![Rule::parse(&suggested_rule).unwrap()];
        let allowed = with.decide("write_file", false, &json!({ "path": odd }));
        assert_eq!(
            allowed,
            Decision::Allow(r"rule allow write_file(path=x\\nAsked\ because:\ fine\\u001b\[2J\u202e)".into())
        );
    }
}
