//! Per-call limits and their defaults. Each one, when tripped, ends the call
//! with its own error code (or cuts what the caller sees, with a marker saying
//! where the rest is kept) and leaves the host serving. Also the cheap scan that
//! checks a JSON text's nesting before anything parses it.

use std::time::{Duration, Instant};

/// Descriptors and directory streams one call may hold open at once, by default.
pub(crate) const DEFAULT_OPEN_HANDLES: usize = 1024;

/// What one call may use, and how much of each part of its result the caller
/// sees. Every field has a default a user can override (the CLI flags and the
/// library builder set them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Linear memory the guest may grow to, in bytes (`memory_limit`). Also
    /// bounds the listing of a plugin's tools at load.
    pub memory_bytes: usize,
    /// Fuel: roughly one unit per wasm instruction (`fuel_exhausted`).
    pub fuel: u64,
    /// Wall-clock deadline when the tool declares none (`timeout`).
    pub timeout: Duration,
    /// Upper bound on any deadline, including the one a tool declares.
    pub max_timeout: Duration,
    /// Most a successful call may return, in bytes: content, display and
    /// metadata text together (`output_limit`).
    pub output_bytes: usize,
    /// Bytes of guest stdout and of stderr kept per call; the rest is dropped
    /// (a flood is cut, not an error).
    pub stdio_bytes: usize,
    /// What the model reads: content, and an error's message, beyond this many
    /// bytes is cut to a head and a tail at line boundaries (the whole text is
    /// kept in the output store, retrievable with `read_output`).
    pub clamp_bytes: usize,
    /// The same cut for the display text (it is meant for a UI, so it may be
    /// larger).
    pub display_bytes: usize,
    /// Largest metadata text parsed and returned; longer metadata is not
    /// parsed: the caller gets a small stand-in naming where it is kept.
    pub metadata_bytes: usize,
    /// Deepest nesting of arrays and objects in metadata returned as JSON;
    /// deeper metadata is replaced by the same stand-in, unparsed.
    pub metadata_depth: usize,
    /// Files and directory listings a guest may hold open at once; past it an open
    /// fails (`insufficient-memory` in WASI) and the call's error says why. Lowered
    /// when the process's descriptor limit can't give every call slot this many.
    pub open_handles: usize,
    /// Bytes one call may write to files (`write_quota`): what its guest writes
    /// through `wasi:filesystem`, the holes it makes past a file's end, and the
    /// work dir's growth from the programs it starts (each held to the rest by
    /// `RLIMIT_FSIZE`). Past it the write fails in the guest (`quota` in WASI) and
    /// the call fails `write_quota`.
    pub write_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_bytes: 256 << 20,
            fuel: 100_000_000_000,
            timeout: Duration::from_secs(30),
            max_timeout: Duration::from_secs(600),
            output_bytes: 16 << 20,
            stdio_bytes: 64 << 10,
            clamp_bytes: 30_000,
            display_bytes: 256 << 10,
            metadata_bytes: 64 << 10,
            metadata_depth: 32,
            open_handles: DEFAULT_OPEN_HANDLES,
            write_bytes: 256 << 20,
        }
    }
}

impl Limits {
    /// The deadline for a call to a tool that asks for `tool_timeout_ms`.
    pub fn deadline_for(&self, tool_timeout_ms: Option<u32>) -> Duration {
        tool_timeout_ms
            .map(|ms| Duration::from_millis(ms.into()))
            .unwrap_or(self.timeout)
            .min(self.max_timeout)
    }
}

/// When one call must be over: fixed once, when the call starts running, and
/// handed down to everything that waits on its behalf (the sandbox, a fetch, a
/// child, a native tool), so there is one clock for the whole call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    /// The instant the call is stopped at.
    pub at: Instant,
    /// How long the call was given (for messages).
    pub budget: Duration,
}

impl Deadline {
    /// `budget` from now (a budget too long to represent is as good as none).
    pub(crate) fn after(budget: Duration) -> Self {
        let now = Instant::now();
        Self { at: now.checked_add(budget).unwrap_or(now + Duration::from_secs(1 << 30)), budget }
    }

    /// The `timeout` error of a call stopped at this deadline.
    pub(crate) fn exceeded(&self) -> crate::error::CallError {
        crate::error::CallError::new(
            crate::error::codes::TIMEOUT,
            format!("the call ran longer than {} ms and was stopped", self.budget.as_millis()),
        )
    }
}

/// One call's write quota ([`Limits::write_bytes`]), shared with its children.
pub(crate) use confine::WriteMeter;

/// The `write_quota` error of a call whose quota ([`WriteMeter`]) stopped a write.
pub(crate) fn quota_exceeded(meter: &WriteMeter) -> crate::error::CallError {
    crate::error::CallError::new(
        crate::error::codes::WRITE_QUOTA,
        format!(
            "the call tried to write more than its quota of {} (write-mib); {} bytes were \
             written and the write past the quota failed",
            mib(meter.limit()),
            meter.used().min(meter.limit())
        ),
    )
}

/// `bytes` for a message: whole MiB when it is, else bytes.
fn mib(bytes: u64) -> String {
    if bytes.is_multiple_of(1 << 20) { format!("{} MiB", bytes >> 20) } else { format!("{bytes} bytes") }
}

/// Whether the JSON text `text` nests arrays and objects deeper than `max`.
/// One pass over the bytes, no allocation, stopping at the first level past
/// `max`: run before a parser builds anything from text it has not seen. Text
/// that is not JSON is scanned all the same (the parser then refuses it).
pub(crate) fn json_nesting_exceeds(text: &str, max: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &byte in text.as_bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_timeout_is_clamped() {
        let limits = Limits::default();
        assert_eq!(limits.deadline_for(None), Duration::from_secs(30));
        assert_eq!(limits.deadline_for(Some(1500)), Duration::from_millis(1500));
        assert_eq!(limits.deadline_for(Some(u32::MAX)), Duration::from_secs(600));
    }

    #[test]
    fn nesting_is_counted_outside_strings_only() {
        assert!(!json_nesting_exceeds(r#"{"a": [1, {"b": 2}]}"#, 3));
        assert!(json_nesting_exceeds(r#"{"a": [1, {"b": [2]}]}"#, 3));
        // Brackets and escaped quotes inside strings are text.
        assert!(!json_nesting_exceeds(r#"{"a": "[[[[{{{{\"[[[["}"#, 1));
        assert!(json_nesting_exceeds(r#"{"a": "\\", "b": [[]]}"#, 2));
        // Siblings do not add up; closing brings the depth back down.
        assert!(!json_nesting_exceeds("[[],[],[],{},[[]]]", 3));
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(json_nesting_exceeds(&deep, 64));
        assert!(!json_nesting_exceeds(&format!("{}{}", "[".repeat(64), "]".repeat(64)), 64));
        assert!(!json_nesting_exceeds("", 0));
        assert!(json_nesting_exceeds("{", 0));
    }

    #[test]
    fn a_quota_stopped_write_is_a_write_quota_error() {
        let child = WriteMeter::new(100);
        child.record(100);
        assert!(child.tripped(), "a child that reached it was stopped by it");
        let err = quota_exceeded(&child);
        assert!(err.to_string().starts_with("write_quota: "), "{err}");
        assert!(quota_exceeded(&WriteMeter::new(1 << 20)).message.contains("quota of 1 MiB"));
    }
}
