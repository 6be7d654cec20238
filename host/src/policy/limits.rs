//! Limit overrides: what a user may set over the host's [`Limits`], checked and
//! applied in one place for both places that set them: a plugin's policy entry
//! (`limits = { memory-mib = 64, … }`) and the CLI's flags (`--memory-mib 64`, …).
//!
//! Every value is a whole number of at least 1 (a zero limit would fail every call)
//! and small enough to mean what it says on this host (`memory-mib` times 2^20 must
//! fit in a `usize`). A bad value is a [`LimitError`] naming the key.

use std::fmt;
use std::time::Duration;

use crate::limits::Limits;

/// One limit a user may set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LimitKey {
    /// `memory-mib`: [`Limits::memory_bytes`], in MiB.
    MemoryMib,
    /// `fuel`: [`Limits::fuel`].
    Fuel,
    /// `timeout-ms`: [`Limits::timeout`] in milliseconds (raising
    /// [`Limits::max_timeout`] when it is longer).
    TimeoutMs,
    /// `output-bytes`: [`Limits::output_bytes`].
    OutputBytes,
    /// `clamp-bytes`: [`Limits::clamp_bytes`].
    ClampBytes,
    /// `write-mib`: [`Limits::write_bytes`], in MiB (at most 2^20: 1 TiB).
    WriteMib,
}

/// The largest `write-mib`: 1 TiB, past any quota that still means something.
const MAX_WRITE_MIB: u64 = 1 << 20;

impl LimitKey {
    /// The keys a plugin's policy entry may set in its `limits` table.
    pub const PLUGIN: [LimitKey; 5] =
        [LimitKey::MemoryMib, LimitKey::Fuel, LimitKey::TimeoutMs, LimitKey::OutputBytes, LimitKey::WriteMib];

    /// The key as written in the policy and, after `--`, as a flag.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitKey::MemoryMib => "memory-mib",
            LimitKey::Fuel => "fuel",
            LimitKey::TimeoutMs => "timeout-ms",
            LimitKey::OutputBytes => "output-bytes",
            LimitKey::ClampBytes => "clamp-bytes",
            LimitKey::WriteMib => "write-mib",
        }
    }

    /// The largest value that means what it says on this host.
    fn max(self) -> u64 {
        let usize_max = u64::try_from(usize::MAX).unwrap_or(u64::MAX);
        match self {
            LimitKey::MemoryMib => usize_max >> 20,
            LimitKey::OutputBytes | LimitKey::ClampBytes => usize_max,
            LimitKey::Fuel | LimitKey::TimeoutMs => u64::MAX,
            LimitKey::WriteMib => MAX_WRITE_MIB,
        }
    }
}

impl fmt::Display for LimitKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A limit value that was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct LimitError {
    /// The key it was given for.
    pub key: LimitKey,
    /// What is wrong with it.
    pub message: String,
}

/// Limit overrides (unset: the base limits).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LimitOverrides {
    /// Memory cap in MiB.
    pub memory_mib: Option<usize>,
    /// Fuel per call.
    pub fuel: Option<u64>,
    /// Default deadline in milliseconds (also raises the maximum if needed).
    pub timeout_ms: Option<u64>,
    /// Largest output in bytes.
    pub output_bytes: Option<usize>,
    /// Bytes of content the caller reads before the head + tail cut.
    pub clamp_bytes: Option<usize>,
    /// Write quota per call in MiB.
    pub write_mib: Option<u64>,
}

impl LimitOverrides {
    /// Set `key` to `value`, or say why it can't be (the value is left unset).
    pub fn set(&mut self, key: LimitKey, value: i64) -> Result<(), LimitError> {
        let refuse = |message: String| LimitError { key, message };
        if value < 1 {
            return Err(refuse(format!("{value} is too small: it must be at least 1")));
        }
        let value = value.unsigned_abs();
        if value > key.max() {
            return Err(refuse(format!("{value} is too large: at most {} on this host", key.max())));
        }
        self.set_checked(key, value);
        Ok(())
    }

    /// Set `key` from the decimal text `text` (a flag's value; `_` may group digits).
    pub fn set_text(&mut self, key: LimitKey, text: &str) -> Result<(), LimitError> {
        let digits = text.replace('_', "");
        let value: u64 = digits.parse().map_err(|e: std::num::ParseIntError| LimitError {
            key,
            message: match e.kind() {
                std::num::IntErrorKind::PosOverflow => {
                    format!("{text} is too large: at most {} on this host", key.max())
                }
                _ => format!("`{text}` is not a whole number of at least 1"),
            },
        })?;
        match i64::try_from(value) {
            Ok(value) => self.set(key, value),
            // Past i64: only fuel and timeout-ms take it (there is no TOML integer that big).
            Err(_) if value <= key.max() => {
                self.set_checked(key, value);
                Ok(())
            }
            Err(_) => Err(LimitError {
                key,
                message: format!("{value} is too large: at most {} on this host", key.max()),
            }),
        }
    }

