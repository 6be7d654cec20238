//! Walking `brush-parser`'s tree for every simple command, wherever it stands: in
//! `;`, `&&`, `||`, `|` and `&` lists, subshells, `{ }` groups, the conditions and
//! bodies of `if`, `while`, `until`, `for` and `case`, function bodies, and — for
//! deny rules — inside substitutions, `eval` strings, alias values and `sh -c`
//! scripts too.

use brush_parser::ast;

use super::command::{Command, Redirect, file_name};
use super::line::{Hazard, Line};
use super::words::{self, Found, Word};

/// How deep substitutions and `eval` strings are followed.
const MAX_DEPTH: usize = 6;

/// Shells whose `-c` script a deny rule looks into.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh"];

/// How deep `(` may nest. The parser tries `((` as arithmetic and as two subshells,
/// so an unclosed run of them costs it time doubling with each level (25 levels:
/// seconds); deeper lines are [`Hazard::Unparsed`].
const MAX_PARENS: usize = 12;

pub(super) fn program(text: &str) -> Option<ast::Program> {
    let options = words::options();
    let tokens = brush_parser::tokenize_str_with_options(text, &options.tokenizer_options()).ok()?;
    let mut depth = 0usize;
    for token in &tokens {
        if let brush_parser::Token::Operator(op, _) = token {
            depth = (depth + op.matches('(').count()).saturating_sub(op.matches(')').count());
            if depth > MAX_PARENS {
                return None;
            }
        }
    }
    brush_parser::parse_tokens(&tokens, &options).ok()
}

pub(super) fn one_pipeline(program: &ast::Program) -> bool {
    let [list] = program.complete_commands.as_slice() else { return false };
    let [ast::CompoundListItem(and_or, ast::SeparatorOperator::Sequence)] = list.0.as_slice() else {
        return false;
    };
    let pipeline = &and_or.first;
    and_or.additional.is_empty()
        && !pipeline.bang
        && pipeline.timed.is_none()
        && pipeline.seq.iter().all(|c| matches!(c, ast::Command::Simple(_)))
}

/// What this redirection keeps rules from allowing: output to a file, input from
/// a path the shell expands or from `/dev/` (`/dev/tcp/…` is a socket).
fn hazard(redirect: &Redirect) -> Option<Hazard> {
    match redirect {
        Redirect::Write(_) => Some(Hazard::FileRedirect),
        Redirect::Read(word) if !word.is_literal() || word.text.starts_with("/dev/") => {
            Some(Hazard::FileRedirect)
        }
        _ => None,
    }
}

/// The walk over one line's tree; `line` is what it found.
pub(super) struct Walker {
    pub(super) line: Line,
    pub(super) depth: usize,
}

impl Walker {
    pub(super) fn program(&mut self, program: &ast::Program) {
        for list in &program.complete_commands {
            self.list(list);
        }
    }

    fn list(&mut self, list: &ast::CompoundList) {
        for ast::CompoundListItem(and_or, _) in &list.0 {
            self.pipeline(&and_or.first);
            for next in &and_or.additional {
                let (ast::AndOr::And(pipeline) | ast::AndOr::Or(pipeline)) = next;
                self.pipeline(pipeline);
            }
        }
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline) {
        for command in &pipeline.seq {
            self.command(command);
        }
    }

    fn command(&mut self, command: &ast::Command) {
        let mut found = Found::default();
        match command {
            ast::Command::Simple(simple) => return self.simple(simple),
            ast::Command::Compound(compound, redirects) => {
                self.compound(compound, &mut found);
                self.redirects(redirects.iter().flat_map(|r| &r.0), &mut found);
            }
            ast::Command::Function(function) => {
                self.line.flag(Hazard::Definition);
                self.compound(&function.body.0, &mut found);
                self.redirects(function.body.1.iter().flat_map(|r| &r.0), &mut found);
            }
            ast::Command::ExtendedTest(test, redirects) => {
                self.test(&test.expr, &mut found);
                self.keyword("[[");
                self.redirects(redirects.iter().flat_map(|r| &r.0), &mut found);
            }
        }
        self.nested(found);
    }

    fn compound(&mut self, compound: &ast::CompoundCommand, found: &mut Found) {
        use ast::CompoundCommand as C;
        match compound {
            C::Arithmetic(arithmetic) => {
                words::scan(&format!("$(({}))", arithmetic.expr.value), found);
                self.keyword("((");
            }
            C::ArithmeticForClause(clause) => {
                for expr in [&clause.initializer, &clause.condition, &clause.updater].into_iter().flatten() {
                    words::scan(&format!("$(({}))", expr.value), found);
                }
                self.keyword("for ((");
                self.list(&clause.body.list);
            }
            C::BraceGroup(group) => self.list(&group.list),
            C::Subshell(subshell) => self.list(&subshell.list),
            C::ForClause(clause) => {
                for value in clause.values.iter().flatten() {
                    words::scan(&value.value, found);
                }
                self.list(&clause.body.list);
            }
            C::CaseClause(clause) => {
                words::scan(&clause.value.value, found);
                for item in &clause.cases {
                    for pattern in &item.patterns {
                        words::scan(&pattern.value, found);
                    }
                    if let Some(list) = &item.cmd {
                        self.list(list);
                    }
                }
            }
            C::IfClause(clause) => {
                self.list(&clause.condition);
                self.list(&clause.then);
                for branch in clause.elses.iter().flatten() {
                    if let Some(condition) = &branch.condition {
                        self.list(condition);
                    }
                    self.list(&branch.body);
                }
            }
            C::WhileClause(clause) | C::UntilClause(clause) => {
                self.list(&clause.0);
                self.list(&clause.1.list);
            }
            C::Coprocess(coprocess) => self.command(&coprocess.body),
        }
    }

