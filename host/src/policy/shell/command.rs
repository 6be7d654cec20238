//! One simple command — assignments, words, redirections (read from the parser's
//! tree) — and the forms a deny rule also sees it in: with the wrappers that run
//! another program taken off (`env`, `command`, `builtin`, `nohup`, `time`, `exec`,
//! `nice`, `timeout`) and the program reduced to its file name (`/bin/rm` is `rm`).

use brush_parser::ast;

use super::words::{self, Found, Word};

/// A simple command: `X=1 git status >/dev/null` is the assignment `X=1`, the words
/// `git`, `status` and one redirection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Command {
    /// Leading `NAME=VALUE` assignments, as words (`X=1`).
    pub assignments: Vec<Word>,
    /// The program and its arguments.
    pub words: Vec<Word>,
    /// Its redirections, in order.
    pub redirects: Vec<Redirect>,
}

/// A redirection of a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redirect {
    /// A descriptor duplicated or closed (`2>&1`, `>&2`, `<&-`).
    Dup,
    /// To or from `/dev/null`.
    DevNull,
    /// Input read from a file (`< in.txt`).
    Read(Word),
    /// Output to a file (`>`, `>>`, `>|`, `<>`, `&>`, `>&FILE`).
    Write(Word),
    /// A here-document or here-string: data, not a file.
    Data,
}

/// One form of a command a deny rule matches (see [`Command::deny_forms`]).
#[derive(Debug, Clone, Copy)]
pub struct Form<'a> {
    assignments: &'a [Word],
    /// The program's name in place of the first word's text.
    program: Option<&'a str>,
    words: &'a [Word],
}

impl<'a> Form<'a> {
    /// Its words' texts, in order.
    pub fn texts(self) -> impl Iterator<Item = &'a str> {
        let program = self.program;
        let words = self.words.iter().enumerate().map(move |(i, w)| match program {
            Some(name) if i == 0 => name,
            _ => w.text.as_str(),
        });
        self.assignments.iter().map(|w| w.text.as_str()).chain(words)
    }
}

impl Redirect {
    /// The redirection `redirect` of the tree, and the commands of its process
    /// substitution to walk, if it is one.
    pub(super) fn from_ast<'a>(
        redirect: &'a ast::IoRedirect,
        found: &mut Found,
    ) -> (Redirect, Option<&'a ast::CompoundList>) {
        use ast::{IoFileRedirectKind as K, IoFileRedirectTarget as T, IoRedirect as R};
        let redirect = match redirect {
            R::File(_, _, T::Fd(_)) => Redirect::Dup,
            R::File(_, _, T::ProcessSubstitution(_, subshell)) => {
                found.process_substitution = true;
                return (Redirect::Data, Some(&subshell.list));
            }
            R::File(_, _, T::Duplicate(word)) => {
                let word = words::scan(&word.value, found);
                let fd = word.text.strip_suffix('-').unwrap_or(&word.text);
                if word.is_literal() && fd.chars().all(|c| c.is_ascii_digit()) {
                    Redirect::Dup
                } else {
                    // `>&FILE` writes FILE.
                    Redirect::Write(word)
                }
            }
            R::File(_, kind, T::Filename(word)) => {
                let word = words::scan(&word.value, found);
                match kind {
                    _ if word.is_literal() && word.text == "/dev/null" => Redirect::DevNull,
                    K::Read => Redirect::Read(word),
                    _ => Redirect::Write(word),
                }
            }
            R::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    words::scan_heredoc(&doc.doc.value, found);
                }
                Redirect::Data
            }
            R::HereString(_, word) => {
                words::scan(&word.value, found);
                Redirect::Data
            }
            R::OutputAndError(word, _) => {
                let word = words::scan(&word.value, found);
                if word.is_literal() && word.text == "/dev/null" {
                    Redirect::DevNull
                } else {
                    Redirect::Write(word)
                }
            }
        };
        (redirect, None)
    }
}

/// Programs that run the rest of their words as another command, with the options
/// of theirs that take a value.
const WRAPPERS: &[(&str, &[&str])] = &[
    ("env", &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"]),
    ("command", &[]),
    ("builtin", &[]),
    ("nohup", &[]),
    ("time", &["-f", "--format", "-o", "--output"]),
    ("exec", &["-a"]),
    ("nice", &["-n", "--adjustment"]),
    ("timeout", &["-s", "--signal", "-k", "--kill-after"]),
];

/// How many wrappers deep a deny rule looks (`env nohup nice rm`).
const MAX_UNWRAP: usize = 8;

impl Command {
    /// The program as written (`None` for a line of assignments only).
    pub fn program(&self) -> Option<&Word> {
        self.words.first()
    }

    /// The words an allow rule matches: the assignments, then the program as written
    /// and its arguments (`X=1 git status` is three words, not covered by
    /// `git status*`).
    pub fn written(&self) -> impl Iterator<Item = &Word> {
        self.assignments.iter().chain(&self.words)
    }

    /// The forms a deny rule matches: the words as written (with and without the
    /// assignments), and for each wrapper taken off or program path reduced to its
    /// file name, the words that are left.
    pub fn deny_forms(&self) -> Vec<Form<'_>> {
        let mut forms = Vec::new();
        if !self.assignments.is_empty() {
            forms.push(Form { assignments: &self.assignments, program: None, words: &self.words });
        }
        let mut words: &[Word] = &self.words;
        for _ in 0..MAX_UNWRAP {
            let Some(program) = words.first() else { break };
            forms.push(Form { assignments: &[], program: None, words });
            let name = file_name(&program.text);
            if name != program.text {
                forms.push(Form { assignments: &[], program: Some(name), words });
            }
            match unwrap(name, &words[1..]) {
                Some(inner) => words = inner,
                None => break,
            }
        }
        forms
    }

    /// The programs this command runs as far as wrappers show (`command eval x` runs
    /// `command` and `eval`), by file name.
    pub fn programs(&self) -> impl Iterator<Item = &str> {
        let mut words: &[Word] = &self.words;
        let mut depth = 0;
        std::iter::from_fn(move || {
            let name = file_name(&words.first()?.text);
            depth += 1;
            words = if depth < MAX_UNWRAP { unwrap(name, &words[1..]).unwrap_or(&[]) } else { &[] };
            Some(name)
        })
    }
}

/// The last component of a program path (`/usr/bin/rm` → `rm`, `./x` → `x`).
pub(crate) fn file_name(program: &str) -> &str {
    program.rsplit('/').next().filter(|n| !n.is_empty()).unwrap_or(program)
}

/// The command a wrapper `name` runs, given the words after it; `None` when `name`
/// is no wrapper or runs nothing.
fn unwrap<'a>(name: &str, mut rest: &'a [Word]) -> Option<&'a [Word]> {
    let (_, with_value) = WRAPPERS.iter().find(|(wrapper, _)| *wrapper == name)?;
    while let Some(word) = rest.first() {
        let text = word.text.as_str();
        if text == "--" {
            rest = &rest[1..];
            break;
        }
        let option = text.len() > 1 && text.starts_with('-');
        let assignment = name == "env" && text.split_once('=').is_some_and(|(n, _)| !n.is_empty());
        if !option && !assignment {
            break;
        }
        let skip = if with_value.contains(&text) { 2 } else { 1 };
        rest = rest.get(skip..).unwrap_or_default();
    }
    if name == "timeout" {
        // `timeout DURATION COMMAND`
        rest = rest.get(1..).unwrap_or_default();
    }
    (!rest.is_empty()).then_some(rest)
}
