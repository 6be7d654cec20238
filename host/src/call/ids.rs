//! Call ids: unique within a process and, by a random 64-bit prefix, across
//! processes (they go into logs and the output store several may share).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(1);

/// A number unique within this process.
pub(crate) fn next_id() -> u64 {
    COUNTER.fetch_add(1, Ordering::Relaxed)
}

/// A fresh call id such as `call-3f9a1c07d2e45b10-17`.
pub(crate) fn new_call_id() -> String {
    static PREFIX: OnceLock<String> = OnceLock::new();
    // 64 random bits per process (the standard library's per-process hash
    // seed): processes sharing an output store never share a prefix.
    let prefix = PREFIX.get_or_init(|| {
        use std::hash::{BuildHasher as _, Hasher as _};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        format!("{:016x}", hasher.finish())
    });
    format!("call-{prefix}-{}", next_id())
}