    /// A `[[ … ]]` test: only the code in its words matters.
    fn test(&mut self, expr: &ast::ExtendedTestExpr, found: &mut Found) {
        use ast::ExtendedTestExpr as T;
        match expr {
            T::And(a, b) | T::Or(a, b) => {
                self.test(a, found);
                self.test(b, found);
            }
            T::Not(inner) | T::Parenthesized(inner) => self.test(inner, found),
            T::UnaryTest(_, word) => drop(words::scan(&word.value, found)),
            T::BinaryTest(_, left, right) => {
                words::scan(&left.value, found);
                words::scan(&right.value, found);
            }
        }
    }

    /// A compound command that evaluates an expression (`((`, `[[`): a command no
    /// allow rule can match (its program word is not literal).
    fn keyword(&mut self, text: &str) {
        let word = Word { text: text.to_string(), expands: true, glob: false };
        self.line.commands.push(Command { words: vec![word], ..Command::default() });
    }

    fn simple(&mut self, simple: &ast::SimpleCommand) {
        let mut found = Found::default();
        let mut command = Command::default();
        let prefix = simple.prefix.iter().flat_map(|p| &p.0);
        let suffix = simple.suffix.iter().flat_map(|s| &s.0);
        for item in prefix {
            self.item(item, &mut command, true, &mut found);
        }
        if let Some(name) = &simple.word_or_name {
            command.words.push(words::scan(&name.value, &mut found));
        }
        for item in suffix {
            self.item(item, &mut command, false, &mut found);
        }
        self.special(&command, &mut found);
        self.line.commands.push(command);
        self.nested(found);
    }

    fn item(
        &mut self,
        item: &ast::CommandPrefixOrSuffixItem,
        command: &mut Command,
        prefix: bool,
        found: &mut Found,
    ) {
        use ast::CommandPrefixOrSuffixItem as I;
        match item {
            I::IoRedirect(redirect) => {
                let redirect = self.redirect(redirect, found);
                command.redirects.push(redirect);
            }
            I::Word(word) => command.words.push(words::scan(&word.value, found)),
            I::AssignmentWord(_, word) if prefix => command.assignments.push(words::scan(&word.value, found)),
            // After the program an assignment is an argument (`make CC=cc`, `export X=1`).
            I::AssignmentWord(_, word) => command.words.push(words::scan(&word.value, found)),
            I::ProcessSubstitution(_, subshell) => {
                self.line.flag(Hazard::ProcessSubstitution);
                self.list(&subshell.list);
            }
        }
    }

    /// Programs that define names, run code from strings, or replace the shell.
    fn special(&mut self, command: &Command, found: &mut Found) {
        for name in command.programs() {
            match name {
                "alias" | "hash" => self.line.flag(Hazard::Definition),
                "eval" | "source" | "." | "exec" => self.line.flag(Hazard::Eval),
                _ => {}
            }
        }
        let Some(program) = command.program() else { return };
        let args = &command.words[1..];
        let name = file_name(&program.text);
        if name == "alias" {
            // `alias NAME=VALUE`: the value is code the name will run.
            found.scripts.extend(args.iter().filter_map(|w| Some(w.text.split_once('=')?.1.to_string())));
        } else if command.programs().any(|p| p == "eval") {
            let at = command.words.iter().position(|w| w.text == "eval").map_or(0, |i| i + 1);
            let text: Vec<&str> = command.words[at..].iter().map(|w| w.text.as_str()).collect();
            found.scripts.push(text.join(" "));
        } else if SHELLS.contains(&name)
            && let Some(flags) = args.iter().position(|w| !w.text.starts_with('-'))
            && args[..flags].iter().any(|w| !w.text.starts_with("--") && w.text.contains('c'))
        {
            found.scripts.push(args[flags].text.clone());
        }
    }

    fn redirects<'a>(&mut self, list: impl Iterator<Item = &'a ast::IoRedirect>, found: &mut Found) {
        for redirect in list {
            self.redirect(redirect, found);
        }
    }

    fn redirect(&mut self, redirect: &ast::IoRedirect, found: &mut Found) -> Redirect {
        let (redirect, subshell) = Redirect::from_ast(redirect, found);
        if let Some(list) = subshell {
            self.list(list);
        }
        if let Some(hazard) = hazard(&redirect) {
            self.line.flag(hazard);
        }
        redirect
    }

    /// What scanning found: hazards, and the code inside substitutions and `eval`
    /// strings, parsed in turn (their commands follow the one holding them).
    fn nested(&mut self, found: Found) {
        if found.substitution {
            self.line.flag(Hazard::Substitution);
        }
        if found.unparsed {
            self.line.flag(Hazard::Unparsed);
        }
        if found.process_substitution {
            self.line.flag(Hazard::ProcessSubstitution);
        }
        for script in found.scripts {
            match program(&script) {
                Some(program) if self.depth < MAX_DEPTH => {
                    self.depth += 1;
                    self.program(&program);
                    self.depth -= 1;
                }
                _ => self.line.flag(Hazard::Unparsed),
            }
        }
    }
}
