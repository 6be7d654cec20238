//! Properties of rule parsing over generated text: parsing never panics, and an
//! error quotes the rule and says what is wrong with it (one fault put into a
//! good rule is the one named); a rule printed parses back to an equal rule, also
//! through a policy file's TOML string quoting, and decides as the original did.
//!
//! 4,096 cases per property by default; `PROPTEST_CASES=100000 cargo test --release
//! -p toolhost --lib rules::props` runs a longer one.

use proptest::prelude::*;

use crate::test_support::proptest_config as config;
use serde_json::{Value, json};

use super::{Rule, Subject};

/// A condition of a rule: its key and pattern as written.
#[derive(Debug, Clone)]
pub(in crate::policy) struct Condition {
    pub(in crate::policy) key: String,
    pub(in crate::policy) pattern: String,
}

/// A rule's parts, to be printed.
#[derive(Debug, Clone)]
pub(in crate::policy) struct Parts {
    pub(in crate::policy) tool: String,
    /// `None`: the bare tool; else its conditions (at least one).
    pub(in crate::policy) conditions: Option<Vec<Condition>>,
    /// How the separators are spaced.
    pub(in crate::policy) spaced: bool,
}

impl Parts {
    pub(in crate::policy) fn print(&self) -> String {
        let Some(conditions) = &self.conditions else { return self.tool.clone() };
        let (eq, comma) = if self.spaced { (" = ", " ,  ") } else { ("=", ",") };
        let inner: Vec<String> = conditions.iter().map(|c| format!("{}{eq}{}", c.key, c.pattern)).collect();
        format!("{}({})", self.tool, inner.join(comma))
    }
}

fn tool() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z][a-z_]{0,10}",
        1 => Just("*".to_string()),
        1 => "[a-z]{1,4}_\\*",
        1 => "\\{read,write\\}_file",
    ]
}

/// A glob that compiles, as a path pattern (`*` within a component, `**` as one)
/// and as text: literal pieces (also quotes, `#`, `=`, `(`, a backslash escape and
/// non-ASCII), wildcards, alternatives and classes.
fn glob_pattern() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-z0-9._-]{1,6}",
        1 => prop::sample::select(vec![
            "*", "?", "*.rs", "{a,b}", "{x,y,z}.md", "[ab]", "[!x]", "[0-9]", "\\*", "\\\\", "\"", "'",
            "#", "=", "(", "é", "a b", "$X", "~", "%20",
        ])
        .prop_map(String::from),
    ];
    let component = prop::collection::vec(piece, 1..4).prop_map(|p| p.join(""));
    let component = prop_oneof![6 => component, 1 => Just("**".to_string())];
    (any::<bool>(), prop::collection::vec(component, 1..4)).prop_map(|(rooted, parts)| {
        let joined = parts.join("/");
        if rooted { format!("/{joined}") } else { joined }
    })
}

/// The words bash reads as syntax where a command's name stands.
const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do", "done",
    "in", "function", "time", "coproc",
];

/// A `command=` pattern: one simple command of literal words (some quoted), perhaps
/// ending in `*`.
fn command_pattern() -> impl Strategy<Value = String> {
    // No `/`: a word such as `a/.` names the program `.`, which the shell would
    // read as `source`: a pattern refuses it.
    // No reserved word either (`in *` or `do x` is shell syntax, not a command).
    let word = prop_oneof![
        6 => "[a-z][a-z0-9._-]{0,6}".prop_filter("a shell reserved word", |w| !RESERVED.contains(&w.as_str())),
        1 => "'[a-z *;|&]{1,6}'",
        1 => "\"[a-z *]{1,6}\"",
        1 => "[a-z]{1,3}-\\*",
    ];
    (prop::collection::vec(word, 1..4), 0..3usize).prop_map(|(words, rest)| {
        let mut text = words.join(" ");
        match rest {
            0 => {}
            1 => text.push('*'),
            _ => text.push_str(" *"),
        }
        text
    })
}

