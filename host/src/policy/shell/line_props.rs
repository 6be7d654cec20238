//! Properties of command lines × rules over generated lines: parsing and deciding
//! never panic, whatever the text; hostile nesting and long lines end; a line with
//! a substitution is never allowed by a `command=` rule; commands joined by `;`,
//! `&&`, `||`, `|`, `&` or a newline (also inside `( )`, `{ }` or `if`) are allowed
//! exactly when each one is, and denied when any one is; a denied command stays
//! denied behind wrappers, paths, substitutions, `eval` and `sh -c`; quoting a
//! literal word changes nothing; the rule "always" suggests for a lone command
//! allows it.
//!
//! 4,096 cases per property by default; `PROPTEST_CASES=100000 cargo test --release
//! -p toolhost --lib shell::props` runs a longer one.

use std::time::{Duration, Instant};

use proptest::prelude::*;

use crate::test_support::proptest_config as config;
use serde_json::json;

use super::{MAX_NESTING, MAX_PARSED_BYTES, first_word, parse, suggest};
use crate::policy::permissions::{Decision, Mode, Permissions};
use crate::policy::rules::Rule;

const ALLOW: &[&str] = &[
    "terminal(command=git status*)",
    "terminal(command=cargo test*)",
    "terminal(command=printf*)",
    "terminal(command=true)",
    "terminal(command=make check)",
];
const DENY: &[&str] = &["terminal(command=rm*)", "terminal(command=curl*)"];

/// Programs of generated commands: some allowed (with their subcommand), some
/// denied, some neither.
const PROGRAMS: &[&[&str]] = &[
    &["git", "status"],
    &["git", "push"],
    &["cargo", "test"],
    &["cargo", "build"],
    &["printf"],
    &["true"],
    &["make", "check"],
    &["make"],
    &["rm"],
    &["curl"],
    &["touch"],
    &["mkdir"],
    &["sleep"],
];

/// The decision's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Allow,
    Deny,
    Ask,
}

fn want(decision: &Decision) -> Want {
    match decision {
        Decision::Allow(_) => Want::Allow,
        Decision::Deny(_) => Want::Deny,
        Decision::Ask { .. } => Want::Ask,
    }
}

fn permissions(allow: &[&str], deny: &[&str], mode: Mode, safe_commands: bool) -> Permissions {
    let mut permissions = Permissions::new(mode);
    permissions.allow = allow.iter().map(|r| Rule::parse(r).unwrap()).collect();
    permissions.deny = deny.iter().map(|r| Rule::parse(r).unwrap()).collect();
    permissions.safe_commands = safe_commands;
    permissions
}

fn decide(p: &Permissions, line: &str) -> Want {
    want(&p.decide("terminal", false, &json!({ "command": line })))
}

/// How a literal word is written: as is, or quoted so that the shell gives the
/// same text.
#[derive(Debug, Clone, Copy)]
enum Quote {
    Plain,
    Single,
    Double,
    /// The first character in double quotes, the rest as is (`g"i"t`).
    Partial,
    /// A backslash before the first character.
    Escaped,
}

fn quote() -> impl Strategy<Value = Quote> {
    prop_oneof![
        4 => Just(Quote::Plain),
        1 => Just(Quote::Single),
        1 => Just(Quote::Double),
        1 => Just(Quote::Partial),
        1 => Just(Quote::Escaped),
    ]
}

fn write_word(word: &str, quote: Quote) -> String {
    let mut chars = word.chars();
    let first = chars.next().map(String::from).unwrap_or_default();
    match quote {
        Quote::Plain => word.to_string(),
        Quote::Single => format!("'{word}'"),
        Quote::Double => format!("\"{word}\""),
        Quote::Partial => format!("\"{first}\"{}", chars.as_str()),
        Quote::Escaped => format!("\\{first}{}", chars.as_str()),
    }
}

/// A simple command of literal words: a program (and subcommand) from [`PROGRAMS`],
/// then arguments.
#[derive(Debug, Clone)]
struct Simple {
    words: Vec<String>,
}

