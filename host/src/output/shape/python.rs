//! Python: pytest (`-v` or dots), unittest and pip. Folded: passing and
//! skipped tests, progress-dot lines without a failure, pip's collecting and
//! downloading. Kept: pytest's `>` and `E` lines and `file.py:N:` locations,
//! traceback frames, and the summaries.

use super::Class;

/// pip's lines that only report progress.
const PIP: [&str; 13] = [
    "Collecting ",
    "Downloading ",
    "Using cached ",
    "Requirement already satisfied: ",
    "Obtaining ",
    "Processing ",
    "Building wheel",
    "Created wheel",
    "Stored in directory: ",
    "Preparing metadata",
    "Getting requirements",
    "Installing build dependencies",
    "Looking in indexes: ",
];

pub(super) fn classify(line: &str) -> Option<Class> {
    let t = line.trim_start();
    let end = line.trim_end();
    // pytest -v: `path::test PASSED [ 10%]`; unittest -v: `test (mod.Class) ... ok`.
    let word = end
        .rsplit_once(" [")
        .map_or(end, |(rest, pct)| if pct.ends_with("%]") { rest.trim_end() } else { end });
    if word.ends_with(" PASSED") || word.ends_with(" XPASS") || end.ends_with(" ... ok") {
        return Some(Class::Noise("passing tests"));
    }
    if word.ends_with(" SKIPPED") || word.contains(" SKIPPED (") || end.contains(" ... skipped") {
        return Some(Class::Noise("skipped tests"));
    }
    // Progress dots: `tests/test_a.py ....s.. [ 40%]` or unittest's `....s.`.
    let dots = word.rsplit_once(' ').map_or(word, |(_, d)| d);
    if !dots.is_empty() && dots.bytes().all(|b| matches!(b, b'.' | b's' | b'x')) && dots.contains('.') {
        return Some(Class::Noise("progress lines"));
    }
    if dots.bytes().all(|b| matches!(b, b'.' | b's' | b'x' | b'F' | b'E')) && dots.contains(['F', 'E']) {
        return Some(Class::Alarm);
    }
    if PIP.iter().any(|p| t.starts_with(p)) {
        return Some(Class::Noise("pip progress lines"));
    }
    if line.starts_with("E ")
        || line.starts_with("> ")
        || line == ">"
        || location(line)
        || t.starts_with("File \"")
    {
        return Some(Class::Alarm);
    }
    let summary = (line.starts_with('=')
        && (line.contains(" passed") || line.contains(" failed") || line.contains(" in ")))
        || line.starts_with("Ran ")
        || line == "OK"
        || line.starts_with("OK (")
        || line.starts_with("Successfully installed ")
        || line.contains("short test summary info");
    summary.then_some(Class::Summary)
}

/// `path.py:12: Something` (a pytest failure's location).
fn location(line: &str) -> bool {
    line.split_once(".py:").is_some_and(|(_, rest)| {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && rest[digits..].starts_with(':')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytest_unittest_and_pip_lines() {
        let passed = "tests/test_calc.py::test_add[0] PASSED                                   [  0%]";
        assert_eq!(classify(passed), Some(Class::Noise("passing tests")));
        assert_eq!(classify("test_x (mod.T.test_x) ... ok"), Some(Class::Noise("passing tests")));
        assert_eq!(classify("tests/test_a.py ......s.. [ 40%]"), Some(Class::Noise("progress lines")));
        assert_eq!(classify("tests/test_a.py ...F.. [ 40%]"), Some(Class::Alarm));
        assert_eq!(classify(">       assert add(2, 2) == 5"), Some(Class::Alarm));
        assert_eq!(classify("tests/test_calc.py:16: "), Some(Class::Alarm));
        assert_eq!(classify("  File \"x.py\", line 3, in f"), Some(Class::Alarm));
        assert_eq!(classify("Collecting requests"), Some(Class::Noise("pip progress lines")));
        assert_eq!(classify("======= 3 failed, 300 passed in 0.15s ======="), Some(Class::Summary));
        assert_eq!(classify("Ran 12 tests in 0.003s"), Some(Class::Summary));
        assert_eq!(classify("    def test_x():"), None);
    }
}
