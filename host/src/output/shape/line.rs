//! One line of an output as a terminal would have shown it: ANSI escape
//! sequences taken out, and of a line redrawn with carriage returns only its
//! last non-empty state (unless an earlier state looks like a failure, then
//! every state, so no failure text is hidden by a later redraw).

use std::borrow::Cow;

/// What `raw` (one line, without its `\n`) showed on a terminal.
pub(crate) fn visible(raw: &str) -> Cow<'_, str> {
    let raw = raw.strip_suffix('\r').unwrap_or(raw);
    let plain = if raw.contains('\x1b') { Cow::Owned(strip_ansi(raw)) } else { Cow::Borrowed(raw) };
    if !plain.contains('\r') {
        return plain;
    }
    let states: Vec<&str> = plain.split('\r').filter(|s| !s.trim().is_empty()).collect();
    let Some((last, earlier)) = states.split_last() else { return Cow::Owned(String::new()) };
    if earlier.iter().any(|s| super::alarm(s)) {
        return Cow::Owned(states.join(" \\r "));
    }
    Cow::Owned(last.to_string())
}

/// `text` without ANSI escape sequences: CSI (`ESC [ … final`), OSC (`ESC ] … BEL`
/// or `ESC \`), and two-byte escapes.
pub(crate) fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                // Parameters and intermediates, then one final byte in @..~.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\x07' {
                        break;
                    }
                    if c == '\x1b' && chars.peek() == Some(&'\\') {
                        chars.next();
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_and_redraws_are_what_a_terminal_shows() {
        assert_eq!(visible("\x1b[1m\x1b[31merror\x1b[0m: x"), "error: x");
        assert_eq!(visible("\x1b]8;;http://a\x1b\\link\x1b]8;;\x07 end"), "link end");
        assert_eq!(visible(" 10%\r 50%\r100% done\r"), "100% done");
        assert_eq!(visible("plain line\r"), "plain line");
        assert!(matches!(visible("plain"), Cow::Borrowed("plain")));
    }

    #[test]
    fn a_redraw_never_hides_a_failure() {
        let shown = visible("error: disk full\r 10%\r 20%");
        assert!(shown.contains("error: disk full") && shown.contains("20%"), "{shown}");
    }
}
