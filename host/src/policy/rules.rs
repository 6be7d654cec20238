//! Allow and deny rules: `TOOL` or `TOOL(KEY=GLOB, KEY=GLOB)`.
//!
//! `TOOL` is a glob over tool names (`write_file`, `*`). Each `KEY=GLOB` must match
//! the argument `KEY` (a string, number or boolean, as text); a missing argument does
//! not match. Path-like arguments ([`is_path_key`]) are matched after lexical
//! normalization against the work dir (`./a/../.env` and `/work/.env` are both
//! `.env`), with `*` stopping at `/` and `**` crossing it, as in `.gitignore`. Other
//! arguments (URLs, queries) match as plain text, `*` matching anything.
//!
//! **Escapes.** `\` before any character makes it that character, in the tool, a
//! KEY or a pattern: it then separates nothing (`,`, `=`, `(`, `)`), is not trimmed
//! (a space), and the glob or shell word reads it as itself (`\*` is a star, `\\`
//! a backslash). So `write_file(path=a\ b\,c\*)` allows exactly the file `a b,c*`.
//! The rule an "always" answer saves is written this way (`derive`).
//!
//! **Command lines.** A string argument named `command` (the builtin `terminal`'s,
//! or any tool's) is a shell command line, parsed into simple commands
//! ([`super::shell`]), and its pattern is a [`CommandPattern`]: shell words, matched
//! word by word against one simple command.
//! 1. The pattern is split into words as the shell would (quotes group, `#` starts
//!    a comment); it must be one simple command without operators or redirections.
//!    Each word is a glob over one word of the command (`*` matching anything, `/`
//!    too); quoted or escaped characters are literal (`'*'` is a star).
//! 2. A last word ending in an unquoted `*` means: that word without the `*`, then
//!    any further words. So `git status*` (like `git status *`) matches `git status`
//!    and `git status --short`, never `git statusx`; `*` alone matches any command.
//!    To glob the last word, follow it with ` *`: `cargo test-* *`.
//! 3. A command matches when its words, quoting removed (`g"it" 'status'` is
//!    `git status`), match the pattern words in order, and nothing is left unless
//!    the pattern ends in `*`. A word the shell would still change (`$X`, `${X}`,
//!    `~`, a glob, `$'…'`) matches no pattern word: only a trailing `*` takes it.
//! 4. **Allow**: a line is allowed when every simple command in it — across `;`,
//!    `&&`, `||`, `|`, `&`, newlines, subshells, `{ }`, `if`/`for`/`while`/`case`
//!    conditions and bodies — is matched by some allow rule (one rule each, not
//!    necessarily the same), and the line has no [`super::shell::Hazard`]: no
//!    substitution (`$(…)`, backticks, also in double quotes, assignments,
//!    redirection targets and expanding here-documents), no process substitution,
//!    no alias or function definition, no `eval`/`source`/`.`/`exec`, no
//!    redirection of output to a file (`2>&1`, `>&2` and `/dev/null` are fine;
//!    reading a literal file with `<` is fine too), and it parses. Otherwise such
//!    rules don't apply and the call asks. The program is matched as written:
//!    `/tmp/x/git status` is not `git status*`, nor is `X=1 git status` (leading
//!    assignments are words of the command: write `X=1 git status*` to allow it)
//!    or `env X=1 git status` (its program is `env`).
//! 5. **Deny**: a line is denied when any simple command in it matches — also the
//!    commands inside substitutions, `eval` strings and `sh -c` scripts, also after
//!    taking off `env [OPTIONS] [X=1…]`, `command`, `builtin`, `nohup`, `time`,
//!    `exec`, `nice`, `timeout DURATION` and leading assignments, and with the
//!    program reduced to its file name (`/bin/rm` is `rm`), whether or not the words
//!    are literal. A line that doesn't parse is matched as text against the pattern
//!    as a plain glob, as before. Deny rules are a guard, not a boundary: a program
//!    named by a variable (`$X -rf /`) can't be seen; the sandbox contains commands.
//! 6. A rule without a `command=` condition (`terminal`, `terminal(cwd=sub)`) judges
//!    the call as a whole, as for any tool: the bare `terminal` allows every line.

use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use serde_json::Value;

use super::shell::{self, COMMAND_KEY, Command, CommandPattern, Line};

/// One parsed rule.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    tool: GlobMatcher,
    /// The conditions on arguments other than `command`.
    conditions: Vec<(String, GlobMatcher)>,
    /// The `command=` condition: its pattern as a plain glob (for a line that doesn't
    /// parse) and as shell words.
    command: Option<(GlobMatcher, CommandPattern)>,
}