    /// `value` for `key`, already checked against `1..=key.max()`.
    fn set_checked(&mut self, key: LimitKey, value: u64) {
        let size = || usize::try_from(value).unwrap_or(usize::MAX);
        match key {
            LimitKey::MemoryMib => self.memory_mib = Some(size()),
            LimitKey::Fuel => self.fuel = Some(value),
            LimitKey::TimeoutMs => self.timeout_ms = Some(value),
            LimitKey::OutputBytes => self.output_bytes = Some(size()),
            LimitKey::ClampBytes => self.clamp_bytes = Some(size()),
            LimitKey::WriteMib => self.write_mib = Some(value),
        }
    }

    /// `base` with these overrides applied.
    pub fn apply(&self, base: &Limits) -> Limits {
        let mut limits = base.clone();
        if let Some(mib) = self.memory_mib {
            limits.memory_bytes = mib.saturating_mul(1 << 20);
        }
        if let Some(fuel) = self.fuel {
            limits.fuel = fuel;
        }
        if let Some(ms) = self.timeout_ms {
            limits.timeout = Duration::from_millis(ms);
            limits.max_timeout = limits.max_timeout.max(limits.timeout);
        }
        if let Some(bytes) = self.output_bytes {
            limits.output_bytes = bytes;
        }
        if let Some(bytes) = self.clamp_bytes {
            limits.clamp_bytes = bytes;
        }
        if let Some(mib) = self.write_mib {
            limits.write_bytes = mib << 20;
        }
        limits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_sets_its_limit() {
        let mut o = LimitOverrides::default();
        o.set(LimitKey::MemoryMib, 64).unwrap();
        o.set(LimitKey::Fuel, 1_000).unwrap();
        o.set(LimitKey::OutputBytes, 5_000).unwrap();
        o.set_text(LimitKey::ClampBytes, "1_000").unwrap();
        o.set_text(LimitKey::TimeoutMs, "700000").unwrap();
        o.set(LimitKey::WriteMib, 3).unwrap();
        let base = Limits::default();
        let l = o.apply(&base);
        assert_eq!(l.memory_bytes, 64 << 20);
        assert_eq!(l.fuel, 1_000);
        assert_eq!(l.output_bytes, 5_000);
        assert_eq!(l.clamp_bytes, 1_000);
        assert_eq!(l.write_bytes, 3 << 20);
        assert_eq!(l.timeout, Duration::from_millis(700_000));
        assert_eq!(l.max_timeout, l.timeout, "a longer deadline raises the maximum");
        assert_eq!(l.stdio_bytes, base.stdio_bytes, "what is not set stays");
        assert_eq!(LimitOverrides::default().apply(&base), base);

        let mut short = LimitOverrides::default();
        short.set(LimitKey::TimeoutMs, 300).unwrap();
        assert_eq!(short.apply(&base).max_timeout, base.max_timeout);
    }

    #[test]
    fn fuel_takes_every_u64() {
        let mut o = LimitOverrides::default();
        o.set_text(LimitKey::Fuel, &u64::MAX.to_string()).unwrap();
        assert_eq!(o.fuel, Some(u64::MAX));
    }

    #[test]
    fn bad_values_are_refused_naming_the_key() {
        let max_mib = (usize::MAX >> 20).to_string();
        let past_mib = ((usize::MAX >> 20) as u64 + 1).to_string();
        let too_much_memory = format!("memory-mib: {past_mib} is too large: at most {max_mib} on this host");
        for (key, text, needle) in [
            (LimitKey::MemoryMib, "0", "memory-mib: 0 is too small: it must be at least 1"),
            (LimitKey::Fuel, "-5", "fuel: `-5` is not a whole number"),
            (LimitKey::TimeoutMs, "1.5", "timeout-ms: `1.5` is not a whole number"),
            (LimitKey::OutputBytes, "", "output-bytes: `` is not a whole number"),
            (LimitKey::ClampBytes, "ten", "clamp-bytes: `ten` is not a whole number"),
            (LimitKey::MemoryMib, &past_mib, &too_much_memory),
            (LimitKey::TimeoutMs, "18446744073709551616", "timeout-ms: 18446744073709551616 is too large"),
            (LimitKey::WriteMib, "0", "write-mib: 0 is too small: it must be at least 1"),
            (LimitKey::WriteMib, "1048577", "write-mib: 1048577 is too large: at most 1048576 on this host"),
            (LimitKey::WriteMib, "99999999999999999999", "write-mib: 99999999999999999999 is too large"),
        ] {
            let mut o = LimitOverrides::default();
            let err = o.set_text(key, text).unwrap_err();
            assert_eq!(err.key, key);
            assert!(err.to_string().starts_with(needle), "{key} {text:?}: {err}");
            assert_eq!(o, LimitOverrides::default(), "a refused value leaves nothing set");
        }
        let mut o = LimitOverrides::default();
        let err = o.set(LimitKey::Fuel, -1).unwrap_err();
        assert_eq!(err.to_string(), "fuel: -1 is too small: it must be at least 1");
        // The largest memory cap that fits is taken, and does not wrap.
        o.set_text(LimitKey::MemoryMib, &max_mib).unwrap();
        assert_eq!(o.apply(&Limits::default()).memory_bytes, (usize::MAX >> 20) << 20);
    }
}
