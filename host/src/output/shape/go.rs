//! Go: go test (`-v` or not), go build and go vet. Folded: `=== RUN/PAUSE/CONT`,
//! passing and skipped tests, packages without tests, `go: downloading`.
//! Kept: `file_test.go:N:` messages, compiler diagnostics, goroutine headers
//! and stack frames, and `ok`/`PASS` summaries.

use super::Class;

pub(super) fn classify(line: &str) -> Option<Class> {
    let t = line.trim_start();
    if ["=== RUN ", "=== PAUSE ", "=== CONT ", "=== NAME "].iter().any(|p| line.starts_with(p)) {
        return Some(Class::Noise("test progress lines"));
    }
    if t.starts_with("--- PASS: ") {
        return Some(Class::Noise("passing tests"));
    }
    if t.starts_with("--- SKIP: ") || (line.starts_with('?') && line.ends_with("[no test files]")) {
        return Some(Class::Noise("skipped tests"));
    }
    if line.starts_with("go: downloading ") || line.starts_with("go: finding ") {
        return Some(Class::Noise("download lines"));
    }
    if line == "PASS" || line.starts_with("ok ") || line.starts_with("ok\t") {
        return Some(Class::Summary);
    }
    let location =
        t.split_once(".go:").is_some_and(|(_, rest)| rest.starts_with(|c: char| c.is_ascii_digit()));
    if location || line.starts_with("goroutine ") || line.starts_with("created by ") {
        return Some(Class::Alarm);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_test_lines() {
        assert_eq!(classify("=== RUN   TestAdd/case_0"), Some(Class::Noise("test progress lines")));
        assert_eq!(classify("    --- PASS: TestAdd/case_0 (0.00s)"), Some(Class::Noise("passing tests")));
        assert_eq!(classify("    calc_test.go:21: Add(2, 2) = 4, want 5"), Some(Class::Alarm));
        assert_eq!(classify("\t/usr/lib/go/src/testing/testing.go:1396 +0x24e"), Some(Class::Alarm));
        assert_eq!(classify("./main.go:5:2: undefined: x"), Some(Class::Alarm));
        assert_eq!(classify("ok  \texample.com/x\t0.01s"), Some(Class::Summary));
        assert_eq!(classify("# example.com/x"), None);
    }
}