impl Simple {
    fn plain(&self) -> String {
        self.words.join(" ")
    }

    fn quoted(&self, quotes: &[Quote]) -> String {
        let written: Vec<String> =
            self.words.iter().enumerate().map(|(i, w)| write_word(w, quotes[i % quotes.len()])).collect();
        written.join(" ")
    }
}

fn argument() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9][a-z0-9._/=-]{0,6}",
        prop::sample::select(vec!["-v", "--release", "-rf", "x.txt", "a/b", "origin", "main"])
            .prop_map(String::from),
    ]
}

fn simple() -> impl Strategy<Value = Simple> {
    (prop::sample::select(PROGRAMS), prop::collection::vec(argument(), 0..3)).prop_map(|(program, args)| {
        let mut words: Vec<String> = program.iter().map(|w| w.to_string()).collect();
        words.extend(args);
        Simple { words }
    })
}

/// A command a deny rule of [`DENY`] matches.
fn denied() -> impl Strategy<Value = Simple> {
    (prop::sample::select(vec!["rm", "curl"]), prop::collection::vec(argument(), 0..3)).prop_map(
        |(program, args)| Simple { words: std::iter::once(program.to_string()).chain(args).collect() },
    )
}

const OPERATORS: &[&str] = &[" ; ", " && ", " || ", " | ", " & ", "\n"];

/// Wrap a line so that it stays the same commands.
fn wrap(line: &str, how: usize) -> String {
    match how {
        0 => line.to_string(),
        1 => format!("( {line} )"),
        2 => format!("{{ {line}; }}"),
        3 => format!("if true; then {line}; fi"),
        _ => format!("while true; do {line}; done"),
    }
}

/// Text of any kind, weighted toward what a shell reads as syntax.
fn soup() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        3 => "[a-z]{1,5}",
        2 => prop::sample::select(vec![
            ";", "&&", "||", "|", "&", "(", ")", "{", "}", "$(", "`", "'", "\"", "\\", "\n", "<<EOF",
            "<<'EOF'", "EOF", "<<<", ">", ">>", "<", "2>&1", "&>", "<(", ">(", "$", "${", "${X:-", "$((",
            "((", "))", "[[", "]]", "!", "#", "*", "?", "[", "]", "~", "=", "X=1", "if", "then", "else",
            "fi", "for", "in", "do", "done", "while", "case", "esac", ";;", "function", "eval", "exec",
            "source", ".", "alias", "env", "sh", "-c", "rm", "git", "status", "$'", "$\"", "\t", " ",
        ])
        .prop_map(String::from),
        1 => any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(token, 0..40).prop_map(|tokens| tokens.join(""))
}

/// Nesting pairs a line can open and close.
const NESTS: &[(&str, &str)] = &[
    ("(", ")"),
    ("( ", " )"),
    ("$(", ")"),
    ("\"$(", ")\""),
    ("`", "`"),
    ("{ ", "; }"),
    ("if true; then ", "; fi"),
    ("[[ ( ", " ) ]]"),
    ("$((", "))"),
    ("${X:-", "}"),
    ("<(", ")"),
    ("eval '", "'"),
    ("bash -c '", "'"),
    ("case x in x) ", ";; esac"),
    ("case x in (x) ", ";; esac"),
    ("case x in x|y) ", ";; esac"),
];

/// A line nested up to 4,000 levels deep, each level one of [`NESTS`] with some
/// text after it, closed or not: most around [`MAX_NESTING`], and as long as
/// [`MAX_PARSED_BYTES`] allows.
fn nested() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(prop::sample::select(NESTS), 1..6),
        prop_oneof![2 => 1usize..MAX_NESTING + 8, 1 => MAX_NESTING..4000],
        0usize..300,
        any::<bool>(),
    )
        .prop_map(|(kinds, depth, filler, close)| {
            let filler = "a ".repeat(filler / 2);
            let mut line = String::new();
            let mut closers = Vec::new();
            for level in 0..depth {
                let (open, close) = kinds[level % kinds.len()];
                line.push_str(open);
                line.push_str(&filler);
                closers.push(close);
                // Cut off under the length bound, so that the parser gets it.
                if line.len() + 8 * closers.len() + 64 > MAX_PARSED_BYTES {
                    break;
                }
            }
            line.push_str("rm x");
            if close {
                for closer in closers.into_iter().rev() {
                    line.push_str(closer);
                }
            }
            line
        })
}

