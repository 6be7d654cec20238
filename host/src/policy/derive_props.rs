//! Properties of the rules "always" saves, over generated hostile arguments
//! ([`super::super::hostile_text`]): the suggestion parses, goes through a policy
//! file's TOML and comes back as the same text and an equal rule; the rule saved
//! then allows the approved call, and of a set of other calls — the value with one
//! character changed, inserted or removed, with a metacharacter replaced by what it
//! would match as a wildcard, under another argument name — exactly those that are
//! the same call as the rules see it (the same path once normalized; the same URL,
//! or one at the same origin when the rule names the origin; the same program and
//! subcommand).
//!
//! 4,096 cases per property by default; `PROPTEST_CASES=100000 cargo test --release
//! -p toolhost --lib derive::props` runs a longer one.

use std::path::Path;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::super::Policy;
use super::super::edit::push_allow_rule;
use super::super::hostile_text::text;
use super::super::permissions::{Decision, Mode, Permissions};
use super::super::rules::{self, Rule, normalize};
use super::super::shell::{self, MAX_PARSED_BYTES, SUBCOMMANDS, file_name};
use crate::test_support::proptest_config as config;

const WORK: &str = "/w";

fn fail(e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

/// Default mode, a work dir, no rules, no safe list.
fn permissions(allow: Vec<Rule>) -> Permissions {
    let mut p = Permissions::new(Mode::Default).with_work_dir(Some(WORK.into()));
    p.safe_commands = false;
    p.allow = allow;
    p
}

/// The rule "always" suggests for `tool` with `args` (`None`: the call is not
/// asked about), as text.
fn suggestion(tool: &str, args: &Value) -> Option<String> {
    match permissions(vec![]).decide(tool, false, args) {
        Decision::Ask { suggested_rule, .. } => Some(suggested_rule),
        _ => None,
    }
}

/// `suggested` saved: parsed, written into a policy file as "always" writes it,
/// read back. The text and the rule come back unchanged.
fn saved(suggested: &str) -> Result<Rule, TestCaseError> {
    let rule = Rule::parse(suggested).map_err(fail)?;
    let mut doc = toml_edit::DocumentMut::new();
    push_allow_rule(&mut doc, suggested).map_err(fail)?;
    let file = doc.to_string();
    let mut policy =
        Policy::parse(&file, Path::new("/p/toolhost.toml")).map_err(|e| fail(format!("{e}\n{file}")))?;
    prop_assert_eq!(policy.allow.len(), 1);
    prop_assert_eq!(policy.allow[0].as_str(), suggested);
    prop_assert_eq!(&policy.allow[0], &rule);
    Ok(policy.allow.remove(0))
}

/// The arguments `{key: value}`.
fn one(key: &str, value: &str) -> Value {
    Value::Object([(key.to_string(), Value::from(value))].into_iter().collect())
}

fn allows(rule: &Rule, tool: &str, args: &Value) -> bool {
    matches!(permissions(vec![rule.clone()]).decide(tool, false, args), Decision::Allow(_))
}

/// Values other than `value`: one character changed to `with`, `with` inserted,
/// one character removed; each of the first metacharacters replaced by nothing,
/// by another character or two (what `*` or `?` would match), a class or an
/// alternative by its first member; and wildcards whole.
fn variants(value: &str, at: usize, with: &str) -> Vec<String> {
    let chars: Vec<(usize, char)> = value.char_indices().collect();
    let mut out = vec!["*".to_string(), "**".into(), "?".into(), "x".into(), format!("{value}x")];
    out.push(format!("x{value}"));
    if let Some(&(i, c)) = chars.get(at % chars.len().max(1)) {
        let end = i + c.len_utf8();
        out.push(format!("{}{with}{}", &value[..i], &value[end..]));
        out.push(format!("{}{with}{}", &value[..i], &value[i..]));
        out.push(format!("{}{}", &value[..i], &value[end..]));
    }
    for &(i, c) in chars.iter().filter(|(_, c)| "*?[]{},\\ ".contains(*c)).take(6) {
        let (head, tail) = (&value[..i], &value[i + c.len_utf8()..]);
        for instead in ["", "x", "xy", "/"] {
            out.push(format!("{head}{instead}{tail}"));
        }
        let close = match c {
            '[' => Some(']'),
            '{' => Some('}'),
            _ => None,
        };
        if let Some(close) = close
            && let Some(len) = tail.find(close)
        {
            let first = tail[..len].chars().next().map(String::from).unwrap_or_default();
            out.push(format!("{head}{first}{}", &tail[len + 1..]));
        }
    }
    out.retain(|v| v != value);
    out
}

/// The origin a URL rule names: the URL's `scheme://host[:port]/`, when `raw` is
/// written starting with it.
fn origin(raw: &str) -> Option<String> {
    let url = url::Url::parse(raw).ok()?;
    let host = url.host_str()?;
    let origin = match url.port() {
        Some(port) => format!("{}://{host}:{port}/", url.scheme()),
        None => format!("{}://{host}/", url.scheme()),
    };
    raw.starts_with(&origin).then_some(origin)
}

/// A URL: hostile text, or a URL with a hostile host and path.
fn url() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => text(20),
        2 => (
            prop::sample::select(vec!["https", "http", "HTTPS", "ftp", "x-y"]),
            prop_oneof![text(4), "[a-z]{1,8}\\.[a-z]{2,3}".boxed()],
            prop::sample::select(vec!["", ":443", ":8443", ":0"]),
            text(12),
        )
            .prop_map(|(scheme, host, port, path)| format!("{scheme}://{host}{port}/{path}")),
    ]
}

