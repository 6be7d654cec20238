//! Properties of policy-file parsing over generated files: parsing never panics on
//! any text, nor on a good file cut, spliced or salted with syntax; every error is
//! `Invalid`, names the file and a line that exists; one fault put into a good file
//! is reported on its line, naming what is wrong; a good file gives back what it
//! says (mode, rules, protected paths, plugins).
//!
//! 4,096 cases per property by default; `PROPTEST_CASES=100000 cargo test --release
//! -p toolhost --lib file::props` runs a longer one.

use std::path::Path;

use proptest::prelude::*;

use crate::test_support::proptest_config as config;

use crate::policy::rules::props::{Parts, fault, parts, soup};
use crate::policy::{EntrySource, Mode, Policy, PolicyError, Rule};

const PATH: &str = "/p/toolhost.toml";

/// A TOML basic string holding `text`.
fn quoted(text: &str) -> String {
    toml_edit::Value::from(text).to_string().trim().to_string()
}

/// A good policy file, line by line, and where its parts are.
#[derive(Debug, Clone)]
struct Good {
    lines: Vec<String>,
    mode: Mode,
    allow: Vec<String>,
    /// The allow rules' parts, to put a fault into.
    allow_parts: Vec<Parts>,
    deny: Vec<String>,
    plugin: String,
    sha256: String,
    /// Line indexes of the parts a fault goes into.
    at: Places,
}

#[derive(Debug, Clone, Default)]
struct Places {
    mode: usize,
    safe: usize,
    allow: Vec<usize>,
    protected: usize,
    header: usize,
    sha256: usize,
    filesystem: usize,
    network: usize,
    env: usize,
    limits: usize,
    max_children: usize,
    matcher: usize,
}

impl Good {
    fn text(&self) -> String {
        self.lines.join("\n") + "\n"
    }
}

fn good() -> impl Strategy<Value = Good> {
    (
        prop::sample::select(vec![Mode::Default, Mode::Plan, Mode::AcceptEdits, Mode::Yolo]),
        prop::collection::vec(parts(), 0..4),
        prop::collection::vec(parts(), 0..3),
        "[a-z][a-z0-9_-]{0,8}",
        "[0-9a-fA-F]{64}",
        prop::sample::select(vec!["none", "read", "read-write"]),
        prop::sample::select(vec!["docs.rs", "*.github.com", "example.org", "[::1]"]),
        1u32..100_000,
        parts(),
    )
        .prop_map(|(mode, allow_parts, deny, plugin, sha256, fs, host, memory, hook)| {
            let allow: Vec<String> = allow_parts.iter().map(|p| p.print()).collect();
            let deny: Vec<String> = deny.iter().map(|p| p.print()).collect();
            let mut at = Places::default();
            let mut lines = vec!["# a policy".to_string(), "[permissions]".to_string()];
            let mut push = |line: String| {
                lines.push(line);
                lines.len() - 1
            };
            at.mode = push(format!("mode = \"{}\"", mode.as_str()));
            at.safe = push("safe-commands = true".into());
            push("allow = [".into());
            for rule in &allow {
                at.allow.push(push(format!("  {},", quoted(rule))));
            }
            push("]".into());
            let deny_list: Vec<String> = deny.iter().map(|r| quoted(r)).collect();
            push(format!("deny = [{}]", deny_list.join(", ")));
            at.protected = push("protected = [\"secrets/**\", \"*.key\"]".into());
            push(String::new());
            at.header = push(format!("[plugins.{plugin}]"));
            push("source = \"tools/x.wasm\"".into());
            at.sha256 = push(format!("sha256 = \"{sha256}\""));
            at.filesystem = push(format!("filesystem = \"{fs}\""));
            at.network = push(format!("network = [{}]", quoted(host)));
            at.env = push("env = [\"LANG\", \"LC_*\"]".into());
            at.limits = push(format!("limits = {{ memory-mib = {}, timeout-ms = 5000 }}", memory % 4096 + 1));
            push("exec = { programs = [\"git\"] }".into());
            push(String::new());
            push("[exec]".into());
            at.max_children = push("max-children = 4".into());
            push(String::new());
            push("[[hooks]]".into());
            push("event = \"pre-tool-use\"".into());
            at.matcher = push(format!("matcher = {}", quoted(&hook.print())));
            push("command = [\"jq\"]".into());
            Good { lines, mode, allow, allow_parts, deny, plugin, sha256, at }
        })
}

/// Put fault `which` into `good`: the file, the (0-based) line it is on, and what
/// the error must say.
fn faulty(good: &Good, which: usize, pick: usize) -> (String, usize, String) {
    let mut lines = good.lines.clone();
    let at = &good.at;
    let mut put = |line: usize, text: String, needle: &str| {
        lines[line] = text;
        (lines.join("\n") + "\n", line, needle.to_string())
    };
    match which {
        0 => put(at.mode, "mode = \"sometimes\"".into(), "unknown variant `sometimes`"),
        1 => put(at.safe, "safe-comands = true".into(), "unknown field `safe-comands`"),
        2 if !at.allow.is_empty() => {
            let line = at.allow[pick % at.allow.len()];
            let (rule, needle) = fault(&good.allow_parts[pick % at.allow.len()], pick % 7, pick);
            put(line, format!("  {},", quoted(&rule)), &needle)
        }
        3 => put(at.protected, "protected = [\"a/[b\"]".into(), "protected path `a/[b`"),
        4 => put(at.header, "[plugins.\"a b\"]".into(), "plugin name \"a b\""),
        5 => put(at.sha256, format!("sha256 = \"{}\"", &good.sha256[1..]), "is not 64 hex digits"),
        6 => put(at.filesystem, "filesystem = \"write\"".into(), "unknown variant `write`"),
        7 => put(at.network, "network = [\"https://docs.rs/\"]".into(), "invalid host pattern"),
        8 => put(at.env, "env = [\"LANG\", \"A=B\"]".into(), "`A=B` is not an environment variable name"),
        9 => put(at.limits, "limits = { memry-mib = 64 }".into(), "unknown key `memry-mib`"),
        10 => put(at.limits, "limits = { fuel = \"lots\" }".into(), "expected a whole number, found string"),
        11 => put(at.limits, "limits = { memory-mib = 0 }".into(), "too small"),
        12 => put(at.max_children, "max-children = \"four\"".into(), "invalid type"),
        13 => put(at.matcher, "matcher = \"(x)\"".into(), "hooks.matcher: rule `(x)`"),
        _ => put(at.mode, "mode = = \"plan\"".into(), ""),
    }
}