impl PartialEq for Rule {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl Rule {
    /// Parse `TOOL` or `TOOL(KEY=GLOB, …)`, saying what is wrong when it can't.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (tool, conditions) = match find_unescaped(text, '(') {
            None => (text, None),
            Some(open) => {
                let inner = text[open + 1..]
                    .strip_suffix(')')
                    .ok_or_else(|| format!("rule `{text}`: the argument list must end with `)`"))?;
                (text[..open].trim(), Some(inner))
            }
        };
        if tool.is_empty() || tool.contains(|c: char| c.is_whitespace() || c == ')') {
            return Err(format!("rule `{text}`: expected a tool name (or glob) before `(`"));
        }
        let tool_glob = glob(tool, false).map_err(|e| format!("rule `{text}`: tool pattern: {e}"))?;
        let (mut parsed, mut command) = (Vec::new(), None);
        for condition in conditions.map(split_top_level).unwrap_or_default() {
            let (key, pattern) = find_unescaped(condition, '=')
                .map(|eq| (&condition[..eq], &condition[eq + 1..]))
                .ok_or_else(|| format!("rule `{text}`: `{condition}` is not KEY=PATTERN"))?;
            let (key, pattern) = (key.trim(), trim_unescaped(pattern));
            let key = argument_name(key)
                .ok_or_else(|| format!("rule `{text}`: `{key}` is not an argument name"))?;
            if pattern.is_empty() {
                return Err(format!("rule `{text}`: the pattern for `{key}` is empty"));
            }
            let matcher = glob(pattern, is_path_key(&key))
                .map_err(|e| format!("rule `{text}`: pattern for `{key}`: {e}"))?;
            if key == COMMAND_KEY {
                let words = CommandPattern::parse(pattern)
                    .map_err(|e| format!("rule `{text}`: command pattern `{pattern}`: {e}"))?;
                command = Some((matcher, words));
            } else {
                parsed.push((key, matcher));
            }
        }
        if conditions.is_some() && parsed.is_empty() && command.is_none() {
            return Err(format!("rule `{text}`: empty argument list (write `{tool}` for the whole tool)"));
        }
        Ok(Self { text: text.to_string(), tool: tool_glob, conditions: parsed, command })
    }

    /// The rule as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the rule has a `command=` condition (then it judges a command line
    /// command by command).
    pub fn has_command(&self) -> bool {
        self.command.is_some()
    }

    /// Whether the tool and every condition but `command=` fit the call.
    pub fn fits(&self, tool: &str, subject: &Subject) -> bool {
        self.tool.is_match(tool)
            && self
                .conditions
                .iter()
                .all(|(key, pattern)| subject.get(key).is_some_and(|v| pattern.is_match(v)))
    }

    /// Whether this rule, as a deny rule, refuses the call (step 5 of the module docs
    /// for a `command=` condition).
    pub fn denies(&self, tool: &str, subject: &Subject) -> bool {
        if !self.fits(tool, subject) {
            return false;
        }
        let Some((text_glob, pattern)) = &self.command else { return true };
        let Some(text) = subject.get(COMMAND_KEY) else { return false };
        let Some(line) = subject.command_line() else { return text_glob.is_match(text) };
        (!line.parsed() && text_glob.is_match(text))
            || line
                .commands
                .iter()
                .any(|c| c.deny_forms().into_iter().any(|form| pattern.matches_text(form.texts())))
    }

    /// Whether this rule, as an allow rule, covers the whole call by itself: a rule
    /// without `command=` when it fits; one with it when it covers every command of
    /// the line (step 4 of the module docs).
    pub fn allows(&self, tool: &str, subject: &Subject) -> bool {
        if self.command.is_none() {
            return self.fits(tool, subject);
        }
        self.fits(tool, subject)
            && subject
                .command_line()
                .is_some_and(|line| allowable(line) && line.commands.iter().all(|c| self.covers(c)))
    }

    /// Whether this rule's `command=` pattern covers `command`, one simple command
    /// of a call's line, as an allow rule (false for a rule without one). The rest
    /// of the rule is [`Rule::fits`]; whether the line as a whole may be allowed,
    /// `allowable`.
    pub fn covers(&self, command: &Command) -> bool {
        let Some((_, pattern)) = &self.command else { return false };
        command.program().is_none_or(|w| w.is_literal()) && pattern.matches_literally(command.written())
    }
}

/// Whether allow rules may judge `line` command by command: it parsed, has
/// commands, and no hazard.
pub(crate) fn allowable(line: &Line) -> bool {
    line.hazards().is_empty() && !line.commands.is_empty()
}

