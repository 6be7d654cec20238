//! Rust: cargo build/test/clippy and rustc, human output. Folded: cargo's
//! status lines (`Compiling`, `Downloaded`, …) and passing or ignored tests.
//! Kept: panics' backtrace frames, `test result:` and the runner's headings.

use super::Class;

/// Cargo's right-aligned status words that only report progress.
const STATUS: [&str; 18] = [
    "Compiling",
    "Checking",
    "Downloaded",
    "Downloading",
    "Fresh",
    "Updating",
    "Locking",
    "Adding",
    "Blocking",
    "Documenting",
    "Packaging",
    "Verifying",
    "Archiving",
    "Installing",
    "Unpacking",
    "Packaged",
    "Removing",
    "Replacing",
];

pub(super) fn classify(line: &str) -> Option<Class> {
    let t = line.trim_start();
    if let Some(test) = line.strip_prefix("test ") {
        if test.ends_with(" ... ok") || test.ends_with(" ... ignored") || test.contains(" ... ignored, ") {
            return Some(Class::Noise("passing tests"));
        }
        if test.starts_with("result: ") {
            return Some(Class::Summary);
        }
    }
    let word = t.split_whitespace().next().unwrap_or("");
    if line.starts_with(' ') && STATUS.contains(&word) {
        return Some(Class::Noise("build steps"));
    }
    if word == "Finished" || word == "Running" || word == "Doc-tests" || t.starts_with("running ") {
        return Some(Class::Summary);
    }
    // A backtrace frame (`  3: path::to::fn`) and its location (`at src/x.rs:1:2`).
    let frame =
        t.split_once(": ").is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if frame || (t.starts_with("at ") && t.contains(".rs:")) {
        return Some(Class::Alarm);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_lines() {
        assert_eq!(classify("test tests::adds_1 ... ok"), Some(Class::Noise("passing tests")));
        assert_eq!(classify("   Compiling serde v1.0.0"), Some(Class::Noise("build steps")));
        assert_eq!(classify("test result: ok. 3 passed; 0 failed"), Some(Class::Summary));
        assert_eq!(classify("   4: shapecorpus::tests::adds_wrongly"), Some(Class::Alarm));
        assert_eq!(classify("             at ./src/lib.rs:406:33"), Some(Class::Alarm));
        assert_eq!(classify("    tests::adds_wrongly"), None);
    }
}
