//! Freshness: the hashes a model passes back so that a change never clobbers
//! what it has not seen, and a re-read does not repeat what it has.
//!
//! The host keeps no per-session memory (a request may reach any host
//! instance), so freshness travels as the file's sha256: `read_file` shows it
//! in its first line and `metadata.sha256`; `edit_file`, `write_file` and
//! `move_file` take it back as `expected_sha256`, and refuse with
//! `stale_file` (the current hash, a short summary, nothing written) when the
//! file changed since. With the policy's `require-fresh = true` the hash is
//! mandatory for every change to an existing file.
//!
//! The policy reaches this component as environment variables the host sets
//! for `builtin:fs` alone ([`Settings::from_env`]); the model cannot set them.

use similar::TextDiff;
use toolhost_guest::{ToolError, codes};

/// Set to `1` by the host when the policy says `require-fresh = true`.
pub const REQUIRE_FRESH_VAR: &str = "TOOLHOST_FS_REQUIRE_FRESH";
/// Set to `1` by the host when the policy says `follow-links = true`.
pub const FOLLOW_LINKS_VAR: &str = "TOOLHOST_FS_FOLLOW_LINKS";

/// Files up to this size get a line summary in a `stale_file` message.
const SUMMARY_MAX_BYTES: usize = 1 << 20;

/// What the policy says about writing, as the host passed it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settings {
    /// Changes to an existing file need `expected_sha256`.
    pub require_fresh: bool,
    /// Writes may go through symlinks that stay inside the work dir.
    pub follow_links: bool,
}

impl Settings {
    /// The settings the host set for this call (absent: the defaults).
    pub fn from_env() -> Self {
        let on = |name: &str| std::env::var(name).is_ok_and(|v| v == "1");
        Self { require_fresh: on(REQUIRE_FRESH_VAR), follow_links: on(FOLLOW_LINKS_VAR) }
    }
}

/// The hash argument `field` as lowercase hex: `None` when it is empty (not
/// given); `invalid_args` naming the field when it is not 64 hex digits.
pub fn parse_hash(field: &str, value: &str) -> Result<Option<String>, ToolError> {
    if value.is_empty() {
        return Ok(None);
    }
    if value.len() != 64 || !value.bytes().all(|b| b.is_ascii_hexdigit()) {
        let what = if value.len() == 64 {
            "holds a character that is not a hex digit".to_string()
        } else {
            format!("is {} characters long", value.chars().count())
        };
        return Err(ToolError::invalid_args(format!(
            "{field} must be the 64 hex digits of a sha256 (as read_file shows it); it {what}"
        )));
    }
    Ok(Some(value.to_ascii_lowercase()))
}

/// May the existing file `shown`, whose bytes are `current`, be changed by a
/// call that passed `expected` (already parsed)? `stale_file` when the hash
/// differs, or when none was given and `settings` require one. `proposed`: the
/// bytes the call would write, for the summary.
pub fn check(
    shown: &str,
    expected: Option<&str>,
    current: &[u8],
    proposed: Option<&[u8]>,
    settings: Settings,
) -> Result<(), ToolError> {
    let Some(expected) = expected else {
        if settings.require_fresh {
            return Err(ToolError::new(
                codes::STALE_FILE,
                format!(
                    "{shown} exists and this host requires expected_sha256 for changes to existing files: read it \
                     first (read_file shows its sha256 in the first line), then pass it as expected_sha256"
                ),
            ));
        }
        return Ok(());
    };
    let now = crate::sha256_hex(current);
    if now == expected {
        return Ok(());
    }
    let mut message = format!(
        "{shown} changed since it was read: expected_sha256 {}…, its sha256 is now {now} ({}, {})",
        &expected[..12],
        crate::count(line_count(current), "line", "lines"),
        crate::human_size(current.len() as u64),
    );
    if let Some(summary) = proposed.and_then(|new| summary(current, new)) {
        message.push_str("; ");
        message.push_str(&summary);
    }
    message.push_str("; nothing was written. Read it again and retry with the new sha256.");
    Err(ToolError::new(codes::STALE_FILE, message))
}