/// A good file's text changed by `edits`: a range cut, a token put in, a line
/// doubled or two lines swapped.
fn mutate(text: &str, edits: &[(usize, usize, usize, String)]) -> String {
    let mut text = text.to_string();
    for (kind, a, b, token) in edits {
        let at = |n: usize, text: &str| {
            let mut i = n % (text.len() + 1);
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            i
        };
        match kind % 4 {
            0 => {
                let (x, y) = (at(*a, &text), at(*b, &text));
                let (from, mut to) = (x.min(y), x.max(y).min(x.min(y) + 40));
                while !text.is_char_boundary(to) {
                    to -= 1;
                }
                text.replace_range(from..to, "");
            }
            1 => {
                let x = at(*a, &text);
                text.insert_str(x, token);
            }
            2 => {
                let mut lines: Vec<&str> = text.lines().collect();
                if !lines.is_empty() {
                    let i = a % lines.len();
                    lines.insert(i, lines[i]);
                }
                text = lines.join("\n");
            }
            _ => {
                let mut lines: Vec<&str> = text.lines().collect();
                if !lines.is_empty() {
                    let (i, j) = (a % lines.len(), b % lines.len());
                    lines.swap(i, j);
                }
                text = lines.join("\n");
            }
        }
    }
    text
}

/// Every error names the file and a line of it.
fn check_error(text: &str, err: &PolicyError) -> Result<(), TestCaseError> {
    let PolicyError::Invalid { path, line, message } = err else {
        return Err(TestCaseError::fail(format!("not an Invalid error: {err}")));
    };
    prop_assert_eq!(path, PATH);
    prop_assert!(*line >= 1 && *line <= text.lines().count() + 1, "line {} of {:?}", line, text);
    prop_assert!(!message.is_empty());
    Ok(())
}

fn edit() -> impl Strategy<Value = (usize, usize, usize, String)> {
    let token = prop_oneof![
        3 => prop::sample::select(vec![
            "[", "]", "[[", "]]", "=", "\"", "'", "\"\"\"", "{", "}", ",", "\n", "#", ".", "-", "\\", "\\u",
            "[permissions]", "[plugins.x]", "allow = [", "mode = ", "1_000", "inf", "true", "0x1F",
            "1979-05-27", "\u{0}", "\u{feff}", "é",
        ])
        .prop_map(String::from),
        1 => soup(),
    ];
    (0usize..4, any::<usize>(), any::<usize>(), token)
}

proptest! {
    #![proptest_config(config(4096))]

    #[test]
    fn parsing_any_text_never_panics(text in prop_oneof![soup(), ".{0,200}"]) {
        if let Err(err) = Policy::parse(&text, Path::new(PATH)) {
            check_error(&text, &err)?;
        }
    }

    #[test]
    fn a_damaged_file_never_panics_and_its_error_names_a_line(
        good in good(),
        edits in prop::collection::vec(edit(), 1..5),
    ) {
        let text = mutate(&good.text(), &edits);
        if let Err(err) = Policy::parse(&text, Path::new(PATH)) {
            check_error(&text, &err)?;
        }
    }

    #[test]
    fn a_good_file_says_what_it_was_written_with(good in good()) {
        let text = good.text();
        let policy = Policy::parse(&text, Path::new(PATH)).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(policy.mode, good.mode);
        let rules = |list: &[String]| list.iter().map(|r| Rule::parse(r).unwrap()).collect::<Vec<_>>();
        prop_assert_eq!(&policy.allow, &rules(&good.allow));
        prop_assert_eq!(&policy.deny, &rules(&good.deny));
        prop_assert_eq!(&policy.protected, &vec!["secrets/**".to_string(), "*.key".to_string()]);
        prop_assert_eq!(policy.plugins.len(), 1);
        prop_assert_eq!(&policy.plugins[0].name, &good.plugin);
        prop_assert_eq!(&policy.plugins[0].sha256, &good.sha256.to_ascii_lowercase());
        prop_assert_eq!(&policy.plugins[0].source, &EntrySource::File(Path::new("/p/tools/x.wasm").to_path_buf()));
        prop_assert_eq!(policy.hooks.len(), 1);
    }

    #[test]
    fn one_fault_in_a_file_is_reported_on_its_line(good in good(), which in 0usize..15, pick in 0usize..64) {
        let (text, line, needle) = faulty(&good, which, pick);
        let err = Policy::parse(&text, Path::new(PATH)).err();
        prop_assert!(err.is_some(), "no error for fault {} in\n{}", which, text);
        let err = err.unwrap_or_else(|| unreachable!());
        check_error(&text, &err)?;
        let PolicyError::Invalid { line: said, message, .. } = &err else { unreachable!() };
        prop_assert_eq!(*said, line + 1, "fault {}: {}\n{}", which, message, text);
        prop_assert!(message.contains(&needle), "fault {}: {:?} should say {:?}", which, message, needle);
    }
}
