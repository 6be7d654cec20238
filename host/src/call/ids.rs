//! Call ids: unique within a process and unlikely to collide across
//! processes (they go into logs and the output store).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(1);

/// A number unique within this process.
pub(crate) fn next_id() -> u64 {
    COUNTER.fetch_add(1, Ordering::Relaxed)
}

/// A fresh call id such as `call-3f9a1c-17`.
pub(crate) fn new_call_id() -> String {
    static PREFIX: OnceLock<String> = OnceLock::new();
    let prefix = PREFIX.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        format!("{:06x}", (nanos ^ std::process::id().rotate_left(16)) & 0xff_ffff)
    });
    format!("call-{prefix}-{}", next_id())
}