/// A hang is not a slow machine: far above what any of these lines takes.
const BOUND: Duration = Duration::from_secs(10);

proptest! {
    #![proptest_config(config(4096))]

    #[test]
    fn parsing_and_deciding_never_panic(line in prop_oneof![soup(), ".{0,80}"]) {
        let p = permissions(ALLOW, DENY, Mode::Default, true);
        let parsed = parse(&line);
        let _ = suggest(&parsed, Some(&line));
        let _ = first_word(&line);
        let _ = super::is_safe(&parsed, None);
        let _ = decide(&p, &line);
    }

    #[test]
    fn hostile_nesting_and_long_lines_end(line in nested()) {
        let p = permissions(&["terminal(command=*)"], DENY, Mode::Default, true);
        let started = Instant::now();
        let parsed = parse(&line);
        let decision = decide(&p, &line);
        prop_assert!(started.elapsed() < BOUND, "{} bytes took {:?}", line.len(), started.elapsed());
        // What it could not read, no rule allows.
        if !parsed.parsed() {
            prop_assert_ne!(decision, Want::Allow);
        }
    }

    #[test]
    fn a_chain_is_allowed_when_each_command_is_and_denied_when_any_is(
        a in simple(),
        b in simple(),
        op in prop::sample::select(OPERATORS),
        how in 0usize..5,
        safe in any::<bool>(),
    ) {
        // The safe list allows pipes of its commands, not chains: off here, rules only.
        let p = permissions(ALLOW, DENY, Mode::Default, false);
        let (one, two) = (decide(&p, &a.plain()), decide(&p, &b.plain()));
        let line = wrap(&format!("{}{op}{}", a.plain(), b.plain()), how);
        let both = decide(&p, &line);
        let expected = if one == Want::Deny || two == Want::Deny {
            Want::Deny
        } else if one == Want::Allow && two == Want::Allow {
            Want::Allow
        } else {
            Want::Ask
        };
        prop_assert_eq!(both, expected, "{:?}: alone {:?} and {:?}", line, one, two);
        // Whatever the mode, a denied command denies the chain.
        if expected == Want::Deny {
            for mode in [Mode::Yolo, Mode::AcceptEdits, Mode::Plan] {
                prop_assert_eq!(decide(&permissions(ALLOW, DENY, mode, safe), &line), Want::Deny);
            }
        }
    }

    #[test]
    fn a_substitution_is_never_allowed_by_a_rule(
        a in simple(),
        b in simple(),
        inner in simple(),
        op in prop::sample::select(OPERATORS),
        at in 0usize..6,
    ) {
        let sub = match at {
            0 => format!("$({})", inner.plain()),
            1 => format!("`{}`", inner.plain()),
            2 => format!("\"$({})\"", inner.plain()),
            3 => format!("${{X:-$({})}}", inner.plain()),
            4 => format!("\"x`{}`\"", inner.plain()),
            _ => format!("$(( $({}) ))", inner.plain()),
        };
        let line = match at % 3 {
            0 => format!("{} {sub}{op}{}", a.plain(), b.plain()),
            1 => format!("{}{op}X={sub} {}", a.plain(), b.plain()),
            _ => format!("{}{op}{} {sub}", a.plain(), b.plain()),
        };
        // Even a rule for every command allows no substitution.
        let p = permissions(&["terminal(command=*)", ALLOW[0]], DENY, Mode::Default, true);
        let decision = decide(&p, &line);
        prop_assert_ne!(decision, Want::Allow, "{:?}", line);
        // And deny rules see into it.
        if decide(&p, &inner.plain()) == Want::Deny {
            prop_assert_eq!(decision, Want::Deny, "{:?}", line);
        }
    }

    #[test]
    fn a_denied_command_stays_denied_however_it_is_run(
        denied in denied(),
        allowed in simple(),
        form in 0usize..14,
        mode in prop::sample::select(vec![Mode::Default, Mode::AcceptEdits, Mode::Yolo, Mode::Plan]),
    ) {
        let d = denied.plain();
        let line = match form {
            0 => format!("env X=1 {d}"),
            1 => format!("command {d}"),
            2 => format!("nohup nice -n 5 {d}"),
            3 => format!("timeout 5 {d}"),
            4 => format!("/usr/bin/{d}"),
            5 => format!("{} $({d})", allowed.plain()),
            6 => format!("bash -c '{d}'"),
            7 => format!("eval '{d}'"),
            8 => format!("X=1 {d}"),
            9 => format!("( {} && {d} )", allowed.plain()),
            10 => format!("for i in 1; do {d}; done"),
            11 => format!("{} | {d}", allowed.plain()),
            12 => format!("cat <({d})"),
            _ => format!("{} <<EOF\n$({d})\nEOF", allowed.plain()),
        };
        let p = permissions(&["terminal(command=*)"], DENY, mode, true);
        prop_assert_eq!(decide(&p, &line), Want::Deny, "{:?}", line);
    }

    #[test]
    fn quoting_a_literal_word_changes_nothing(
        a in simple(),
        b in simple(),
        op in prop::sample::select(OPERATORS),
        quotes in prop::collection::vec(quote(), 1..5),
    ) {
        let p = permissions(ALLOW, DENY, Mode::Default, false);
        let plain = format!("{}{op}{}", a.plain(), b.plain());
        let quoted = format!("{}{op}{}", a.quoted(&quotes), b.quoted(&quotes));
        prop_assert_eq!(decide(&p, &quoted), decide(&p, &plain), "{:?} vs {:?}", quoted, plain);
    }

    #[test]
    fn the_suggested_rule_allows_the_command_it_was_suggested_for(command in simple()) {
        let line = command.plain();
        let p = permissions(&[], &[], Mode::Default, false);
        let Decision::Ask { suggested_rule, .. } = p.decide("terminal", false, &json!({ "command": line }))
        else {
            return Err(TestCaseError::fail(format!("{line:?} was not asked")));
        };
        let rule = Rule::parse(&suggested_rule).map_err(TestCaseError::fail)?;
        let again = Rule::parse(&rule.to_string());
        prop_assert_eq!(again.as_ref(), Ok(&rule));
        let mut with = p.clone();
        with.allow = vec![rule];
        prop_assert_eq!(decide(&with, &line), Want::Allow, "{} for {:?}", suggested_rule, line);
    }
}

/// The lines these properties found the parser spending seconds to hours on, now
/// refused unparsed at once ([`MAX_NESTING`], [`super::MAX_CASES`]).
#[test]
fn the_nestings_that_took_the_parser_hours_end() {
    let p = permissions(&["terminal(command=*)"], DENY, Mode::Default, true);
    for (open, close, depth) in [
        ("case x in x) ", "", 40),
        ("case x in (x) ", "", 40),
        ("case x in x|y) ", ";; esac", 40),
        ("${X:-", "}", 2560),
        ("$((", "))", 2560),
        ("$(($(", "))", 1200),
        ("$((case x in x|y) ", ";; esac))", 22),
    ] {
        let line = format!("{}rm x{}", open.repeat(depth), close.repeat(depth));
        let started = Instant::now();
        let parsed = parse(&line);
        let decision = decide(&p, &line);
        assert!(started.elapsed() < BOUND, "{open:?} × {depth}: {:?}", started.elapsed());
        assert!(!parsed.parsed(), "{open:?} × {depth}");
        assert_ne!(decision, Want::Allow, "{open:?} × {depth}");
    }
}
