//! Generated hostile text for the properties of derived rules and shown questions
//! (test only; the CLI's tests include this file too, by path).
//!
//! Text is drawn from the metacharacters of every language a value passes through
//! — the rule syntax, globs, regexes, the shell, JSON and TOML — backslashes and
//! quotes, escapes written out, control characters (C0, DEL, C1, ESC sequences),
//! bidi and invisible formatting characters, non-ASCII, and any character at all;
//! some values are very long.

use proptest::prelude::*;

/// Pieces of hostile text.
const PIECES: &[&str] = &[
    // The rule syntax.
    "(",
    ")",
    "=",
    ",",
    " ",
    "  ",
    "\\",
    "\\\\",
    // Globs.
    "*",
    "**",
    "?",
    "[",
    "]",
    "[!a]",
    "{",
    "}",
    "{a,b}",
    "!",
    "^",
    "-",
    // Regexes.
    ".",
    "+",
    "|",
    "$",
    "\\d",
    ".*",
    "(?i)",
    // The shell.
    ";",
    "&",
    "&&",
    "<",
    ">",
    "`",
    "$(",
    "${X}",
    "'",
    "\"",
    "#",
    "~",
    "\n",
    "\t",
    "\r",
    // Escapes written out, and what TOML and JSON read as syntax.
    "\\n",
    "\\u001b",
    "\\x1b",
    "'''",
    "\"\"\"",
    "%20",
    "%0a",
    // Control characters and terminal sequences.
    "\u{0}",
    "\u{7}",
    "\u{8}",
    "\u{1b}",
    "\u{1b}[2J",
    "\u{1b}]0;title\u{7}",
    "\u{1b}[31m",
    "\u{7f}",
    "\u{85}",
    "\u{9b}",
    "\u{9d}",
    // Bidi, invisible and separator characters.
    "\u{202e}",
    "\u{2066}",
    "\u{2069}",
    "\u{200e}",
    "\u{200b}",
    "\u{feff}",
    "\u{2028}",
    "\u{2029}",
    "\u{a0}",
    "\u{3000}",
    "\u{e0041}",
    // Non-ASCII.
    "é",
    "e\u{301}",
    "日本",
    "😀",
    "ß",
    // Words the host itself says.
    "Asked because: ",
    "toolhost: ",
    "Always allow: ",
    "[y] allow once",
    // Plain.
    "a",
    "b",
    "x",
    "0",
    "/",
    "_",
    ":",
    "@",
];

/// One piece: mostly from [`PIECES`], sometimes any character.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(PIECES).prop_map(String::from),
        2 => "[a-z0-9]{1,4}",
        1 => any::<char>().prop_map(String::from),
    ]
}

/// Hostile text of up to `max` pieces; one in 32 is also made very long (past
/// every bound a question or a parser has).
pub(crate) fn text(max: usize) -> impl Strategy<Value = String> {
    (prop::collection::vec(piece(), 0..max), 0..32u32).prop_map(|(pieces, long)| {
        let text = pieces.concat();
        if long == 0 && !text.is_empty() { text.repeat(20_000 / text.len() + 1) } else { text }
    })
}

/// Hostile JSON arguments: an object of hostile keys and values, some nested.
pub(crate) fn arguments() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        4 => text(12).prop_map(serde_json::Value::String),
        1 => any::<i64>().prop_map(serde_json::Value::from),
        1 => any::<bool>().prop_map(serde_json::Value::from),
        1 => Just(serde_json::Value::Null),
    ];
    let value = leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
            prop::collection::vec((text(4), inner), 0..4)
                .prop_map(|pairs| serde_json::Value::Object(pairs.into_iter().collect())),
        ]
    });
    prop::collection::vec((text(6), value), 0..5)
        .prop_map(|pairs| serde_json::Value::Object(pairs.into_iter().collect()))
}

/// Why `text` could not be shown as it is: a character below 0x20 (other than
/// `allowed_newlines` line breaks), DEL, a C1 control, a bidi control, a line or
/// paragraph separator, or more line breaks than allowed.
pub(crate) fn unsafe_for_display(text: &str, allowed_newlines: usize) -> Option<String> {
    let newlines = text.matches('\n').count();
    if newlines != allowed_newlines {
        return Some(format!("{newlines} line breaks, not {allowed_newlines}"));
    }
    let bad = |c: char| {
        (c < ' ' && c != '\n')
            || ('\u{7f}'..='\u{9f}').contains(&c)
            || matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}')
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c)
    };
    text.chars().find(|&c| bad(c)).map(|c| format!("{c:?} reaches the text"))
}
