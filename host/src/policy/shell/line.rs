//! What parsing a command line gives: its simple commands, and what makes it unfit
//! for rules ([`Hazard`]).

use super::command::Command;

/// Why no rule may allow a line, whatever its commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hazard {
    /// The line does not parse (or nests too deep).
    Unparsed,
    /// `$(…)` or backticks, anywhere.
    Substitution,
    /// `<(…)` or `>(…)`.
    ProcessSubstitution,
    /// An alias, a function or a hashed program path defined in the line: a name a
    /// rule allows could then run something else.
    Definition,
    /// `eval`, `source`, `.` or `exec`: code or a program the words don't show.
    Eval,
    /// Output redirected to a file (or input from a path the shell expands, or a
    /// `/dev/tcp` socket).
    FileRedirect,
}

impl Hazard {
    /// What it is, for a reason shown to the user.
    pub fn describe(self) -> &'static str {
        match self {
            Hazard::Unparsed => "it does not parse as a shell command line",
            Hazard::Substitution => "it has a command substitution",
            Hazard::ProcessSubstitution => "it has a process substitution",
            Hazard::Definition => "it defines an alias or a function",
            Hazard::Eval => "it runs eval, source or exec",
            Hazard::FileRedirect => "it redirects output to a file",
        }
    }
}

/// A parsed command line.
#[derive(Debug, Clone, Default)]
pub struct Line {
    /// Its simple commands, in order; those found inside substitutions, `eval`
    /// strings and `sh -c` scripts come after the command holding them.
    pub commands: Vec<Command>,
    pub(super) hazards: Vec<Hazard>,
    pub(super) pipeline: bool,
}

impl Line {
    /// What keeps rules from allowing it (empty: nothing).
    pub fn hazards(&self) -> &[Hazard] {
        &self.hazards
    }

    /// Whether it parsed (then [`Hazard::Unparsed`] is absent).
    pub fn parsed(&self) -> bool {
        !self.hazards.contains(&Hazard::Unparsed)
    }

    /// Whether it is one pipeline of simple commands and nothing else: no `;`, `&&`,
    /// `||`, `&`, `!`, `time`, newline between commands, nor any compound command.
    pub fn is_one_pipeline(&self) -> bool {
        self.pipeline
    }

    pub(super) fn flag(&mut self, hazard: Hazard) {
        if !self.hazards.contains(&hazard) {
            self.hazards.push(hazard);
        }
    }
}
