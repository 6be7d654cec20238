//! How a tool shows a file name or path: one unambiguous rule, so that a
//! hostile name can neither forge lines of output (a newline), reach the
//! user's terminal (an escape sequence), disguise itself (bidi controls,
//! zero-width characters) nor pass for a plainer name.
//!
//! A name is shown as it is when it is not empty, does not start or end
//! with a space, and holds only printable characters other than `"` and
//! `\`. Any other name is shown in double quotes, with backslash escapes:
//!
//! | character | shown as |
//! | --- | --- |
//! | `"`, `\` | `\"`, `\\` |
//! | newline, carriage return, tab | `\n`, `\r`, `\t` |
//! | other C0 controls, DEL | `\xNN` (`\x1b`) |
//! | C1 controls, invisible formatting (bidi controls, zero-width characters, the BOM, tag characters, soft hyphen), Hangul fillers, line and paragraph separators, spaces other than U+0020, U+FFFD | `\u{NNNN}` (`\u{202e}`, `\u{fffd}`) |
//!
//! Hex digits are lowercase. Every other character, non-ASCII letters
//! included, stays as it is. So a shown name that starts with `"` is always
//! quoted, a quoted name never holds a raw control character, and decoding
//! the escapes gives back the exact name.
//!
//! U+FFFD (the replacement character) is escaped because it is how a name
//! that is not valid UTF-8 reaches a tool: WASI names are strings, and the
//! host replaces the invalid bytes with it. Such a name cannot be opened
//! again under its shown spelling.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `name` as a tool shows it (the module's rule): unchanged when it is
/// plain, else double-quoted with backslash escapes.
pub fn quote_name(name: &str) -> Cow<'_, str> {
    if is_plain(name) { Cow::Borrowed(name) } else { Cow::Owned(quote_name_always(name)) }
}

