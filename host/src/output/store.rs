//! [`OutputStore`]: the full text of every part of recent calls' results, by
//! call id and part, within a byte budget: in this process's memory, or in a
//! directory several processes share (`super::disk`).

use std::path::Path;
use std::sync::{Arc, Mutex};

use lru::LruCache;

use super::Part;
use super::disk::DiskStore;

/// Files a store on disk keeps at most.
pub(crate) const DISK_MAX_FILES: usize = 4096;

/// Full texts by call id and [`Part`], least recently used (on disk: oldest)
/// dropped first once the total passes a byte budget. A miss is normal
/// (evicted or never stored).
pub struct OutputStore {
    backend: Backend,
    max_bytes: usize,
}

enum Backend {
    Memory(Mutex<Inner>),
    Disk(DiskStore),
}

struct Inner {
    entries: LruCache<(String, Part), Arc<str>>,
    bytes: usize,
}

impl OutputStore {
    /// A store holding at most `max_bytes` of text in total.
    pub fn new(max_bytes: usize) -> Self {
        let inner = Inner { entries: LruCache::unbounded(), bytes: 0 };
        Self { backend: Backend::Memory(Mutex::new(inner)), max_bytes }
    }

    /// A store in the directory `dir` (created 0700 when missing), which other
    /// host processes may share: at most `max_bytes` and 4096
    /// files. Refused when `dir` is a symlink, not a directory, or writable by others.
    pub fn on_disk(dir: &Path, max_bytes: usize) -> std::io::Result<Self> {
        Ok(Self { backend: Backend::Disk(DiskStore::open(dir, max_bytes, DISK_MAX_FILES)?), max_bytes })
    }

    /// The directory of a store on disk.
    pub fn dir(&self) -> Option<&Path> {
        match &self.backend {
            Backend::Memory(_) => None,
            Backend::Disk(disk) => Some(disk.dir()),
        }
    }

    /// The byte budget.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// Keep the content `output` of `call_id` (replacing an earlier one). An
    /// output larger than the whole budget is not kept.
    pub fn put(&self, call_id: &str, output: Arc<str>) {
        self.put_part(call_id, Part::Content, output);
    }

    /// Keep the full text of `part` of `call_id`'s result (replacing an earlier
    /// one). Returns false, keeping nothing, when it is larger than the whole
    /// budget.
    pub fn put_part(&self, call_id: &str, part: Part, text: Arc<str>) -> bool {
        if text.len() > self.max_bytes {
            return false;
        }
        let inner = match &self.backend {
            Backend::Memory(inner) => inner,
            Backend::Disk(disk) => return disk.put(call_id, part, &text),
        };
        let mut inner = inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.bytes += text.len();
        if let Some(old) = inner.entries.put((call_id.to_string(), part), text) {
            inner.bytes -= old.len();
        }
        while inner.bytes > self.max_bytes {
            match inner.entries.pop_lru() {
                Some((_, old)) => inner.bytes -= old.len(),
                None => break,
            }
        }
        true
    }

    /// The full content of `call_id`, if still kept.
    pub fn get(&self, call_id: &str) -> Option<Arc<str>> {
        self.get_part(call_id, Part::Content)
    }

    /// The full text of `part` of `call_id`'s result, if kept and not evicted.
    pub fn get_part(&self, call_id: &str, part: Part) -> Option<Arc<str>> {
        let inner = match &self.backend {
            Backend::Memory(inner) => inner,
            Backend::Disk(disk) => return disk.get(call_id, part),
        };
        let mut inner = inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.entries.get(&(call_id.to_string(), part)).cloned()
    }

    /// Bytes currently kept.
    pub fn bytes(&self) -> usize {
        match &self.backend {
            Backend::Memory(inner) => inner.lock().unwrap_or_else(|p| p.into_inner()).bytes,
            Backend::Disk(disk) => disk.bytes(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_evicts_least_recently_used_by_bytes() {
        let store = OutputStore::new(10);
        store.put("a", "aaaa".into());
        store.put("b", "bbbb".into());
        assert!(store.get("a").is_some()); // a is now the most recent
        store.put("c", "cccc".into());
        assert!(store.get("b").is_none());
        assert_eq!(store.get("a").as_deref(), Some("aaaa"));
        assert_eq!(store.bytes(), 8);
        store.put("huge", "x".repeat(11).into());
        assert!(store.get("huge").is_none());
    }

    #[test]
    fn parts_are_kept_apart_and_share_the_budget() {
        let store = OutputStore::new(10);
        assert!(store.put_part("a", Part::Error, "eee".into()));
        assert!(store.put_part("a", Part::Metadata, "mmm".into()));
        store.put("a", "ccc".into());
        assert_eq!(store.get_part("a", Part::Error).as_deref(), Some("eee"));
        assert_eq!(store.get_part("a", Part::Metadata).as_deref(), Some("mmm"));
        assert_eq!(store.get("a").as_deref(), Some("ccc"));
        assert_eq!(store.get_part("a", Part::Display), None);
        assert_eq!(store.bytes(), 9);
        assert!(!store.put_part("b", Part::Display, "x".repeat(11).into()));
        assert!(store.put_part("b", Part::Display, "dd".into()));
        // The error was the least recently used.
        assert_eq!(store.get_part("a", Part::Error), None);
        assert_eq!(store.bytes(), 8);
    }
}
