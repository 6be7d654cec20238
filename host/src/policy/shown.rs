//! Text from a call as a person is shown it: in the approval question (the
//! terminal's prompt, an MCP client's form and its option titles), in the reasons
//! the permissions give, in what hooks are told.
//!
//! [`quote`] writes a value the call chose — an argument, a path, a rule made from
//! one — as a JSON string in which every character is printable: `"` and `\` are
//! escaped, and so is every character a terminal or a client could act on or hide
//! (`\n`, `\t`, `\r`; other C0 and C1 controls, DEL, ESC, bidi overrides and
//! isolates, line and paragraph separators, zero-width and other invisible
//! formatting characters, and whitespace other than the space, as `\uXXXX`). It
//! is cut to a bound, and the cut is said after the closing quote:
//! `"aaaa"… (1234 more bytes)`. So a value cannot end its quotes, start a line, or
//! write anything outside them: the host's own words stand on lines the host
//! starts, arguments only ever inside quotes.
//!
//! [`plain`] is the same escaping without the quotes, for the host's own text that
//! carries others' words (a hook's reason, a rule from the policy file), and
//! [`args`] writes a call's arguments as compact JSON with every string, key or
//! value, written by [`quote`]. [`ShownRequest`] is an approval request made of
//! these, as both the terminal and an MCP client show it.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::Value;

use super::ApprovalRequest;

/// The most bytes of one value (escaped) a reason or question shows.
pub(crate) const MAX_SHOWN: usize = 1024;
/// The most bytes of a call's arguments a question shows.
pub(crate) const MAX_ARGS_SHOWN: usize = 1024;
/// The most bytes of one string inside the arguments a question shows.
pub(crate) const MAX_ARG_STRING_SHOWN: usize = 256;

/// `text` as a JSON string of printable characters (see the module docs), its
/// escaped content cut at `max` bytes with the cut said: `"abc"… (95 more bytes)`.
pub(crate) fn quote(text: &str, max: usize) -> String {
    escape(text, max, true)
}

/// `text` with the characters [`quote`] escapes escaped the same way, but `"` and
/// `\` kept and no quotes around it, cut the same way: for the host's own text that
/// may carry others' words.
pub(crate) fn plain(text: &str, max: usize) -> String {
    escape(text, max, false)
}

/// The one escaping function behind [`quote`] and [`plain`].
fn escape(text: &str, max: usize, quoted: bool) -> String {
    let mut out = String::with_capacity(text.len().min(max) + 2);
    if quoted {
        out.push('"');
    }
    let start = out.len();
    let mut cut = None;
    for (at, c) in text.char_indices() {
        let before = out.len();
        push_char(&mut out, c, quoted);
        if out.len() - start > max {
            out.truncate(before);
            cut = Some(at);
            break;
        }
    }
    if quoted {
        out.push('"');
    }
    if let Some(at) = cut {
        let _ = write!(out, "… ({} more bytes)", text.len() - at);
    }
    out
}

fn push_char(out: &mut String, c: char, quoted: bool) {
    match c {
        '"' | '\\' if quoted => {
            out.push('\\');
            out.push(c);
        }
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        c if hidden(c) => {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        }
        c => out.push(c),
    }
}

/// Whether `c` is a character a person may not see as itself: a control character
/// (C0, DEL, C1), whitespace other than the space, or one the standard library's
/// `Debug` escapes as not printable (format characters such as bidi overrides and
/// zero-width joiners, separators, private-use and unassigned characters).
pub(crate) fn hidden(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_control();
    }
    if c.is_control() || c.is_whitespace() {
        return true;
    }
    // `str::escape_debug` escapes a combining mark only at the start of a string:
    // after a letter, what it escapes is what is not printable.
    let mut buf = [0u8; 5];
    buf[0] = b'a';
    let len = 1 + c.encode_utf8(&mut buf[1..]).len();
    std::str::from_utf8(&buf[..len]).is_ok_and(|s| s.escape_debug().nth(1) == Some('\\'))
}

/// A call's `args` as compact JSON with every string written by [`quote`] (cut at
/// [`MAX_ARG_STRING_SHOWN`] bytes) after `redact`, the whole cut at `max` bytes
/// between two tokens (never inside a string), with the cut said:
/// `{"path":"a.txt","content":"…"… (4000 more bytes)`.
pub(crate) fn args(args: &Value, max: usize, redact: &dyn Fn(&str) -> Cow<'_, str>) -> String {
    let mut sink = Sink { out: String::new(), max, more: 0 };
    tokens(args, redact, &mut sink);
    if sink.more > 0 {
        let _ = write!(sink.out, "… ({} more bytes)", sink.more);
    }
    sink.out
}

/// Where [`args`] writes its tokens: kept while they fit, counted after.
struct Sink {
    out: String,
    max: usize,
    more: usize,
}