/// Split `a=1, b={x,y}` at the commas outside braces and brackets.
fn split_top_level(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in syntax_chars(text) {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(trim_unescaped(&text[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(trim_unescaped(&text[start..]));
    parts.retain(|p| !p.is_empty());
    parts
}

/// The characters of `text` the rule syntax reads, with their positions: all but
/// a `\` and the character after it, which is never a separator, nor opens or
/// closes anything.
fn syntax_chars(text: &str) -> impl Iterator<Item = (usize, char)> + '_ {
    let mut chars = text.char_indices();
    std::iter::from_fn(move || {
        loop {
            match chars.next()? {
                (_, '\\') => {
                    chars.next();
                }
                other => return Some(other),
            }
        }
    })
}

/// Where the first `wanted` not escaped by `\` is.
fn find_unescaped(text: &str, wanted: char) -> Option<usize> {
    syntax_chars(text).find(|&(_, c)| c == wanted).map(|(i, _)| i)
}

/// `text` without leading and trailing whitespace, keeping whitespace escaped by
/// `\` (`a\ ` ends in a space).
fn trim_unescaped(text: &str) -> &str {
    let mut text = text.trim_start();
    while let Some(last) = text.chars().next_back().filter(|c| c.is_whitespace()) {
        let body = &text[..text.len() - last.len_utf8()];
        let backslashes = body.len() - body.trim_end_matches('\\').len();
        if backslashes % 2 == 1 {
            break;
        }
        text = body;
    }
    text
}

/// The argument a rule's KEY names: letters, digits, `_`, `-` and the other
/// characters `derive::literal` leaves as they are, and any character
/// escaped by `\` (as it writes a name from a call); `None` when it is none.
fn argument_name(key: &str) -> Option<String> {
    let mut name = String::with_capacity(key.len());
    let mut chars = key.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => name.push(chars.next()?),
            c if is_plain(c) => name.push(c),
            _ => return None,
        }
    }
    (!name.is_empty()).then_some(name)
}

fn glob(pattern: &str, path: bool) -> Result<GlobMatcher, globset::Error> {
    Ok(GlobBuilder::new(pattern).literal_separator(path).backslash_escape(true).build()?.compile_matcher())
}

/// Whether an argument named `key` holds a path: `path`, `file`, `dir`, `directory`,
/// `cwd`, `target`, `source`, `destination` and names ending in `_path`, `_file`,
/// `_dir`. Rules, protected paths and accept-edits judge these arguments as paths.
pub(crate) fn is_path_key(key: &str) -> bool {
    const EXACT: &[&str] = &[
        "path",
        "file",
        "filename",
        "dir",
        "directory",
        "cwd",
        "target",
        "source",
        "src",
        "dest",
        "destination",
    ];
    let key = key.to_ascii_lowercase();
    EXACT.contains(&key.as_str()) || ["_path", "_file", "_dir", "path"].iter().any(|s| key.ends_with(s))
}

/// A call's arguments as rules see them: top-level scalars as text, path-like ones
/// normalized against the work dir.
#[derive(Debug, Default)]
pub struct Subject {
    values: Vec<(String, String)>,
    paths: Vec<(String, PathBuf)>,
    /// The `command` argument when it is a string: parsed on first use.
    command: Option<String>,
    line: std::cell::OnceCell<Line>,
}

impl Subject {
    /// The subject of `args` for a call in `work_dir`.
    pub fn new(args: &Value, work_dir: Option<&Path>) -> Self {
        let mut subject = Subject::default();
        let Some(map) = args.as_object() else { return subject };
        for (key, value) in map {
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => continue,
            };
            if key == COMMAND_KEY && value.is_string() {
                subject.command = Some(text.clone());
            }
            if is_path_key(key) && value.is_string() {
                let normalized = normalize(&text, work_dir);
                subject.paths.push((key.clone(), normalized.clone()));
                subject.values.push((key.clone(), normalized.to_string_lossy().into_owned()));
            } else {
                subject.values.push((key.clone(), text));
            }
        }
        subject
    }

    /// The text of argument `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The `command` argument parsed as a shell line (`None` when there is none, or
    /// it is not a string). Parsed once, when first asked for.
    pub fn command_line(&self) -> Option<&Line> {
        let text = self.command.as_deref()?;
        Some(self.line.get_or_init(|| shell::parse(text)))
    }

    /// The path-like arguments, normalized: relative to the work dir when inside it,
    /// absolute (or starting with `..`) when not.
    pub fn paths(&self) -> impl Iterator<Item = (&str, &Path)> {
        self.paths.iter().map(|(k, p)| (k.as_str(), p.as_path()))
    }
}

