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
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest time a hook may be given.
pub const MAX_HOOK_TIMEOUT: Duration = Duration::from_secs(600);

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
