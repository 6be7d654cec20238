//! The matchers that search `old_string` as a substring: exact (the file's
//! line endings applied to it), and the helpers of escape-normalized (`\n`,
//! `\t`, `\"` written literally) and trimmed-boundary (whitespace around it).

use std::borrow::Cow;

/// Where `old` occurs in `text` (non-overlapping, byte offsets), and the
/// strings to replace with: in a CRLF file the model's `\n` become `\r\n` in
/// both; if that finds nothing (a file with mixed endings) they are tried
/// as given.
pub(crate) fn exact<'a>(
    text: &str,
    crlf: bool,
    old: &'a str,
    new: &'a str,
) -> (Vec<usize>, Cow<'a, str>, Cow<'a, str>) {
    if crlf {
        let (old_crlf, new_crlf) = (to_crlf(old), to_crlf(new));
        let found: Vec<usize> = text.match_indices(&*old_crlf).map(|(i, _)| i).collect();
        if !found.is_empty() || old_crlf == old {
            return (found, old_crlf, new_crlf);
        }
    }
    (text.match_indices(old).map(|(i, _)| i).collect(), Cow::Borrowed(old), Cow::Borrowed(new))
}

/// `s` with every line ending (`\n` or `\r\n`) written as `\r\n`.
pub(crate) fn to_crlf(s: &str) -> Cow<'_, str> {
    if !s.contains('\n') {
        return Cow::Borrowed(s);
    }
    Cow::Owned(s.replace("\r\n", "\n").replace('\n', "\r\n"))
}

/// `s` with the escapes a model writes literally turned into what they stand
/// for: `\n`, `\r`, `\t`, `\"`, `\'`, `` \` ``, `\\`, `\$`. Borrowed when there
/// is none.
pub(crate) fn unescape(s: &str) -> Cow<'_, str> {
    if !s.contains('\\') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    let mut changed = false;
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let real = match chars.clone().next() {
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some(q @ ('"' | '\'' | '`' | '\\' | '$')) => q,
            _ => {
                out.push(c);
                continue;
            }
        };
        chars.next();
        out.push(real);
        changed = true;
    }
    if changed { Cow::Owned(out) } else { Cow::Borrowed(s) }
}

/// `new` without the whitespace `old` had around its text: what
/// trimmed-boundary replaces the trimmed match with. Each side of `new` is cut
/// only when it carries that same whitespace.
pub(crate) fn strip_boundary<'a>(old: &str, new: &'a str) -> &'a str {
    let lead = &old[..old.len() - old.trim_start().len()];
    let trail = &old[old.trim_end().len()..];
    let new = new.strip_prefix(lead).unwrap_or(new);
    new.strip_suffix(trail).unwrap_or(new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_with_line_endings() {
        assert_eq!(exact("a\r\nb\r\na\r\nb", true, "a\nb", "x").0, [0, 6]);
        let (at, old, new) = exact("a\nb", false, "a\nb", "x\ny");
        assert_eq!((at, &*old, &*new), (vec![0], "a\nb", "x\ny"));
        assert_eq!(to_crlf("a\nb\r\nc"), "a\r\nb\r\nc");
    }

    #[test]
    fn unescaping() {
        assert_eq!(unescape(r#"a\n\tb(\"c\") \\ \q"#), "a\n\tb(\"c\") \\ \\q");
        assert!(matches!(unescape(r"no escapes \q"), Cow::Borrowed(_)));
        assert_eq!(unescape("trailing \\"), "trailing \\");
    }

    #[test]
    fn boundaries() {
        assert_eq!(strip_boundary("\n    foo()\n", "\n    bar()\n    baz()\n"), "bar()\n    baz()");
        assert_eq!(strip_boundary("  foo ", "bar"), "bar");
    }
}
