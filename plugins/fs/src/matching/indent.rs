//! A constant indentation offset between `old_string` and the file (two
//! spaces more, a tab for four spaces), found from corresponding lines and
//! applied to `new_string` so the edit keeps the file's indentation.

/// How old's indentation is rewritten first: as is, or tabs and spaces swapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Convert {
    AsIs,
    /// Each run of this many spaces becomes a tab.
    SpacesToTab(usize),
    /// Each tab becomes this many spaces.
    TabToSpaces(usize),
}

const CONVERSIONS: [Convert; 7] = [
    Convert::AsIs,
    Convert::SpacesToTab(4),
    Convert::SpacesToTab(2),
    Convert::SpacesToTab(8),
    Convert::TabToSpaces(4),
    Convert::TabToSpaces(2),
    Convert::TabToSpaces(8),
];

impl Convert {
    fn apply(self, indent: &str) -> String {
        match self {
            Self::AsIs => indent.to_string(),
            Self::SpacesToTab(n) => indent.replace(&" ".repeat(n), "\t"),
            Self::TabToSpaces(n) => indent.replace('\t', &" ".repeat(n)),
        }
    }
}

/// What is done to the converted indentation: a prefix added or taken off.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Offset {
    Add(String),
    Remove(String),
}

/// The shift from old's indentation to the file's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shift {
    convert: Convert,
    offset: Offset,
}

fn split_indent(line: &str) -> (&str, &str) {
    let rest = line.trim_start_matches([' ', '\t']);
    (&line[..line.len() - rest.len()], rest)
}

/// The one shift that turns every `(old line, file line)` pair's indentation
/// into the file's, taking the pairs whose text is the same (whitespace runs
/// as one space) and not blank. `None` when there is none, no pair, or nothing to shift.
pub(crate) fn detect<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> Option<Shift> {
    let pairs: Vec<(&str, &str)> = pairs
        .filter(|(o, f)| !o.trim().is_empty() && o.split_whitespace().eq(f.split_whitespace()))
        .map(|(o, f)| (split_indent(o).0, split_indent(f).0))
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let consistent: Vec<Shift> = CONVERSIONS
        .iter()
        .filter_map(|&convert| {
            let mut offset: Option<Offset> = None;
            for &(o, f) in &pairs {
                let o = convert.apply(o);
                let this = if let Some(p) = f.strip_suffix(o.as_str()) {
                    Offset::Add(p.to_string())
                } else if let Some(p) = o.strip_suffix(f) {
                    Offset::Remove(p.to_string())
                } else {
                    return None;
                };
                let this =
                    if this == Offset::Remove(String::new()) { Offset::Add(String::new()) } else { this };
                match &offset {
                    None => offset = Some(this),
                    Some(seen) if *seen == this => {}
                    Some(_) => return None,
                }
            }
            offset.map(|offset| Shift { convert, offset })
        })
        .collect();
    // A conversion alone explains more than a conversion and an offset.
    let shift =
        consistent.iter().find(|s| s.offset == Offset::Add(String::new())).or(consistent.first()).cloned()?;
    let identity = shift.convert == Convert::AsIs && shift.offset == Offset::Add(String::new());
    (!identity).then_some(shift)
}

impl Shift {
    /// `new` with each non-blank line's indentation shifted.
    pub(crate) fn apply(&self, new: &str) -> String {
        let lines: Vec<String> = new
            .split('\n')
            .map(|line| {
                if line.trim().is_empty() {
                    return line.to_string();
                }
                let (indent, rest) = split_indent(line);
                let indent = self.convert.apply(indent);
                let indent = match &self.offset {
                    Offset::Add(p) => format!("{p}{indent}"),
                    Offset::Remove(p) => {
                        indent.strip_prefix(p.as_str()).map_or_else(String::new, str::to_string)
                    }
                };
                format!("{indent}{rest}")
            })
            .collect();
        lines.join("\n")
    }

    /// For the result: `4 spaces as a tab, then +1 tab`, `+2 spaces`.
    pub(crate) fn describe(&self) -> String {
        let convert = match self.convert {
            Convert::AsIs => None,
            Convert::SpacesToTab(n) => Some(format!("{n} spaces as a tab")),
            Convert::TabToSpaces(n) => Some(format!("a tab as {n} spaces")),
        };
        let offset = match &self.offset {
            Offset::Add(p) if p.is_empty() => None,
            Offset::Add(p) => Some(format!("+{}", whitespace_words(p))),
            Offset::Remove(p) => Some(format!("-{}", whitespace_words(p))),
        };
        match (convert, offset) {
            (Some(c), Some(o)) => format!("{c}, then {o}"),
            (Some(c), None) => c,
            (None, Some(o)) => o,
            (None, None) => String::new(),
        }
    }
}

fn whitespace_words(p: &str) -> String {
    let tabs = p.matches('\t').count();
    let spaces = p.len() - tabs;
    let mut words = Vec::new();
    if tabs > 0 {
        words.push(crate::count(tabs, "tab", "tabs"));
    }
    if spaces > 0 {
        words.push(crate::count(spaces, "space", "spaces"));
    }
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shift(pairs: &[(&'static str, &'static str)]) -> Option<Shift> {
        detect(pairs.iter().copied())
    }

    #[test]
    fn two_more_spaces() {
        let s = shift(&[("if a {", "    if a {"), ("  b();", "      b();")]).unwrap();
        assert_eq!(s.describe(), "+4 spaces");
        assert_eq!(s.apply("if a {\n  c();\n\n}"), "    if a {\n      c();\n\n    }");
    }

    #[test]
    fn fewer_spaces() {
        let s = shift(&[("      x", "    x"), ("        y", "      y")]).unwrap();
        assert_eq!(s.describe(), "-2 spaces");
        assert_eq!(s.apply("      z\nw"), "    z\nw");
    }

    #[test]
    fn tabs_for_spaces_and_back() {
        let s = shift(&[("    a", "\ta"), ("        b", "\t\tb")]).unwrap();
        assert_eq!(s.describe(), "4 spaces as a tab");
        assert_eq!(s.apply("    c\n        d"), "\tc\n\t\td");
        let s = shift(&[("\ta", "        a")]).unwrap();
        assert_eq!(s.describe(), "a tab as 8 spaces");
    }

    #[test]
    fn none_without_a_constant_offset() {
        assert_eq!(shift(&[("  a", "    a"), ("  b", "        b")]), None, "not constant");
        assert_eq!(shift(&[("a", "a"), ("  b", "  b")]), None, "nothing to shift");
        assert_eq!(shift(&[("a", "  x")]), None, "no pair with the same text");
    }
}