/// `name` double-quoted with the module's escapes, even when it is plain:
/// for a tool whose output gives a plain character a meaning (the `:` of
/// `grep_files`' `path:line:` prefix).
pub fn quote_name_always(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    out.push('"');
    for c in name.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 || c == '\x7f' => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if is_hidden(c) => {
                let _ = write!(out, "\\u{{{:04x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// True when `name` is shown as it is.
fn is_plain(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(' ')
        && !name.ends_with(' ')
        && name.chars().all(|c| c != '"' && c != '\\' && u32::from(c) >= 0x20 && c != '\x7f' && !is_hidden(c))
}

/// Characters beyond ASCII's controls that are escaped as `\u{NNNN}`:
/// controls, whitespace other than the space, invisible formatting
/// characters and the replacement character.
fn is_hidden(c: char) -> bool {
    c.is_control() || (c.is_whitespace() && c != ' ') || c == '\u{fffd}' || is_invisible(c)
}

/// The format characters (Unicode category Cf) and the Hangul fillers: they
/// draw nothing, or reorder the text around them.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00ad}'
            | '\u{0600}'..='\u{0605}'
            | '\u{061c}'
            | '\u{06dd}'
            | '\u{070f}'
            | '\u{0890}'..='\u{0891}'
            | '\u{08e2}'
            | '\u{115f}'..='\u{1160}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{3164}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{110bd}'
            | '\u{110cd}'
            | '\u{13430}'..='\u{1343f}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0001}'
            | '\u{e0020}'..='\u{e007f}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decode a shown name (the inverse of [`quote_name`]); `None` when it
    /// is not a well-formed shown name.
    fn unquote(shown: &str) -> Option<String> {
        let Some(inner) = shown.strip_prefix('"') else {
            return is_plain(shown).then(|| shown.to_string());
        };
        let inner = inner.strip_suffix('"')?;
        let mut out = String::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => return None,
                '\\' => match chars.next()? {
                    '"' => out.push('"'),
                    '\\' => out.push('\\'),
                    'n' => out.push('\n'),
                    'r' => out.push('\r'),
                    't' => out.push('\t'),
                    'x' => {
                        let hex: String = chars.by_ref().take(2).collect();
                        out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                    }
                    'u' => {
                        if chars.next()? != '{' {
                            return None;
                        }
                        let hex: String = chars.by_ref().take_while(|&c| c != '}').collect();
                        out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                    }
                    _ => return None,
                },
                c => out.push(c),
            }
        }
        Some(out)
    }

    #[test]
    fn plain_names_are_untouched() {
        for name in [
            "a.txt",
            "src/main.rs",
            ".",
            "..",
            "a b.txt",
            "naïve-日本語.md",
            "x:1:y",
            "it's",
            "é",
            "😀.png",
            "~$x",
        ] {
            assert!(matches!(quote_name(name), Cow::Borrowed(_)), "{name}");
            assert_eq!(quote_name(name), name);
        }
    }

    #[test]
    fn tricky_names_are_quoted_and_escaped() {
        let cases = [
            ("a\nb", r#""a\nb""#),
            ("a.txt\n  secret.key (1.0 KiB)", r#""a.txt\n  secret.key (1.0 KiB)""#),
            ("\r\t", r#""\r\t""#),
            ("red\x1b[31m.txt", r#""red\x1b[31m.txt""#),
            ("\x1b]0;title\x07", r#""\x1b]0;title\x07""#),
            ("nul\0del\x7f", r#""nul\x00del\x7f""#),
            ("\"a\\n\"", r#""\"a\\n\"""#),
            ("back\\slash", r#""back\\slash""#),
            ("bad\u{fffd}.txt", r#""bad\u{fffd}.txt""#),
            ("c1\u{85}\u{9b}", r#""c1\u{0085}\u{009b}""#),
            ("txt.\u{202e}exe", r#""txt.\u{202e}exe""#),
            ("zero\u{200b}width\u{feff}", r#""zero\u{200b}width\u{feff}""#),
            ("iso\u{2066}late\u{2069}", r#""iso\u{2066}late\u{2069}""#),
            ("line\u{2028}para\u{2029}", r#""line\u{2028}para\u{2029}""#),
            ("nb\u{a0}sp\u{3000}", r#""nb\u{00a0}sp\u{3000}""#),
            ("tag\u{e0041}", r#""tag\u{e0041}""#),
            ("fill\u{3164}er", r#""fill\u{3164}er""#),
            (" lead", r#"" lead""#),
            ("trail ", r#""trail ""#),
            ("", r#""""#),
        ];
        for (name, shown) in cases {
            assert_eq!(quote_name(name), shown, "{name:?}");
        }
    }

    #[test]
    fn quoting_round_trips_and_never_shows_a_control() {
        let names = [
            "a\nb",
            "\"a\\n\"",
            "\\",
            "\"",
            "\\x41",
            "\\u{fffd}",
            "bad\u{fffd}.txt",
            "\x1b[2J\x1b[H",
            "\u{202e}\u{2066}\u{200f}",
            "mixé\t日本\u{85}",
            " ",
            "x:1:y",
            "plain",
        ];
        for name in names {
            let shown = quote_name(name);
            assert_eq!(unquote(&shown).as_deref(), Some(name), "{shown}");
            let always = quote_name_always(name);
            assert_eq!(unquote(&always).as_deref(), Some(name), "{always}");
            assert!(!shown.chars().any(|c| c.is_control() || is_invisible(c)), "{shown:?}");
        }
        // Different names are shown differently: a literal `"a\n"` is not a
        // newline name.
        assert_ne!(quote_name("\"a\\n\""), quote_name("a\n"));
        assert_ne!(quote_name("bad\u{fffd}.txt"), quote_name("bad\\u{fffd}.txt"));
    }

    #[test]
    fn always_quotes_plain_names_too() {
        assert_eq!(quote_name_always("x:1:y"), r#""x:1:y""#);
        assert_eq!(quote_name_always("a\n"), r#""a\n""#);
    }

    #[test]
    fn every_char_round_trips() {
        // Each scalar value alone and between letters: escaped exactly when
        // the rule says, and decoded back.
        for c in (0..0x11_0000).filter_map(char::from_u32) {
            for name in [c.to_string(), format!("a{c}b")] {
                let shown = quote_name(&name);
                assert_eq!(unquote(&shown).as_deref(), Some(name.as_str()), "{:x}", u32::from(c));
            }
        }
    }
}
