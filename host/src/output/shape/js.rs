//! JavaScript: npm, pnpm and yarn installs, jest, vitest and tsc. Folded:
//! npm's request and timing log lines, spinners, pnpm's progress, passing
//! suites and tests. Kept: stack frames (`at f (file.js:1:2)`), jest's `●`
//! failure headings, vitest's `❯` locations, and the summaries.

use super::Class;

/// npm's log levels below `notice`, as their lines start.
const NPM_LOG: [&str; 6] =
    ["npm http ", "npm sill ", "npm verb ", "npm timing ", "npm info ", "npm verbose "];

pub(super) fn classify(line: &str) -> Option<Class> {
    let t = line.trim_start();
    if NPM_LOG.iter().any(|p| line.starts_with(p)) {
        return Some(Class::Noise("npm log lines"));
    }
    if line.starts_with("Progress: resolved ")
        || t.starts_with(['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'])
    {
        return Some(Class::Noise("progress lines"));
    }
    if line.starts_with("PASS ") {
        return Some(Class::Noise("passing suites"));
    }
    if t.starts_with("✓ ") || t.starts_with("√ ") || t.starts_with("✔ ") {
        return Some(Class::Noise("passing tests"));
    }
    if (t.starts_with("at ") && t.contains(':'))
        || t.starts_with("● ")
        || t.starts_with("❯ ")
        || t.starts_with("→ ")
    {
        return Some(Class::Alarm);
    }
    let summary = [
        "Tests:",
        "Test Suites:",
        "Snapshots:",
        "Time:",
        "Test Files ",
        "Tests ",
        "Duration ",
        "Packages: +",
    ]
    .iter()
    .any(|p| t.starts_with(p))
        || ["added ", "removed ", "changed ", "audited ", "up to date", "found "]
            .iter()
            .any(|p| line.starts_with(p))
        || line.starts_with("Done in ");
    summary.then_some(Class::Summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npm_jest_and_vitest_lines() {
        let fetch = "npm http fetch GET 200 https://registry.npmjs.org/express 53ms (cache miss)";
        assert_eq!(classify(fetch), Some(Class::Noise("npm log lines")));
        assert_eq!(classify("PASS src/a.test.js"), Some(Class::Noise("passing suites")));
        assert_eq!(classify("    ✓ adds (3 ms)"), Some(Class::Noise("passing tests")));
        assert_eq!(classify("      at Object.<anonymous> (src/a.test.js:5:13)"), Some(Class::Alarm));
        assert_eq!(classify("added 125 packages in 3s"), Some(Class::Summary));
        assert_eq!(classify("Tests:       1 failed, 40 passed, 41 total"), Some(Class::Summary));
        assert_eq!(classify("      Test Files  1 failed | 2 passed (3)"), Some(Class::Summary));
        assert_eq!(classify("    expect(received).toBe(expected)"), None);
    }
}
