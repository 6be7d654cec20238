//! `toolhost list` for a person: one line per tool (its name, its kind: what a call
//! may do, and the first sentence of its description), cut to the terminal's width
//! (100 columns when stdout is not a terminal, 120 at most); `--long` shows each
//! tool whole: where it comes from, its description and its arguments. `--json` is
//! in `commands`.

use std::io::{self, Write};

use serde_json::Value;
use toolhost::Tool;

/// Width of a line when stdout is not a terminal.
const PIPED_WIDTH: usize = 100;
/// Widest line, whatever the terminal.
const MAX_WIDTH: usize = 120;

/// Its kind, what a call may do: `read-only`, `destructive` or `writes`.
fn kind(tool: &Tool) -> &'static str {
    match (tool.spec().read_only, tool.spec().destructive) {
        (true, _) => "read-only",
        (false, true) => "destructive",
        (false, false) => "writes",
    }
}

/// The first sentence of `text`: up to the first `. ` (or the end of its first line).
pub(crate) fn first_sentence(text: &str) -> &str {
    let line = text.trim_start().lines().next().unwrap_or("").trim_end();
    match line.find(". ") {
        Some(at) => &line[..=at],
        None => line,
    }
}

/// `text` in at most `width` characters, `…` marking a cut.
pub(crate) fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let kept: String = text.chars().take(width.saturating_sub(1)).collect();
    format!("{}…", kept.trim_end())
}

/// The width lines are cut to here.
fn width() -> usize {
    match console::Term::stdout().size_checked() {
        Some((_, cols)) => usize::from(cols).clamp(40, MAX_WIDTH),
        None => PIPED_WIDTH,
    }
}

/// One line per tool.
pub(crate) fn short(out: &mut impl Write, tools: &[&Tool]) -> io::Result<()> {
    let width = width();
    let name_width = tools.iter().map(|t| t.spec().name.len()).max().unwrap_or(0);
    for tool in tools {
        let head = format!("{:name_width$}  {:11}  ", tool.spec().name, kind(tool));
        let room = width.saturating_sub(head.chars().count());
        writeln!(
            out,
            "{}",
            cut(&format!("{head}{}", cut(first_sentence(&tool.spec().description), room)), width)
        )?;
    }
    Ok(())
}

/// Each tool whole.
pub(crate) fn long(out: &mut impl Write, tools: &[&Tool]) -> io::Result<()> {
    for (i, tool) in tools.iter().enumerate() {
        let spec = tool.spec();
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(out, "{}  ({}, from {})", spec.name, kind(tool), tool.source())?;
        for line in spec.description.trim().lines() {
            writeln!(out, "    {line}")?;
        }
        let required: Vec<&str> =
            spec.parameters["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        let properties = spec.parameters["properties"].as_object();
        for (name, schema) in properties.into_iter().flatten() {
            let mark = if required.contains(&name.as_str()) { "" } else { "?" };
            let kind =
                schema["type"].as_str().map(str::to_string).unwrap_or_else(|| schema["type"].to_string());
            let about = schema["description"].as_str().map(first_sentence).unwrap_or("");
            writeln!(out, "    - {name}{mark}: {kind}  {about}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_sentence_and_the_cut() {
        assert_eq!(first_sentence("Read a file. Lines are numbered.\nMore."), "Read a file.");
        assert_eq!(first_sentence("  One line only\nsecond"), "One line only");
        assert_eq!(first_sentence("v1.2 is fine. Next"), "v1.2 is fine.");
        assert_eq!(cut("abcdef", 6), "abcdef");
        assert_eq!(cut("abcdefg", 6), "abcde…");
        assert_eq!(cut("ab    cdefg", 6), "ab…");
        assert_eq!(cut("ééééééé", 4).chars().count(), 4);
    }
}
