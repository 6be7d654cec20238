//! `bench shape`: output shaping over the corpus (`tests/fixtures/shape/`, made
//! by `scripts/shape-corpus`): tokens before and after per fixture, and what
//! shaping and counting cost per megabyte of output, with the tokenizer's
//! one-time load.

use std::time::{Duration, Instant};

use toolhost::Part;
use toolhost::shape::{Request, Shape, count_tokens, shape};

use super::report;
use toolhost_tests::workspace_root;

/// The corpus: name, command, text.
fn corpus() -> Vec<(String, String, String)> {
    let dir = workspace_root().join("tests/fixtures/shape");
    let manifest = std::fs::read_to_string(dir.join("MANIFEST")).expect("the MANIFEST");
    manifest
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.splitn(3, '\t').collect();
            let text = std::fs::read_to_string(dir.join(format!("{}.txt", fields[0]))).expect("a fixture");
            (fields[0].to_string(), fields[2].to_string(), text)
        })
        .collect()
}

fn request(command: &str) -> Request<'_> {
    Request { command: Some(command), call_id: "call-1", part: Part::Content, budget: 30_000 }
}

/// The model's copy of `text` (the text itself when it is left whole).
fn copy(text: &str, command: &str) -> String {
    match shape(text, &request(command)) {
        Shape::Shaped(shaped) => shaped.text,
        _ => text.to_string(),
    }
}

pub(super) fn shape_bench() {
    let started = Instant::now();
    count_tokens("load");
    println!("{:<44} {:>9.1?}", "shape: o200k_base load (first use, once)", started.elapsed());

    let corpus = corpus();
    println!("| fixture | command | bytes | tokens before | tokens after | fewer |");
    println!("|---|---|---:|---:|---:|---:|");
    let (mut before, mut after) = (0, 0);
    for (name, command, text) in &corpus {
        let (b, a) = (count_tokens(text), count_tokens(&copy(text, command)));
        println!(
            "| {name} | `{command}` | {} | {b} | {a} | {:.0} % |",
            text.len(),
            100.0 * (1.0 - a as f64 / b as f64)
        );
        if b != a {
            before += b;
            after += a;
        }
    }
    println!(
        "| logs and test runs | | | {before} | {after} | {:.0} % |",
        100.0 * (1.0 - after as f64 / before as f64)
    );

    // One megabyte of each log: the fixture repeated.
    for (name, command, text) in
        corpus.iter().filter(|(n, ..)| n.starts_with("cargo") || n.starts_with("npm"))
    {
        let big = text.repeat((1 << 20) / text.len() + 1);
        let samples = timed(20, || {
            std::hint::black_box(shape(&big, &request(command)));
        });
        report(&format!("shape: 1 MB of {name}"), samples);
        let samples = timed(5, || {
            std::hint::black_box(count_tokens(&big));
        });
        report(&format!("shape: count tokens of 1 MB of {name}"), samples);
    }
    // The share of a call: a 16 KB test log, shaped and both sides counted.
    let (_, command, text) = corpus.iter().find(|(n, ..)| n == "cargo-test").expect("cargo-test");
    let samples = timed(300, || {
        let copy = copy(text, command);
        std::hint::black_box((count_tokens(text), count_tokens(&copy)));
    });
    report("shape: cargo-test (16 KB) shaped and counted", samples);
}

fn timed(n: usize, mut f: impl FnMut()) -> Vec<Duration> {
    f();
    (0..n)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed()
        })
        .collect()
}
