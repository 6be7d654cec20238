//! The safe list: read-only commands that run without a rule (`[permissions]
//! safe-commands`, on by default), when the whole line is such commands joined by
//! pipes at most, every word literal, nothing redirected to a file, no assignment.
//!
//! | program | when |
//! | --- | --- |
//! | `ls`, `pwd`, `echo`, `cat`, `head`, `wc`, `grep`, `stat`, `du`, `which` | always (they have no option that writes or runs a program); globs allowed but for `which` |
//! | `tail` | not `-f`, `-F`, `--follow` (it would never end) |
//! | `file` | not `-C`, `--compile` (writes a `.mgc` file) |
//! | `tree` | not `-o` (writes a file), `-R` (writes `00Tree.html` files with `-H`) |
//! | `rg` | not `--pre`, `--hostname-bin` (run programs) |
//! | `git status`, `git diff`, `git log`, `git show`, `git --version` | no option before the subcommand (`-c`, `-C`, `--exec-path` …), not `--output`, `--ext-diff`, `--textconv`; and only in a repository's top directory with no `.gitconfig` or `.config/git/config` there (HOME is the work dir: a planted global config could name a program to run) |
//! | `cargo --version`, `cargo -V` | no `rust-toolchain` or `rust-toolchain.toml` there (rustup could run a toolchain from the work dir) |
//!
//! An option is refused in every spelling: `-f` also inside `-nf`, `--follow` also
//! as `--fol` (GNU and git accept unambiguous abbreviations) or `--follow=name`.

use std::path::Path;

use super::Line;
use super::command::Command;

/// One entry of the list.
struct Safe {
    program: &'static str,
    /// File names that may stand for the arguments (`ls *.rs`).
    globs: bool,
    /// Short option letters refused.
    short: &'static str,
    /// Long option names refused.
    long: &'static [&'static str],
    /// What must hold in the directory it runs in.
    place: Place,
}

/// What a program reads from the directory it runs in (also its HOME).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Anywhere,
    /// A repository's top directory, with no global git config in it.
    GitTop,
    /// No rustup toolchain file.
    NoToolchain,
}

const fn plain(program: &'static str, globs: bool) -> Safe {
    Safe { program, globs, short: "", long: &[], place: Place::Anywhere }
}

const LIST: &[Safe] = &[
    plain("ls", true),
    plain("pwd", true),
    plain("echo", true),
    plain("cat", true),
    plain("head", true),
    plain("wc", true),
    plain("grep", true),
    plain("stat", true),
    plain("du", true),
    plain("which", false),
    Safe { short: "fF", long: &["follow"], ..plain("tail", false) },
    Safe { short: "C", long: &["compile"], ..plain("file", false) },
    Safe { short: "oR", long: &[], ..plain("tree", false) },
    Safe { long: &["pre", "hostname-bin"], ..plain("rg", false) },
    Safe { long: &["output", "ext-diff", "textconv"], place: Place::GitTop, ..plain("git", false) },
    Safe { place: Place::NoToolchain, ..plain("cargo", false) },
];

/// Git subcommands that only read.
const GIT_READS: &[&str] = &["status", "diff", "log", "show"];

/// Whether `line` is safe to run without asking. `dir` is the directory it runs
/// in and its HOME (`None`: unknown, then only programs that read nothing there
/// qualify).
pub(crate) fn is_safe(line: &Line, dir: Option<&Path>) -> bool {
    line.hazards().is_empty()
        && line.is_one_pipeline()
        && !line.commands.is_empty()
        && line.commands.iter().all(|c| command_is_safe(c, dir))
}

fn command_is_safe(command: &Command, dir: Option<&Path>) -> bool {
    let Some(program) = command.program() else { return false };
    let Some(safe) = LIST.iter().find(|s| s.program == program.text) else { return false };
    let args = &command.words[1..];
    command.assignments.is_empty()
        && program.is_literal()
        && args.iter().all(|w| w.is_literal() || (safe.globs && !w.expands))
        && args.iter().all(|w| !refused(&w.text, safe))
        && subcommand_is_safe(safe.program, args)
        && place_is_safe(safe.place, dir)
}

/// Whether `arg` spells one of the refused options.
fn refused(arg: &str, safe: &Safe) -> bool {
    if let Some(long) = arg.strip_prefix("--") {
        let name = long.split('=').next().unwrap_or_default();
        return !name.is_empty() && safe.long.iter().any(|l| l.starts_with(name) || name.starts_with(l));
    }
    arg.strip_prefix('-').is_some_and(|flags| flags.contains(|c| safe.short.contains(c)))
}

fn subcommand_is_safe(program: &str, args: &[super::Word]) -> bool {
    let first = args.first().map(|w| w.text.as_str());
    match program {
        "git" => {
            first.is_some_and(|s| GIT_READS.contains(&s)) || (first == Some("--version") && args.len() == 1)
        }
        "cargo" => matches!(first, Some("--version" | "-V")) && args.len() == 1,
        _ => true,
    }
}

fn place_is_safe(place: Place, dir: Option<&Path>) -> bool {
    let exists = |rel: &str| dir.is_some_and(|d| d.join(rel).symlink_metadata().is_ok());
    match place {
        Place::Anywhere => true,
        Place::GitTop => {
            dir.is_some() && exists(".git") && !exists(".gitconfig") && !exists(".config/git/config")
        }
        Place::NoToolchain => dir.is_some() && !exists("rust-toolchain") && !exists("rust-toolchain.toml"),
    }
}