impl Sink {
    fn push(&mut self, token: &str) {
        if self.more == 0 && self.out.len() + token.len() <= self.max {
            self.out.push_str(token);
        } else {
            self.more += token.len();
        }
    }
}

fn tokens(value: &Value, redact: &dyn Fn(&str) -> Cow<'_, str>, sink: &mut Sink) {
    let string = |text: &str| quote(&redact(text), MAX_ARG_STRING_SHOWN);
    match value {
        Value::String(text) => sink.push(&string(text)),
        Value::Array(items) => {
            sink.push("[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    sink.push(",");
                }
                tokens(item, redact, sink);
            }
            sink.push("]");
        }
        Value::Object(map) => {
            sink.push("{");
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    sink.push(",");
                }
                sink.push(&string(key));
                sink.push(":");
                tokens(item, redact, sink);
            }
            sink.push("}");
        }
        // Numbers, booleans and null: ASCII digits, letters, `.`, `-`, `+`.
        other => sink.push(&other.to_string()),
    }
}

/// An approval request as it is shown: every part that a call or a hook chose
/// escaped and bounded. The words around them are each approver's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShownRequest {
    /// The tool's name (`plain`).
    pub tool: String,
    /// The plugin that provides it (`plain`).
    pub plugin: String,
    /// The arguments (`args`).
    pub args: String,
    /// Why it asks (`plain`: the host's words, with any argument in it quoted).
    pub reason: String,
    /// The rule "always" saves (`quote`: exactly the text saved, escaped).
    pub rule: String,
}

impl ShownRequest {
    /// `request` as shown, every string passed through `redact` first (the
    /// identity where whoever is asked may see the call's secrets).
    pub fn new(request: &ApprovalRequest, redact: &dyn Fn(&str) -> Cow<'_, str>) -> Self {
        Self {
            tool: plain(&redact(&request.tool), MAX_SHOWN),
            plugin: plain(&redact(&request.plugin), MAX_SHOWN),
            args: args(&request.args, MAX_ARGS_SHOWN, redact),
            reason: plain(&redact(&request.reason), MAX_SHOWN),
            rule: quote(&redact(&request.suggested_rule), MAX_SHOWN),
        }
    }
}

/// No redaction: for an approver whose user may see everything the call holds.
pub fn unredacted(text: &str) -> Cow<'_, str> {
    Cow::Borrowed(text)
}

#[cfg(test)]
#[path = "shown_props.rs"]
mod props;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_quoted_escaped_and_cut() {
        assert_eq!(quote("a.txt", 10), r#""a.txt""#);
        assert_eq!(quote("a\"b\\c\nd\te\u{1b}[31m", 100), r#""a\"b\\c\nd\te\u001b[31m""#);
        assert_eq!(
            quote("x\u{202e}y\u{2028}z\u{85}\u{7f}\u{a0}", 100),
            r#""x\u202ey\u2028z\u0085\u007f\u00a0""#
        );
        assert_eq!(quote("\u{e0041}", 100), r#""\udb40\udc41""#, "a tag character, as a surrogate pair");
        assert_eq!(quote("résumé ✓ 日本 e\u{301}", 100), "\"résumé ✓ 日本 e\u{301}\"");
        assert_eq!(quote("abcdef", 3), r#""abc"… (3 more bytes)"#);
        assert_eq!(quote("\n\n\n", 5), r#""\n\n"… (1 more bytes)"#);
        assert_eq!(plain("a \"b\" \\ c\nd", 100), "a \"b\" \\ c\\nd");
        for text in ["a\"b\\c\n\u{1b}\u{202e}\u{e0041}é", "", "'"] {
            let back: String = serde_json::from_str(&quote(text, 100)).unwrap();
            assert_eq!(back, text, "a quoted value is the JSON string of the value");
        }
    }

    #[test]
    fn arguments_are_json_with_quoted_strings_cut_between_tokens() {
        let none = unredacted;
        assert_eq!(args(&json!({"path": "a.txt", "n": 1}), 100, &none), r#"{"n":1,"path":"a.txt"}"#);
        let long = json!({"a": "x".repeat(300), "b": ["\n", null]});
        let shown = args(&long, 1000, &none);
        assert!(shown.starts_with(&format!(
            "{{\"a\":\"{}\"… (44 more bytes),\"b\":[\"\\n\",null]}}",
            "x".repeat(256)
        )));
        let cut = args(&json!({"a": "y".repeat(100), "b": "z"}), 50, &none);
        assert_eq!(cut, format!("{{\"a\":… ({} more bytes)", 102 + 1 + 3 + 1 + 3 + 1));
        fn secret(text: &str) -> Cow<'_, str> {
            Cow::Owned(text.replace("hunter2", "[REDACTED]"))
        }
        assert_eq!(
            args(&json!({"hunter2": "pw hunter2"}), 100, &secret),
            r#"{"[REDACTED]":"pw [REDACTED]"}"#
        );
    }
}