fn condition() -> impl Strategy<Value = Condition> {
    prop_oneof![
        4 => (
            prop::sample::select(vec!["path", "url", "cwd", "method", "query", "file_path", "n", "x-y", "Dir_2"]),
            glob_pattern(),
        )
            .prop_map(|(key, pattern)| Condition { key: key.into(), pattern }),
        1 => command_pattern().prop_map(|pattern| Condition { key: "command".into(), pattern }),
    ]
}

pub(in crate::policy) fn parts() -> impl Strategy<Value = Parts> {
    (tool(), prop::option::weighted(0.8, prop::collection::vec(condition(), 1..4)), any::<bool>())
        .prop_map(|(tool, conditions, spaced)| Parts { tool, conditions, spaced })
}

/// Text of any kind, weighted toward the rule syntax.
pub(in crate::policy) fn soup() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        3 => "[a-z_]{1,6}",
        3 => prop::sample::select(vec![
            "(", ")", "=", ",", " ", "*", "**", "?", "{", "}", "[", "]", "!", "\\", "/", "'", "\"", ";",
            "|", "$(", "`", "command", "path", "terminal", "\n", "\t", "#", "&&", "-",
        ])
        .prop_map(String::from),
        1 => any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(token, 0..30).prop_map(|t| t.join(""))
}

/// A call's arguments for the rule's keys, some matching its patterns' literal
/// parts, some not.
fn subject_for(parts: &Parts, values: &[String]) -> Value {
    let mut args = serde_json::Map::new();
    for (i, condition) in parts.conditions.iter().flatten().enumerate() {
        let value = values.get(i).cloned().unwrap_or_default();
        // Half the time the pattern itself, which a glob often matches.
        let value = if i % 2 == 0 { condition.pattern.replace(['*', '?'], "") } else { value };
        args.insert(condition.key.clone(), Value::String(value));
    }
    Value::Object(args)
}

/// A policy file allowing and denying `rule`, written with `toml_edit` as
/// `toolhost`'s own edits write rules.
fn policy_with(rule: &str) -> String {
    let mut doc = toml_edit::DocumentMut::new();
    let mut list = toml_edit::Array::new();
    list.push(rule);
    let mut permissions = toml_edit::Table::new();
    permissions["allow"] = toml_edit::value(list.clone());
    permissions["deny"] = toml_edit::value(list);
    doc["permissions"] = toml_edit::Item::Table(permissions);
    doc.to_string()
}

/// One fault put into a good rule, and what the error must say.
pub(in crate::policy) fn fault(parts: &Parts, which: usize, at: usize) -> (String, String) {
    let mut broken = parts.clone();
    // The `=` a fault leaves out is found unspaced.
    broken.spaced = parts.spaced && which != 4;
    let conditions = broken
        .conditions
        .get_or_insert_with(|| vec![Condition { key: "path".into(), pattern: "docs/**".into() }]);
    let i = at % conditions.len();
    let key = conditions[i].key.clone();
    match which {
        0 => {
            let text = broken.print();
            (text[..text.len() - 1].to_string(), "the argument list must end with `)`".into())
        }
        1 => {
            conditions[i].key = format!("{key} x");
            (broken.print(), format!("`{key} x` is not an argument name"))
        }
        2 => {
            conditions[i].pattern = String::new();
            (broken.print(), format!("the pattern for `{key}` is empty"))
        }
        3 => {
            // A class with its range backwards (an unclosed `[` or `{` would take in
            // the conditions after it).
            conditions[i].pattern = format!("{}[z-a]", conditions[i].pattern);
            (broken.print(), format!("pattern for `{key}`"))
        }
        4 => {
            // `KEYPATTERN`: the `=` left out.
            // Printed in place: the same condition text may stand in another
            // condition too (`k=/**` within `k=/**/-`).
            let bare = format!("{key}{}", conditions[i].pattern.replace('=', ""));
            let inner: Vec<String> = conditions
                .iter()
                .enumerate()
                .map(|(j, c)| if j == i { bare.clone() } else { format!("{}={}", c.key, c.pattern) })
                .collect();
            (format!("{}({})", broken.tool, inner.join(",")), format!("`{bare}` is not KEY=PATTERN"))
        }
        5 => {
            conditions[i] = Condition { key: "command".into(), pattern: "git status; rm x".into() };
            (broken.print(), "command pattern `git status; rm x`: ".into())
        }
        _ => {
            broken.tool = String::new();
            (broken.print(), "expected a tool name".into())
        }
    }
}

