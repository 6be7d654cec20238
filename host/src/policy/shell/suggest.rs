//! What "always" suggests for a command line: the narrowest pattern that still
//! serves, `git commit*` for a program with subcommands, `ls*` for any other.

use super::command::file_name;
use super::line::Line;
use super::parse::first_word;
use super::words::Word;

/// Programs whose first word picks what they do (a subcommand, a make target): a
/// rule for them names it too.
const SUBCOMMANDS: &[&str] = &[
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
/// command's assignments and program (and subcommand), then `*`. It matches that
/// command; whether it covers the line is the rules' business.
pub fn suggest(line: &Line, text: Option<&str>) -> String {
    let Some(first) = line.commands.first() else {
        // It did not parse: the first word the tokenizer finds, if any.
        let text = text.unwrap_or_default();
        return match first_word(text) {
            Some(word) => format!("{}*", pattern_word(&word.text)),
            None => pattern_word(text),
        };
    };
    let mut words: Vec<String> = first.assignments.iter().map(|w| pattern_word(&w.text)).collect();
    if let Some(program) = first.program() {
        words.push(pattern_word(&program.text));
        let subcommand = first.words.get(1).filter(|w: &&Word| w.is_literal() && !w.text.starts_with('-'));
        if let Some(sub) = subcommand
            && SUBCOMMANDS.contains(&file_name(&program.text))
        {
            words.push(pattern_word(&sub.text));
        }
    }
    format!("{}*", words.join(" "))
}

/// `word` as a pattern word that matches it: every character other than letters,
/// digits and `._-/+=:@%^` (which a pattern or the rule syntax would read as syntax)
/// becomes `?`.
fn pattern_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "._-/+=:@%^".contains(c);
    let out: String = word.chars().map(|c| if plain(c) { c } else { '?' }).collect();
    if out.is_empty() { "''".into() } else { out }
}
