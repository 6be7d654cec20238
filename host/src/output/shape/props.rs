//! Properties of shaping over generated logs that interleave noise (passing
//! tests, build steps, progress, npm and go test chatter, plain lines, repeats)
//! with failure lines, under every command hint and budgets small enough to
//! fold plain lines too:
//!
//! - every line a separate, simple failure matcher finds is a whole line of the
//!   model's copy (as a terminal shows it);
//! - every stored line is either shown or inside exactly one marker's window,
//!   and each marker's `offset`/`limit` is that window;
//! - an output recognised as a diff or a file is untouched.
//!
//! 1,024 cases per property by default; `PROPTEST_CASES=100000 cargo test
//! --release -p toolhost --lib output::shape::props` runs a longer one.

use std::collections::HashSet;

use proptest::prelude::*;
use regex::Regex;

use super::{Request, Shape, shape};
use crate::output::Part;

/// The failure matcher: not the shaper's own, a plain list of what a failure,
/// error or panic line looks like (shared with the corpus test).
fn failure_matcher() -> Vec<Regex> {
    include_str!("../../../../tests/fixtures/shape/failure-patterns")
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|p| Regex::new(p).expect("a failure pattern"))
        .collect()
}

fn noise() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_]{1,12}".prop_map(|t| format!("test tests::{t} ... ok")),
        "[a-z]{1,8}".prop_map(|c| format!("   Compiling {c} v1.0.{}", c.len())),
        "[a-z_]{1,12}".prop_map(|t| format!("tests/test_x.py::{t} PASSED                [ 40%]")),
        "[a-z]{1,10}".prop_map(|p| format!("npm http fetch GET 200 https://registry.npmjs.org/{p} 12ms")),
        "[A-Za-z]{1,10}".prop_map(|t| format!("=== RUN   Test{t}")),
        "[A-Za-z]{1,10}".prop_map(|t| format!("    --- PASS: Test{t} (0.00s)")),
        (0u32..100).prop_map(|p| format!("[=====>     ] {p}%")),
        (0u32..100).prop_map(|p| format!("{p}%\r{}%\rdone", p + 1)),
        "[a-z ]{0,30}",
        Just(String::new()),
        Just("same line again".to_string()),
    ]
}

fn failure() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,20}".prop_map(|m| format!("error: {m}")),
        "[a-z ]{0,20}".prop_map(|m| format!("error[E0308]: {m}")),
        "[a-z_]{1,12}".prop_map(|t| format!("test tests::{t} ... FAILED")),
        "[a-z_]{1,12}".prop_map(|t| format!("thread '{t}' panicked at src/lib.rs:3:5:")),
        "[a-z ]{0,20}".prop_map(|m| format!("E       assert {m}")),
        Just("Traceback (most recent call last):".to_string()),
        "[a-z ]{0,20}".prop_map(|m| format!("ValueError: {m}")),
        "[A-Za-z]{1,10}".prop_map(|t| format!("--- FAIL: Test{t} (0.00s)")),
        "[a-z ]{0,20}".prop_map(|m| format!("warning: unused {m}")),
        "[a-z ]{0,20}".prop_map(|m| format!("\x1b[31mfatal\x1b[0m: {m}")),
        "[a-z ]{0,20}".prop_map(|m| format!("main.c:3:5: error: {m}")),
        (0u32..100).prop_map(|p| format!("Error: disk full\r{p}%")),
    ]
}

/// A log: runs of noise with failures among them, and the lines repeated now and then.
fn log() -> impl Strategy<Value = (Vec<String>, bool)> {
    let line = prop_oneof![6 => noise(), 1 => failure()];
    (prop::collection::vec((line, 1usize..4), 0..400), any::<bool>()).prop_map(|(lines, end)| {
        let lines = lines.into_iter().flat_map(|(l, n)| std::iter::repeat_n(l, n)).collect();
        (lines, end)
    })
}

fn command() -> impl Strategy<Value = Option<&'static str>> {
    prop::sample::select(vec![
        None,
        Some("cargo test"),
        Some("pytest -v"),
        Some("npm install"),
        Some("go test ./..."),
        Some("make"),
        Some("docker build ."),
        Some("./script.sh"),
        Some("rg error"),
    ])
}

/// The states of `raw` as a terminal draws them, in the matcher's own simple
/// reading: no colour sequences, split at carriage returns.
fn states(raw: &str) -> Vec<String> {
    let plain = Regex::new("\x1b\\[[0-9;]*[A-Za-z]").expect("ansi").replace_all(raw, "").into_owned();
    plain.split('\r').filter(|s| !s.trim().is_empty()).map(str::to_string).collect()
}

proptest! {
    #![proptest_config(crate::test_support::proptest_config(1024))]

    #[test]
    fn no_failure_line_is_dropped_and_markers_cover_the_rest(
        (lines, end) in log(),
        command in command(),
        budget in prop_oneof![200usize..3000, Just(30_000usize)],
    ) {
        let mut text = lines.join("\n");
        if end && !text.is_empty() {
            text.push('\n');
        }
        let request = Request { command, call_id: "c\"1", part: Part::Error, budget };
        let shaped = match shape(&text, &request) {
            Shape::Shaped(shaped) => shaped,
            _ => return Ok(()),
        };
        let copy: HashSet<&str> = shaped.text.lines().collect();
        let matcher = failure_matcher();
        for raw in text.lines() {
            let states = states(raw);
            for state in states.iter().filter(|s| matcher.iter().any(|re| re.is_match(s))) {
                // A redrawn line is shown with all its states when one is a failure.
                let kept = match states.len() {
                    1 => copy.contains(state.as_str()),
                    _ => shaped.text.lines().any(|l| l.contains(state.as_str())),
                };
                prop_assert!(kept, "lost {state:?} from\n{}", shaped.text);
            }
        }
        // Each stored line is shown or in one marker's window, which names it exactly.
        let marker = Regex::new(
            r#"\(lines (\d+)-(\d+)\); call read_output with \{"call_id": "c\\"1", "part": "error", "offset": (\d+), "limit": (\d+)\}"#,
        ).expect("marker");
        let total = text.lines().count();
        let mut seen = vec![0u8; total + 1];
        prop_assert_eq!(shaped.lines.len(), shaped.text.lines().count());
        let mut folded = 0;
        for (line, &stored) in shaped.text.lines().zip(&shaped.lines) {
            if let Some(m) = marker.captures(line) {
                let n = |i: usize| m[i].parse::<usize>().expect("a number");
                let (first, last, offset, limit) = (n(1), n(2), n(3), n(4));
                prop_assert_eq!((offset, stored), (first, first));
                prop_assert_eq!(limit, (last - first + 1).min(2000));
                for s in &mut seen[first..=last] {
                    *s += 1;
                }
                folded += last - first + 1;
            } else {
                seen[stored] += 1;
            }
        }
        prop_assert!(seen[1..].iter().all(|&s| s == 1), "coverage {:?}", seen);
        prop_assert_eq!(folded, shaped.folded_lines);
    }

    #[test]
    fn diffs_and_files_are_untouched(lines in prop::collection::vec(noise(), 12..100), file in any::<bool>()) {
        let mut text = lines.join("\n");
        let command = if file { Some("cat build.log") } else { None };
        if !file {
            text = format!("diff --git a/x b/x\n@@ -1,2 +1,2 @@\n{text}");
        }
        let request = Request { command, call_id: "c", part: Part::Content, budget: 100 };
        prop_assert!(!matches!(shape(&text, &request), Shape::Shaped(_)), "a diff or a file was shaped");
    }
}