/// Resolve `.` and `..` without touching the disk, and make a path inside `work_dir`
/// relative to it. A relative path is taken relative to the work dir.
pub(crate) fn normalize(path: &str, work_dir: Option<&Path>) -> PathBuf {
    let path = Path::new(path);
    let joined = match work_dir {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path.to_path_buf(),
    };
    let mut out = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                if !out.pop() || out.as_os_str().is_empty() {
                    out.push("..");
                }
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    match work_dir.and_then(|dir| out.strip_prefix(dir).ok()) {
        Some(rel) if rel.as_os_str().is_empty() => PathBuf::from("."),
        Some(rel) => rel.to_path_buf(),
        None => out,
    }
}

/// Characters that mean themselves in rule text, globs and shell words alike:
/// `derive::literal` writes them as they are.
pub(crate) fn is_plain(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(c, '_' | '-' | '.' | '/' | '+' | ':' | '@' | '%' | '^')
        || (!c.is_ascii() && !c.is_whitespace() && !c.is_control())
}

#[cfg(test)]
#[path = "rules_props.rs"]
pub(super) mod props;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn subject(args: Value) -> Subject {
        Subject::new(&args, Some(Path::new("/w")))
    }

    #[test]
    fn bare_tool_and_globs() {
        let rule = Rule::parse("write_file").unwrap();
        assert!(rule.allows("write_file", &subject(json!({}))));
        assert!(!rule.allows("read_file", &subject(json!({}))));
        assert!(Rule::parse("*").unwrap().allows("anything", &subject(json!({}))));
    }

    #[test]
    fn path_arguments_are_normalized() {
        let rule = Rule::parse("write_file(path=.env)").unwrap();
        for path in [".env", "./.env", "docs/../.env", "/w/.env", "/w/./x/../.env"] {
            assert!(rule.allows("write_file", &subject(json!({ "path": path }))), "{path}");
        }
        assert!(!rule.allows("write_file", &subject(json!({ "path": "a/.env" }))));
        assert!(!rule.allows("write_file", &subject(json!({}))), "a missing argument does not match");
    }

    #[test]
    fn path_globs_stop_at_slashes() {
        let rule = Rule::parse("write_file(path=docs/*)").unwrap();
        assert!(rule.allows("write_file", &subject(json!({ "path": "docs/a.md" }))));
        assert!(!rule.allows("write_file", &subject(json!({ "path": "docs/x/a.md" }))));
        let deep = Rule::parse("write_file(path=docs/**)").unwrap();
        assert!(deep.allows("write_file", &subject(json!({ "path": "docs/x/a.md" }))));
        assert!(!deep.allows("write_file", &subject(json!({ "path": "docs/../src/a.rs" }))));
    }

    #[test]
    fn text_arguments_match_anything_under_star() {
        let rule = Rule::parse("fetch_url(url=https://docs.rs/*)").unwrap();
        assert!(rule.allows("fetch_url", &subject(json!({ "url": "https://docs.rs/serde/latest" }))));
        assert!(!rule.allows("fetch_url", &subject(json!({ "url": "https://evil.example/docs.rs/" }))));
        let two = Rule::parse("http_request(method={GET,HEAD}, url=https://*)").unwrap();
        assert!(two.allows("http_request", &subject(json!({ "method": "HEAD", "url": "https://a" }))));
        assert!(!two.allows("http_request", &subject(json!({ "method": "POST", "url": "https://a" }))));
    }

    #[test]
    fn bad_rules_say_what_is_wrong() {
        for (text, needle) in [
            ("write_file(path=docs/**", "must end with `)`"),
            ("write_file(path)", "is not KEY=PATTERN"),
            ("write_file()", "empty argument list"),
            ("write_file(path=[a)", "pattern for `path`"),
            ("(path=x)", "expected a tool name"),
            ("write_file(pa th=x)", "not an argument name"),
        ] {
            let err = Rule::parse(text).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn normalize_keeps_escapes_visible() {
        let w = Some(Path::new("/w"));
        assert_eq!(normalize("../etc/passwd", w), PathBuf::from("/etc/passwd"));
        assert_eq!(normalize("/etc/passwd", w), PathBuf::from("/etc/passwd"));
        assert_eq!(normalize(".", w), PathBuf::from("."));
        assert_eq!(normalize("a/./b/", w), PathBuf::from("a/b"));
    }
}
