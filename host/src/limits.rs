//! Per-call limits and their defaults. Each one, when tripped, ends the call
//! with its own error code and leaves the host serving.

use std::time::Duration;

/// What one call may use. Every field has a default a user can override (the
/// CLI flags and the library builder set them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Linear memory the guest may grow to, in bytes (`memory_limit`).
    pub memory_bytes: usize,
    /// Fuel: roughly one unit per wasm instruction (`fuel_exhausted`).
    pub fuel: u64,
    /// Wall-clock deadline when the tool declares none (`timeout`).
    pub timeout: Duration,
    /// Upper bound on any deadline, including the one a tool declares.
    pub max_timeout: Duration,
    /// Largest `content` a tool may return, in bytes (`output_limit`).
    pub output_bytes: usize,
    /// Bytes of guest stdout and of stderr kept per call; the rest is dropped
    /// (a flood is cut, not an error).
    pub stdio_bytes: usize,
    /// What the model reads: output beyond this many bytes is cut to a head
    /// and a tail at line boundaries (the whole output stays retrievable).
    pub clamp_bytes: usize,
    /// Files and directory listings a guest may hold open at once; past it an open
    /// fails (`insufficient-memory` in WASI) and the call's error says why. Lowered
    /// when the process's descriptor limit can't give every call slot this many.
    pub open_handles: usize,
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
            open_handles: crate::wasi_fs::DEFAULT_OPEN_HANDLES,
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
}