/// A command word, single-quoted: the shell reads exactly `word`.
fn quoted(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

fn line(words: &[String]) -> String {
    words.iter().map(|w| quoted(w)).collect::<Vec<_>>().join(" ")
}

/// Whether the rule for `approved` must allow `candidate` (both lists of literal
/// words): the same first `k` words, and a line a rule may judge.
fn same_command(approved: &[String], candidate: &[String], k: usize) -> bool {
    rules::allowable(&shell::parse(&line(candidate)))
        && candidate.len() >= k
        && candidate[..k] == approved[..k]
}

proptest! {
    #![proptest_config(config(4096))]

    #[test]
    fn a_path_rule_allows_that_path_and_no_other(
        value in text(40), key in prop_oneof![Just(String::new()), text(6)], at in any::<usize>(), with in text(2),
    ) {
        let key = format!("{key}path");
        let args = one(&key, &value);
        let Some(suggested) = suggestion("write_file", &args) else {
            // Outside the work dir, or protected: denied, nothing to save.
            return Ok(());
        };
        let rule = saved(&suggested)?;
        prop_assert!(allows(&rule, "write_file", &args), "{} does not allow {:?}", suggested, value);
        let work = Some(Path::new(WORK));
        let same = |other: &str| normalize(other, work) == normalize(&value, work);
        for other in variants(&value, at, &with) {
            let want = same(&other);
            let got = allows(&rule, "write_file", &one(&key, &other));
            prop_assert_eq!(got, want, "{} for {:?} (approved {:?})", suggested, other, value);
        }
        for other_key in variants(&key, at, &with) {
            let got = allows(&rule, "write_file", &one(&other_key, &value));
            prop_assert!(!got, "{} allows the argument {:?}", suggested, other_key);
        }
    }

    #[test]
    fn a_url_rule_allows_that_url_or_its_origin_and_nothing_else(
        value in url(), at in any::<usize>(), with in text(2),
    ) {
        let args = json!({ "url": value.clone() });
        let suggested = suggestion("fetch_url", &args).ok_or_else(|| fail("not asked"))?;
        if value.is_empty() {
            // No pattern is empty: no rule can name the empty URL, and none is saved.
            prop_assert!(Rule::parse(&suggested).is_err(), "{}", suggested);
            return Ok(());
        }
        let rule = saved(&suggested)?;
        prop_assert!(allows(&rule, "fetch_url", &args), "{} does not allow {:?}", suggested, value);
        let origin = origin(&value);
        let mut others = variants(&value, at, &with);
        others.extend(origin.iter().map(|o| format!("{o}elsewhere")));
        others.push("https://evil.example/".into());
        for other in others {
            let want = other == value || origin.as_ref().is_some_and(|o| other.starts_with(o.as_str()));
            let got = allows(&rule, "fetch_url", &json!({ "url": other.clone() }));
            prop_assert_eq!(got, want, "{} for {:?} (approved {:?})", suggested, other, value);
        }
    }

    #[test]
    fn a_command_rule_allows_that_program_and_subcommand_and_no_other(
        program in prop_oneof![1 => Just("git".to_string()), 1 => Just("cargo".to_string()), 4 => text(8)],
        rest in prop::collection::vec(text(6), 0..3),
        which in any::<usize>(), at in any::<usize>(), with in text(2),
    ) {
        let mut words = vec![program];
        words.extend(rest);
        let subcommand = words.len() > 1
            && SUBCOMMANDS.contains(&file_name(&words[0]))
            && !words[1].starts_with('-');
        let k = if subcommand { 2 } else { 1 };
        let args = json!({ "command": line(&words) });
        let suggested = suggestion("terminal", &args).ok_or_else(|| fail("not asked"))?;
        let rule = match Rule::parse(&suggested) {
            Ok(_) => saved(&suggested)?,
            Err(e) => {
                // Only a line no rule could allow, or a word past the parser's bound,
                // makes a rule that does not parse (and "always" saves nothing).
                prop_assert!(
                    !rules::allowable(&shell::parse(&line(&words))) || suggested.len() > MAX_PARSED_BYTES,
                    "{}: {}", suggested, e
                );
                return Ok(());
            }
        };
        prop_assert_eq!(
            allows(&rule, "terminal", &args),
            same_command(&words, &words, k),
            "{} for {:?}", suggested, words
        );
        let i = which % k;
        let mut others: Vec<Vec<String>> = variants(&words[i], at, &with)
            .into_iter()
            .map(|v| {
                let mut other = words.clone();
                other[i] = v;
                other
            })
            .collect();
        others.push(words[..k - 1].to_vec());
        others.push([&words[..], &["x".to_string()]].concat());
        others.push(vec!["*".into()]);
        for other in others {
            let got = allows(&rule, "terminal", &json!({ "command": line(&other) }));
            prop_assert_eq!(got, same_command(&words, &other, k), "{} for {:?} (approved {:?})", suggested, other, words);
        }
    }
}
