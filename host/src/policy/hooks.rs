//! The policy's `[[hooks]]` entries: what runs before or after which calls.
//!
//! ```toml
//! [[hooks]]
//! event = "pre-tool-use"                  # or "post-tool-use"
//! matcher = "terminal(command=git push*)" # a rule pattern; "*" for every call
//! command = ["./scripts/check-push", "--strict"]   # the user's program, confined
//! timeout-ms = 5000                       # the default
//!
//! [[hooks]]
//! event = "post-tool-use"
//! matcher = "write_file"
//! component = "hooks/audit.wasm"          # a component exporting `hooks`
//! sha256 = "…"                            # the bytes that were approved
//! ```
//!
//! A hook is the user's program: it runs only from a policy the user trusts (an
//! untrusted project policy with hooks widens, and is refused), confined like a
//! `terminal` child. What it answers is decided in `crate::hooks`.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::rules::Rule;

/// The default time a hook may take.
pub(crate) const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest time a hook may be given.
pub(crate) const MAX_HOOK_TIMEOUT: Duration = Duration::from_secs(600);

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HookEvent {
    /// After the arguments are validated, before the permissions decide.
    PreToolUse,
    /// After the tool ran (or failed), before the result is returned.
    PostToolUse,
}

impl HookEvent {
    /// The spelling in the policy file and in a hook's input.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "pre-tool-use",
            HookEvent::PostToolUse => "post-tool-use",
        }
    }
}

/// What a hook runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookAction {
    /// A program and its arguments (a relative program with a `/` is taken relative
    /// to the policy file's dir; a bare name is looked up on the exec search path).
    Command(Vec<String>),
    /// A component exporting the WIT `hooks` interface, pinned by its sha256.
    Component {
        /// The component file.
        source: PathBuf,
        /// The sha256 its bytes must have.
        sha256: String,
    },
}

/// One `[[hooks]]` entry.
#[derive(Debug, Clone)]
pub struct HookEntry {
    /// When it runs.
    pub event: HookEvent,
    /// Which calls it sees.
    pub matcher: Rule,
    /// What runs.
    pub action: HookAction,
    /// How long it may take.
    pub timeout: Duration,
}

impl HookEntry {
    /// A short name for notes and logs: `pre-tool-use[terminal(command=git push*)]`.
    pub fn label(&self) -> String {
        format!("{}[{}]", self.event.as_str(), self.matcher)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawHook {
    event: HookEvent,
    matcher: Spanned<String>,
    command: Option<Spanned<Vec<String>>>,
    component: Option<Spanned<String>>,
    sha256: Option<Spanned<String>>,
    timeout_ms: Option<Spanned<u64>>,
}

impl RawHook {
    /// The entry, with relative paths taken from `base`; an error names its span.
    pub(super) fn parse(&self, base: &Path) -> Result<HookEntry, (Range<usize>, String)> {
        let matcher = Rule::parse(self.matcher.get_ref())
            .map_err(|e| (self.matcher.span(), format!("hooks.matcher: {e}")))?;
        let action = match (&self.command, &self.component, &self.sha256) {
            (Some(command), None, None) => {
                let argv = command.get_ref();
                match argv.first() {
                    None => {
                        return Err((command.span(), "hooks.command: empty (give the program first)".into()));
                    }
                    Some(p) if p.is_empty() || p.contains('\0') => {
                        return Err((command.span(), format!("hooks.command: bad program {p:?}")));
                    }
                    Some(p) if p.contains('/') && Path::new(p).is_relative() => {
                        let mut argv = argv.clone();
                        argv[0] = base.join(p).to_string_lossy().into_owned();
                        HookAction::Command(argv)
                    }
                    Some(_) => HookAction::Command(argv.clone()),
                }
            }
            (None, Some(source), Some(sha)) => {
                let hex = sha.get_ref();
                if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                    return Err((sha.span(), format!("hooks.sha256: `{hex}` is not 64 hex digits")));
                }
                HookAction::Component {
                    source: base.join(source.get_ref()),
                    sha256: hex.to_ascii_lowercase(),
                }
            }
            (None, Some(source), None) => {
                return Err((source.span(), "hooks.component: give its `sha256` too".into()));
            }
            (Some(command), Some(_), _) => {
                return Err((command.span(), "hooks: give either `command` or `component`, not both".into()));
            }
            (Some(command), None, Some(_)) => {
                return Err((command.span(), "hooks.sha256: only a `component` is pinned".into()));
            }
            (None, None, _) => {
                return Err((self.matcher.span(), "hooks: give `command = [...]` or `component`".into()));
            }
        };
        let timeout = match &self.timeout_ms {
            None => DEFAULT_HOOK_TIMEOUT,
            Some(ms) => {
                let timeout = Duration::from_millis(*ms.get_ref());
                if timeout.is_zero() || timeout > MAX_HOOK_TIMEOUT {
                    return Err((
                        ms.span(),
                        format!(
                            "hooks.timeout-ms: {} is not in 1..={}",
                            ms.get_ref(),
                            MAX_HOOK_TIMEOUT.as_millis()
                        ),
                    ));
                }
                timeout
            }
        };
        Ok(HookEntry { event: self.event, matcher, action, timeout })
    }
}

#[cfg(test)]
mod tests {
    use crate::policy::{HookAction, HookEvent, Policy};

