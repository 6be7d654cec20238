//! Rules derived from a call's arguments: the allow rule an "always" answer saves.
//!
//! Every part of such a rule that comes from the call — the tool, an argument's
//! name, a path, a URL's origin, a command's words — is written by [`literal`],
//! so that it matches exactly that text and nothing else, whatever characters it
//! holds: glob and rule syntax (`*`, `?`, `[`, `{`, `,`, `)`, `=`, `\`), spaces,
//! quotes, newlines, control characters. The only wildcards in a derived rule are
//! the ones the host puts there on purpose: the `*` after a command's program (and
//! subcommand), the `**` after a URL's origin.

use super::rules::{Subject, is_plain};
use super::shell::{self, COMMAND_KEY};

/// The pattern language a rule reads a value in: shell words for `command`,
/// globs for everything else (tools, argument names, paths, URLs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    /// A glob (`*`, `?`, `[…]`, `{…}`, `\` escaping the next character).
    Glob,
    /// One shell word of a `command=` pattern.
    Shell,
}

/// `text` as rule text that matches exactly `text`, read in `lang`: every character
/// other than ASCII letters, digits, `_-./+:@%^` and non-ASCII characters that are
/// neither whitespace nor control characters is preceded by `\` (which the rule
/// syntax, globs and the shell all read as "the next character, as itself"). A
/// newline in a shell word is written quoted (`'⏎'`: the shell reads a backslash
/// before a newline as a line continuation), and an empty shell word as `''`.
///
/// This is the one function that writes argument text into a rule.
pub(crate) fn literal(text: &str, lang: Lang) -> String {
    if text.is_empty() && lang == Lang::Shell {
        return "''".to_string();
    }
    let mut out = String::with_capacity(text.len() + text.len() / 4 + 2);
    for c in text.chars() {
        if c == '\n' && lang == Lang::Shell {
            out.push_str("'\n'");
        } else if is_plain(c) {
            out.push(c);
        } else {
            out.push('\\');
            out.push(c);
        }
    }
    out
}

/// The narrowest useful allow rule for a call to `tool`, for an "always" answer:
/// - a `command` line: its first simple command's assignments and program, with the
///   subcommand of `git`, `cargo`, …, then `*` ([`shell::suggest`]):
///   `terminal(command=git commit*)`;
/// - else every path argument, each exactly (normalized as rules see it):
///   `write_file(path=docs/a.md)`;
/// - else a `url` argument: its origin, then `**`, when the URL is written starting
///   with its origin as the URL parser gives it (`https://docs.rs/**`); the exact
///   URL otherwise;
/// - else the bare tool.
///
/// A line with more than one command, or one no rule can allow (a substitution, a
/// redirection to a file), gets the rule for its first command all the same:
/// "always" then saves a rule that will not cover this line again, never a wider
/// one. A value no rule can hold (an empty URL or command line, a command word
/// past the shell parser's bounds) gives a suggestion that does not parse:
/// "always" then runs the call once and saves nothing.
pub(crate) fn suggest_rule(tool: &str, subject: &Subject) -> String {
    let tool_text = literal(tool, Lang::Glob);
    if let Some(line) = subject.command_line() {
        return format!("{tool_text}({COMMAND_KEY}={})", shell::suggest(line, subject.get(COMMAND_KEY)));
    }
    let paths: Vec<String> = subject
        .paths()
        .map(|(key, path)| {
            format!("{}={}", literal(key, Lang::Glob), literal(&path.to_string_lossy(), Lang::Glob))
        })
        .collect();
    if !paths.is_empty() {
        return format!("{tool_text}({})", paths.join(", "));
    }
    if let Some(url) = subject.get("url") {
        return format!("{tool_text}(url={})", url_pattern(url));
    }
    tool_text
}

/// The `url=` pattern for `raw`: its origin and `**` when `raw` starts with the
/// origin as parsed (`scheme://host[:port]/`), else `raw` exactly.
fn url_pattern(raw: &str) -> String {
    if let Ok(url) = url::Url::parse(raw)
        && let Some(host) = url.host_str()
    {
        let origin = match url.port() {
            Some(port) => format!("{}://{host}:{port}/", url.scheme()),
            None => format!("{}://{host}/", url.scheme()),
        };
        if raw.starts_with(&origin) {
            return format!("{}**", literal(&origin, Lang::Glob));
        }
    }
    literal(raw, Lang::Glob)
}

#[cfg(test)]
#[path = "derive_props.rs"]
mod props;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn literals_escape_what_any_layer_reads_as_syntax() {
        assert_eq!(literal("docs/a-b_c.md", Lang::Glob), "docs/a-b_c.md");
        assert_eq!(literal("a*b?[c]{d,e}", Lang::Glob), r"a\*b\?\[c\]\{d\,e\}");
        assert_eq!(literal(r"a\b c", Lang::Glob), r"a\\b\ c");
        assert_eq!(literal("a)=,(", Lang::Glob), r"a\)\=\,\(");
        assert_eq!(literal("résumé", Lang::Glob), "résumé");
        assert_eq!(literal("a\u{a0}b\u{1b}", Lang::Glob), "a\\\u{a0}b\\\u{1b}");
        assert_eq!(literal("a\nb", Lang::Glob), "a\\\nb");
        assert_eq!(literal("a\nb", Lang::Shell), "a'\n'b");
        assert_eq!(literal("", Lang::Shell), "''");
        assert_eq!(literal("it's", Lang::Shell), r"it\'s");
    }

    #[test]
    fn suggestions() {
        let s = |tool: &str, args: Value| {
            suggest_rule(tool, &Subject::new(&args, Some(std::path::Path::new("/w"))))
        };
        assert_eq!(s("write_file", json!({"path": "docs/a.md"})), "write_file(path=docs/a.md)");
        assert_eq!(s("write_file", json!({"path": "./docs/*.md"})), r"write_file(path=docs/\*.md)");
        assert_eq!(s("copy", json!({"source": "a", "dest": "b b"})), r"copy(dest=b\ b, source=a)");
        assert_eq!(
            s("fetch_url", json!({"url": "https://docs.rs/x?y"})),
            "fetch_url(url=https://docs.rs/**)"
        );
        assert_eq!(
            s("fetch_url", json!({"url": "https://docs.rs:8443/x"})),
            "fetch_url(url=https://docs.rs:8443/**)"
        );
        // Not written as the parser gives it: exactly this URL.
        assert_eq!(s("fetch_url", json!({"url": "HTTPS://Docs.rs"})), r"fetch_url(url=HTTPS://Docs.rs)");
        assert_eq!(s("terminal", json!({"command": "git commit -m x"})), "terminal(command=git commit*)");
        assert_eq!(s("terminal", json!({"command": "'a b' c"})), r"terminal(command=a\ b*)");
        assert_eq!(s("search", json!({"query": "x"})), "search");
    }
}
