//! [`WriteMeter`]: one call's write quota, charged by everything that writes on its
//! behalf (the host's filesystem for the guest, and the children started here: their
//! `RLIMIT_FSIZE` is what is left of it, their growth of the work dir is charged after).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// One call's write quota (the host's `write-mib`): the bytes its writes have
/// used, shared by everything that writes on its behalf (the guest's filesystem,
/// the programs it starts), and whether the quota stopped one.
#[derive(Debug)]
pub struct WriteMeter {
    limit: u64,
    used: AtomicU64,
    tripped: AtomicBool,
}

impl WriteMeter {
    /// A meter for a call that may write `limit` bytes.
    pub fn new(limit: u64) -> Self {
        Self { limit, used: AtomicU64::new(0), tripped: AtomicBool::new(false) }
    }

    /// The bytes the call may write in all.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The bytes the call may still write.
    pub fn remaining(&self) -> u64 {
        self.limit.saturating_sub(self.used())
    }

    /// The bytes charged so far.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Charge `bytes` before they are written: `false` (nothing charged, the quota
    /// marked as tripped) when they do not fit in what is left.
    pub fn take(&self, bytes: u64) -> bool {
        let fits = self
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(bytes).filter(|&total| total <= self.limit)
            })
            .is_ok();
        if !fits {
            self.tripped.store(true, Ordering::Relaxed);
        }
        fits
    }

    /// Give back `bytes` taken by [`Self::take`] and not written after all.
    pub fn give_back(&self, bytes: u64) {
        let _ = self
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| Some(used.saturating_sub(bytes)));
    }

    /// Charge `bytes` found written after the fact (a child's growth of the work
    /// dir): the quota is tripped when they reach it, since a child is held to the
    /// rest of it and stops there.
    pub fn record(&self, bytes: u64) {
        let total = self.used.fetch_add(bytes, Ordering::Relaxed).saturating_add(bytes);
        if bytes > 0 && total >= self.limit {
            self.tripped.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the quota stopped a write.
    pub fn tripped(&self) -> bool {
        self.tripped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_write_meter_takes_what_fits_and_trips_past_it() {
        let meter = WriteMeter::new(10);
        assert!(meter.take(4) && meter.take(6), "up to the quota is written");
        assert!(!meter.tripped());
        assert_eq!(meter.remaining(), 0);
        assert!(!meter.take(1), "one byte past it is refused");
        assert!(meter.tripped());
        assert_eq!(meter.used(), 10, "a refused write charges nothing");
        meter.give_back(3);
        assert_eq!(meter.remaining(), 3);
        assert!(!meter.take(u64::MAX), "no overflow");

        let child = WriteMeter::new(100);
        child.record(0);
        child.record(99);
        assert!(!child.tripped(), "a child that stayed under the quota");
        child.record(1);
        assert!(child.tripped(), "a child that reached it was stopped by it");
    }
}
