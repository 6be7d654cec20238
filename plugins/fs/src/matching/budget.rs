//! How much the tolerant matchers may search before the cascade gives up.
//!
//! Exact matching is always done (a substring search, linear in the file).
//! The fuzzy matchers compare lines and score blocks, so a hostile or merely
//! huge input (a 200 MB file, a 1 MB `old_string`, a file of one repeated
//! line) could keep them busy for minutes. Three bounds stop that: the file's
//! size, `old_string`'s size, and a work budget counted in comparisons (one
//! unit per line compared, and `a × b` for a similarity score of strings of
//! `a` and `b` bytes). Past any of them the cascade stops and the edit fails
//! with `old_string_not_found`, the message saying the tolerant search was
//! skipped and why: the model can act on it the same way (copy the text
//! exactly, or give a shorter `old_string`).

use std::fmt;

/// The bounds of one tolerant search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest file (bytes, without a BOM) the fuzzy matchers search.
    pub max_text_bytes: usize,
    /// Largest `old_string` (bytes) the fuzzy matchers look for.
    pub max_old_bytes: usize,
    /// Comparisons all fuzzy matchers together may make.
    pub work: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_text_bytes: 4 << 20, max_old_bytes: 64 << 10, work: 40_000_000 }
    }
}

/// Why the fuzzy matchers were skipped or stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GaveUp {
    /// The file is larger than [`Limits::max_text_bytes`].
    TextTooLarge {
        /// The file's size.
        bytes: usize,
        /// The bound.
        max: usize,
    },
    /// `old_string` is larger than [`Limits::max_old_bytes`].
    OldTooLarge {
        /// `old_string`'s size.
        bytes: usize,
        /// The bound.
        max: usize,
    },
    /// The matchers used up [`Limits::work`].
    WorkExhausted {
        /// The budget that ran out.
        budget: u64,
    },
}

impl fmt::Display for GaveUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::TextTooLarge { bytes, max } => write!(
                f,
                "the file is {}, over the {} the tolerant matchers search",
                crate::human_size(bytes as u64),
                crate::human_size(max as u64)
            ),
            Self::OldTooLarge { bytes, max } => write!(
                f,
                "old_string is {}, over the {} the tolerant matchers look for",
                crate::human_size(bytes as u64),
                crate::human_size(max as u64)
            ),
            Self::WorkExhausted { budget } => {
                write!(f, "the tolerant matchers used up their budget of {budget} comparisons")
            }
        }
    }
}

/// The size bounds, checked before any fuzzy matcher runs.
pub(crate) fn check_sizes(text: &str, old: &str, limits: &Limits) -> Result<(), GaveUp> {
    if text.len() > limits.max_text_bytes {
        return Err(GaveUp::TextTooLarge { bytes: text.len(), max: limits.max_text_bytes });
    }
    if old.len() > limits.max_old_bytes {
        return Err(GaveUp::OldTooLarge { bytes: old.len(), max: limits.max_old_bytes });
    }
    Ok(())
}

/// The work left in one search.
#[derive(Debug)]
pub(crate) struct Budget {
    left: u64,
    total: u64,
}

impl Budget {
    pub(crate) fn new(total: u64) -> Self {
        Self { left: total, total }
    }

    /// Take `units` of work, or fail when that is more than is left.
    pub(crate) fn spend(&mut self, units: u64) -> Result<(), GaveUp> {
        match self.left.checked_sub(units) {
            Some(left) => {
                self.left = left;
                Ok(())
            }
            None => {
                self.left = 0;
                Err(GaveUp::WorkExhausted { budget: self.total })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_runs_out() {
        let mut b = Budget::new(10);
        b.spend(4).unwrap();
        b.spend(6).unwrap();
        assert_eq!(b.spend(1), Err(GaveUp::WorkExhausted { budget: 10 }));
    }

    #[test]
    fn sizes_are_checked() {
        let limits = Limits { max_text_bytes: 4, max_old_bytes: 2, work: 1 };
        assert_eq!(check_sizes("abcde", "a", &limits), Err(GaveUp::TextTooLarge { bytes: 5, max: 4 }));
        assert_eq!(check_sizes("abc", "abc", &limits), Err(GaveUp::OldTooLarge { bytes: 3, max: 2 }));
        assert_eq!(check_sizes("abcd", "ab", &limits), Ok(()));
        let msg = GaveUp::TextTooLarge { bytes: 200 << 20, max: 4 << 20 }.to_string();
        assert_eq!(msg, "the file is 200.0 MiB, over the 4.0 MiB the tolerant matchers search");
    }
}
