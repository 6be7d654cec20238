//! Any log: progress bars and percentages, download and unpack lines. Every
//! format falls back on these after its own.

use super::Class;

/// Characters progress bars are drawn with.
const BAR: [char; 10] = ['█', '▉', '▊', '▋', '▌', '▍', '▎', '▏', '━', '░'];

pub(super) fn classify(line: &str) -> Option<Class> {
    if progress(line) {
        return Some(Class::Noise("progress lines"));
    }
    let t = line.trim_start();
    let steps = [
        "Downloading ",
        "Downloaded ",
        "Fetching ",
        "Fetched ",
        "Unpacking ",
        "Selecting previously",
        "Preparing to unpack",
        "Setting up ",
        "Get:",
        "Hit:",
    ];
    steps.iter().any(|s| t.starts_with(s)).then_some(Class::Noise("progress lines"))
}

/// Whether `line` draws a progress bar or reports only a percentage.
pub(super) fn progress(line: &str) -> bool {
    let t = line.trim();
    if t.chars().filter(|c| BAR.contains(c)).count() >= 4 {
        return true;
    }
    if let Some(open) = t.find('[')
        && let Some(len) = t[open..].find(']')
    {
        let inside = &t[open + 1..open + len];
        if inside.len() >= 5
            && inside.chars().all(|c| matches!(c, '=' | '>' | '#' | '-' | ' ' | '.'))
            && inside.contains(['=', '#'])
        {
            return true;
        }
    }
    // `  45%`, `45.2% 3.1MB/s`: a line that starts with a percentage.
    let digits = t.bytes().take_while(|b| b.is_ascii_digit() || *b == b'.').count();
    digits > 0 && t[digits..].starts_with('%') && t.len() < 120
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_bars_and_steps() {
        assert!(progress("   ━━━━━━━━━━━━━━━━━━━━ 1.2/1.2 MB 3.0 MB/s eta 0:00:00"));
        assert!(progress("[=====>      ] 45%"));
        assert!(progress(" 45.2% 3.1MB/s"));
        assert!(!progress("[ERROR] failed"));
        assert!(!progress("note: 45 things"));
        assert_eq!(
            classify("Get:1 http://deb.debian.org bookworm InRelease"),
            Some(Class::Noise("progress lines"))
        );
    }
}