proptest! {
    #![proptest_config(config(4096))]

    #[test]
    fn parsing_never_panics_and_an_error_quotes_the_rule(text in prop_oneof![soup(), ".{0,60}"]) {
        if let Err(e) = Rule::parse(&text) {
            let head = format!("rule `{}`: ", text.trim());
            prop_assert!(e.starts_with(&head), "{:?}", e);
            prop_assert!(e.len() > head.len() + 8, "no reason given: {:?}", e);
        }
    }

    #[test]
    fn a_printed_rule_parses_back_to_an_equal_rule(parts in parts(), values in prop::collection::vec(".{0,8}", 3)) {
        let text = parts.print();
        let rule = Rule::parse(&text).map_err(TestCaseError::fail)?;
        prop_assert_eq!(rule.as_str(), text.trim());
        let again = Rule::parse(&rule.to_string()).map_err(TestCaseError::fail)?;
        prop_assert_eq!(&again, &rule);
        prop_assert_eq!(again.to_string(), rule.to_string());
        // Through a policy file: TOML quoting gives the same text back.
        let file = policy_with(&text);
        let policy = crate::policy::Policy::parse(&file, std::path::Path::new("/p/toolhost.toml"))
            .map_err(|e| TestCaseError::fail(format!("{e}\n{file}")))?;
        prop_assert_eq!(&policy.allow, &vec![rule.clone()]);
        prop_assert_eq!(&policy.deny, &vec![rule.clone()]);
        // And it decides as the original does.
        let subject = Subject::new(&subject_for(&parts, &values), Some(std::path::Path::new("/w")));
        for tool in ["read_file", "terminal", parts.tool.as_str()] {
            prop_assert_eq!(policy.allow[0].allows(tool, &subject), rule.allows(tool, &subject));
            prop_assert_eq!(policy.deny[0].denies(tool, &subject), rule.denies(tool, &subject));
        }
    }

    #[test]
    fn one_fault_in_a_rule_is_the_one_named(parts in parts(), which in 0usize..7, at in 0usize..4) {
        let (text, needle) = fault(&parts, which, at);
        let err = Rule::parse(&text).err();
        prop_assert!(err.is_some(), "{:?} parsed", text);
        let err = err.unwrap_or_default();
        prop_assert!(err.starts_with(&format!("rule `{}`: ", text.trim())), "{:?}", err);
        prop_assert!(err.contains(&needle), "{:?} should say {:?}", err, needle);
    }
}

#[test]
fn a_rule_decides_the_same_after_a_round_trip_through_a_policy_file() {
    // The example from the rules' docs, with quotes and a backslash to escape.
    let text = r#"terminal(command=printf '"x"' \\*, cwd=a\\b)"#;
    let rule = Rule::parse(text).unwrap();
    let policy = crate::policy::Policy::parse(&policy_with(text), std::path::Path::new("/p/t.toml")).unwrap();
    assert_eq!(policy.allow, vec![rule]);
    let subject = Subject::new(&json!({"command": "printf '\"x\"' \\* y", "cwd": "a\\b"}), None);
    assert_eq!(
        policy.allow[0].allows("terminal", &subject),
        Rule::parse(text).unwrap().allows("terminal", &subject)
    );
}
