//! What "always" suggests for a command line: the narrowest pattern that still
//! serves, `git commit*` for a program with subcommands, `ls*` for any other. Each
//! word is written by [`literal`]: it matches exactly the word of the line.

use super::command::file_name;
use super::line::Line;
use super::parse::first_word;
use super::words::Word;
use crate::policy::derive::{Lang, literal};

/// Programs whose first word picks what they do (a subcommand, a make target): a
/// rule for them names it too.
pub(crate) const SUBCOMMANDS: &[&str] = &[
    "git",
    "cargo",
    "npm",
    "npx",
    "pnpm",
    "yarn",
    "bun",
    "deno",
    "go",
    "docker",
    "podman",
    "kubectl",
    "helm",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "rustup",
    "gh",
    "make",
    "just",
    "dotnet",
    "terraform",
    "systemctl",
    "apt",
    "apt-get",
];

/// The `command=` pattern "always" saves for `line` (its text `text`): the first
/// command's assignments and program (and subcommand), each word literal, then `*`.
/// It matches that command; whether it covers the line is the rules' business. A
/// line without a word (`>x`, one that does not tokenize) gets its whole text as
/// one literal word, which matches no line but one quoting that text whole.
pub(crate) fn suggest(line: &Line, text: Option<&str>) -> String {
    let word = |w: &Word| literal(&w.text, Lang::Shell);
    let mut words: Vec<String> = Vec::new();
    match line.commands.first() {
        // It did not parse: the first word the tokenizer finds, if any.
        None => words.extend(first_word(text.unwrap_or_default()).as_ref().map(word)),
        Some(first) => {
            words.extend(first.assignments.iter().map(word));
            if let Some(program) = first.program() {
                words.push(word(program));
                let subcommand =
                    first.words.get(1).filter(|w: &&Word| w.is_literal() && !w.text.starts_with('-'));
                if let Some(sub) = subcommand
                    && SUBCOMMANDS.contains(&file_name(&program.text))
                {
                    words.push(word(sub));
                }
            }
        }
    }
    if words.is_empty() {
        // Not even a word: the whole line as one literal word, which no command is
        // (an empty line, none: no pattern is empty).
        let text = text.unwrap_or_default();
        return if text.is_empty() { String::new() } else { literal(text, Lang::Shell) };
    }
    format!("{}*", words.join(" "))
}