/// The number of lines of `bytes` (a last line without a newline counts).
fn line_count(bytes: &[u8]) -> usize {
    let newlines = bytes.iter().filter(|&&b| b == b'\n').count();
    newlines + usize::from(bytes.last().is_some_and(|&b| b != b'\n'))
}

/// How `new` differs from `current` by lines (`the new content adds 3 and
/// removes 5 of its lines`), for text files up to [`SUMMARY_MAX_BYTES`].
fn summary(current: &[u8], new: &[u8]) -> Option<String> {
    if current.len() > SUMMARY_MAX_BYTES || new.len() > SUMMARY_MAX_BYTES {
        return None;
    }
    let (old, new) = (std::str::from_utf8(current).ok()?, std::str::from_utf8(new).ok()?);
    let diff = TextDiff::configure().timeout(std::time::Duration::from_millis(200)).diff_lines(old, new);
    let (mut added, mut removed) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    Some(format!("against the current file, this change would add {added} and remove {removed} lines"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASH: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    #[test]
    fn hashes_are_64_hex_digits() {
        assert_eq!(parse_hash("expected_sha256", "").unwrap(), None);
        assert_eq!(parse_hash("expected_sha256", &HASH.to_uppercase()).unwrap().as_deref(), Some(HASH));
        let short = parse_hash("expected_sha256", "abc123").unwrap_err();
        assert_eq!(short.code, codes::INVALID_ARGS);
        assert!(short.message.starts_with("expected_sha256 must be"), "{}", short.message);
        assert!(short.message.contains("6 characters long"), "{}", short.message);
        let long = parse_hash("known_sha256", &format!("{HASH}0")).unwrap_err();
        assert!(long.message.starts_with("known_sha256") && long.message.contains("65"), "{}", long.message);
        let not_hex = parse_hash("expected_sha256", &format!("{}zz", &HASH[..62])).unwrap_err();
        assert!(not_hex.message.contains("not a hex digit"), "{}", not_hex.message);
        // Multi-byte characters are counted as characters, never split.
        assert!(parse_hash("expected_sha256", &"é".repeat(32)).is_err());
    }

    #[test]
    fn a_changed_file_is_stale_with_its_hash_and_a_summary() {
        let current = b"one\ntwo\nthree\n";
        assert!(check("f", Some(&crate::sha256_hex(current)), current, None, Settings::default()).is_ok());
        let err =
            check("f", Some(HASH), current, Some(b"one\n2\nthree\nfour\n"), Settings::default()).unwrap_err();
        assert_eq!(err.code, codes::STALE_FILE);
        let now = crate::sha256_hex(current);
        assert!(err.message.contains(&now), "{}", err.message);
        assert!(err.message.contains("3 lines, 14 B"), "{}", err.message);
        assert!(err.message.contains("add 2 and remove 1 lines"), "{}", err.message);
        assert!(err.message.contains("nothing was written"), "{}", err.message);
    }

    #[test]
    fn require_fresh_makes_the_hash_mandatory() {
        let strict = Settings { require_fresh: true, follow_links: false };
        assert!(check("f", None, b"x", None, Settings::default()).is_ok());
        let err = check("f", None, b"x", None, strict).unwrap_err();
        assert_eq!(err.code, codes::STALE_FILE);
        assert!(err.message.contains("read it first"), "{}", err.message);
        assert!(check("f", Some(&crate::sha256_hex(b"x")), b"x", None, strict).is_ok());
    }

    #[test]
    fn lines_are_counted_with_or_without_a_final_newline() {
        assert_eq!(
            (line_count(b""), line_count(b"a"), line_count(b"a\n"), line_count(b"a\nb")),
            (0, 1, 1, 2)
        );
    }
}
