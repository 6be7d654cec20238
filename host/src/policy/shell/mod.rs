//! Command lines as the shell reads them, for the rules on a `command` argument
//! ([`crate::policy::rules`]) and the safe list.
//!
//! A line is parsed by `brush-parser` (bash syntax, as the builtin `terminal` runs
//! it with `bash -c`) into a [`Line`]: its simple commands ([`Command`]: assignments,
//! [`Word`]s with quoting removed and a flag saying whether the shell would still
//! change them, [`Redirect`]s) and its [`Hazard`]s, what makes a line unfit for
//! any rule to allow: a substitution, a process substitution, an alias or function
//! defined in it, `eval`/`source`/`.`/`exec`, output to a file, or a parse failure.
//! Nothing here splits text by hand: words, operators, quotes, comments and
//! here-documents are the parser's.
//!
//! Modules: `parse` (a line, within bounds), `walk` (its tree), `line` ([`Line`],
//! [`Hazard`]), `words` (one word), `command` (one simple command, its redirections,
//! the forms deny rules see it in), `pattern` ([`CommandPattern`]), `safe`
//! ([`is_safe`], the read-only commands that need no rule), `suggest` (the rule
//! "always" saves).

mod command;
mod line;
mod parse;
mod pattern;
mod safe;
mod suggest;
mod walk;
mod words;

pub(crate) use command::Command;
pub(crate) use line::{Hazard, Line};
pub(crate) use parse::parse;
pub(crate) use pattern::CommandPattern;
pub(crate) use safe::is_safe;
pub(crate) use suggest::suggest;
pub(crate) use words::Word;
// What the tests reach for beyond the crate's own uses.
#[cfg(test)]
pub(crate) use command::file_name;
#[cfg(test)]
pub(crate) use parse::{MAX_NESTING, MAX_PARSED_BYTES, first_word};
#[cfg(test)]
pub(crate) use suggest::SUBCOMMANDS;

/// The argument whose text is a command line, in any tool.
pub(crate) const COMMAND_KEY: &str = "command";

/// The builtin shell tool: the one tool whose `command` the safe list trusts to be
/// a `bash -c` line (another tool's `command` may mean something else).
pub(crate) const SHELL_TOOL: &str = "terminal";

#[cfg(test)]
#[path = "table_tests.rs"]
mod table_tests;

#[cfg(test)]
#[path = "line_props.rs"]
mod props;