    fn parse(text: &str) -> Result<Policy, String> {
        Policy::parse(text, std::path::Path::new("/p/toolhost.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn entries_parse_with_paths_from_the_policy_dir_and_a_default_timeout() {
        let sha = "AB".to_string() + &"0".repeat(62);
        let policy = parse(&format!(
            "[[hooks]]\nevent = \"pre-tool-use\"\nmatcher = \"terminal(command=git push*)\"\ncommand = [\"./check\", \"-q\"]\n\
             [[hooks]]\nevent = \"post-tool-use\"\nmatcher = \"*\"\ncommand = [\"jq\"]\ntimeout-ms = 250\n\
             [[hooks]]\nevent = \"post-tool-use\"\nmatcher = \"write_file\"\ncomponent = \"h.wasm\"\nsha256 = \"{sha}\"\n"
        ))
        .unwrap();
        let hooks = &policy.hooks;
        assert_eq!(hooks.len(), 3);
        assert_eq!(hooks[0].event, HookEvent::PreToolUse);
        assert_eq!(hooks[0].action, HookAction::Command(vec!["/p/./check".into(), "-q".into()]));
        assert_eq!(hooks[0].timeout, super::DEFAULT_HOOK_TIMEOUT);
        assert_eq!(hooks[1].action, HookAction::Command(vec!["jq".into()]));
        assert_eq!(hooks[1].timeout.as_millis(), 250);
        assert_eq!(
            hooks[2].action,
            HookAction::Component { source: "/p/h.wasm".into(), sha256: sha.to_ascii_lowercase() }
        );
        assert_eq!(hooks[0].label(), "pre-tool-use[terminal(command=git push*)]");
    }

    #[test]
    fn bad_entries_say_what_is_wrong_and_where() {
        let sha = "0".repeat(64);
        for (entry, needle) in [
            ("event = \"before\"\nmatcher = \"*\"\ncommand = [\"x\"]", "unknown variant `before`"),
            ("event = \"pre-tool-use\"\nmatcher = \"*(\"\ncommand = [\"x\"]", "hooks.matcher"),
            ("event = \"pre-tool-use\"\nmatcher = \"*\"\ncommand = []", "hooks.command: empty"),
            ("event = \"pre-tool-use\"\nmatcher = \"*\"", "give `command = [...]` or `component`"),
            ("event = \"pre-tool-use\"\nmatcher = \"*\"\ncomponent = \"h.wasm\"", "give its `sha256` too"),
            (
                "event = \"pre-tool-use\"\nmatcher = \"*\"\ncomponent = \"h.wasm\"\nsha256 = \"xyz\"",
                "not 64 hex digits",
            ),
            (
                &format!(
                    "event = \"pre-tool-use\"\nmatcher = \"*\"\ncommand = [\"x\"]\ncomponent = \"h.wasm\"\nsha256 = \"{sha}\""
                ),
                "not both",
            ),
            ("event = \"pre-tool-use\"\nmatcher = \"*\"\ncommand = [\"x\"]\ntimeout-ms = 0", "not in 1..="),
            (
                "event = \"pre-tool-use\"\nmatcher = \"*\"\ncommand = [\"x\"]\nwhen = 1",
                "unknown field `when`",
            ),
        ] {
            let err = parse(&format!("\n[[hooks]]\n{entry}\n")).unwrap_err();
            assert!(err.contains(needle), "{entry}: {err}");
            assert!(err.contains("/p/toolhost.toml"), "the error names the file: {err}");
        }
    }
}
