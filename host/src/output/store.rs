//! [`OutputStore`]: the full text of every part of recent calls' results, by
//! call id and part, within a byte budget, in this process's memory; with a
//! directory several processes share (`super::disk`) or a Redis several
//! machines share (`super::redis`), the parts that were cut go there too, so a
//! `read_output` answered by another instance finds them.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use lru::LruCache;

use super::Part;
use super::claims::Claim;
use super::disk::DiskStore;
use super::redis::RedisStore;
use super::stored::{StoreError, Stored};

/// Files a store on disk keeps at most (and entries a store in Redis).
pub(crate) const DISK_MAX_FILES: usize = 4096;

/// Bytes kept in memory at most beside a shared store: recent parts read
/// back here without a file or a round trip (what was cut is in the shared
/// store too, under the whole budget).
const SHARED_MEMORY_BYTES: usize = 4 << 20;

/// How long a store in Redis keeps an output by default.
pub const DEFAULT_REDIS_EXPIRY: Duration = Duration::from_secs(3600);

/// Full texts by call id and [`Part`], least recently used (on disk and in
/// Redis: oldest) dropped first once the total passes a byte budget. A miss is
/// normal (evicted, expired or never stored).
///
/// Every part is kept in memory. A part that was cut (its marker names
/// `read_output`) is also written to the shared store when there is one: that
/// is the text a caller cannot have whole from the result, and the one another
/// instance may be asked for. A part the caller got whole stays in this process
/// alone, so a call whose output fits costs no file and no round trip; beside
/// a shared store, memory holds at most 4 MiB of recent parts.
pub struct OutputStore {
    memory: Mutex<Inner>,
    shared: Option<Shared>,
    max_bytes: usize,
    /// The budget of the parts in memory.
    memory_bytes: usize,
}

/// Where cut parts are shared with other host processes.
enum Shared {
    Disk(DiskStore),
    Redis(RedisStore),
}

struct Inner {
    entries: LruCache<(String, Part), Arc<str>>,
    bytes: usize,
}

impl OutputStore {
    /// A store holding at most `max_bytes` of text in total.
    pub fn new(max_bytes: usize) -> Self {
        let memory = Mutex::new(Inner { entries: LruCache::unbounded(), bytes: 0 });
        Self { memory, shared: None, max_bytes, memory_bytes: max_bytes }
    }

    /// A store sharing cut parts through the directory `dir` (created 0700
    /// when missing) with other host processes: at most `max_bytes` and 4096
    /// files there. Refused when `dir` is a symlink, not a directory, or
    /// writable by others.
    pub fn on_disk(dir: &Path, max_bytes: usize) -> std::io::Result<Self> {
        let shared = Shared::Disk(DiskStore::open(dir, max_bytes, DISK_MAX_FILES)?);
        Ok(Self::new(max_bytes).sharing(shared))
    }

    /// A store sharing cut parts through the Redis at `url` (`redis://[:PASSWORD@]HOST:PORT[/DB]`),
    /// which host processes on several machines may share: at most
    /// `max_bytes` and `max_entries` (the host uses 4096), each kept at most
    /// `expiry`. Fails when the URL is unfit or Redis does not answer a `PING`
    /// within 5 s.
    pub async fn in_redis(
        url: &str,
        max_bytes: usize,
        max_entries: usize,
        expiry: Duration,
    ) -> Result<Self, StoreError> {
        let redis = RedisStore::connect(url, max_bytes, max_entries, expiry).await?;
        Ok(Self::new(max_bytes).sharing(Shared::Redis(redis)))
    }

    /// This store, sharing cut parts through `shared`, with less in memory.
    fn sharing(self, shared: Shared) -> Self {
        let memory_bytes = self.max_bytes.min(SHARED_MEMORY_BYTES);
        Self { shared: Some(shared), memory_bytes, ..self }
    }

    /// Whether cut parts (and claims) are shared with other processes: a
    /// store on disk or in Redis.
    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// The directory of a store on disk.
    pub fn dir(&self) -> Option<&Path> {
        match &self.shared {
            Some(Shared::Disk(disk)) => Some(disk.dir()),
            _ => None,
        }
    }

    /// Where the store is, for messages: `memory`, the directory, or the
    /// Redis URL without its password.
    pub fn location(&self) -> String {
        match &self.shared {
            None => "memory".into(),
            Some(Shared::Disk(disk)) => disk.dir().display().to_string(),
            Some(Shared::Redis(redis)) => redis.url().to_string(),
        }
    }

    /// The byte budget.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// Keep the content `output` of `call_id` (replacing an earlier one), in
    /// memory. An output larger than the whole budget is not kept.
    pub async fn put(&self, call_id: &str, output: Arc<str>) -> Stored {
        self.keep(call_id, Part::Content, output, false).await
    }

    /// Keep the full text of `part` of `call_id`'s result (replacing an earlier
    /// one), in memory and in the shared store. Nothing is kept when it is
    /// larger than the whole budget or the shared store fails; the answer says
    /// which.
    pub async fn put_part(&self, call_id: &str, part: Part, text: Arc<str>) -> Stored {
        self.keep(call_id, part, text, true).await
    }

    /// Keep `text` as `part` of `call_id` in memory, and in the shared store
    /// too when `cut` (the caller got only part of it).
    pub(crate) async fn keep(&self, call_id: &str, part: Part, text: Arc<str>, cut: bool) -> Stored {
        if text.len() > self.max_bytes {
            return Stored::TooLarge;
        }
        if cut && let Some(shared) = &self.shared {
            let stored = match shared {
                Shared::Disk(disk) => disk.put(call_id, part, &text),
                Shared::Redis(redis) => match redis.put(call_id, part, &text).await {
                    Ok(()) => Stored::Kept,
                    Err(error) => {
                        tracing::warn!(%error, "could not store an output");
                        Stored::Failed(error.to_string())
                    }
                },
            };
            if !stored.is_kept() {
                return stored;
            }
        }
        let mut inner = self.memory.lock().unwrap_or_else(|p| p.into_inner());
        inner.bytes += text.len();
        if let Some(old) = inner.entries.put((call_id.to_string(), part), text) {
            inner.bytes -= old.len();
        }
        while inner.bytes > self.memory_bytes {
            match inner.entries.pop_lru() {
                Some((_, old)) => inner.bytes -= old.len(),
                None => break,
            }
        }
        Stored::Kept
    }

    /// The full content of `call_id`, if still kept (a failing store is a miss, logged).
    pub async fn get(&self, call_id: &str) -> Option<Arc<str>> {
        self.get_part(call_id, Part::Content).await
    }

    /// The full text of `part` of `call_id`'s result, if kept and not evicted
    /// (a failing store is a miss, logged; [`OutputStore::fetch_part`] tells them apart).
    pub async fn get_part(&self, call_id: &str, part: Part) -> Option<Arc<str>> {
        match self.fetch_part(call_id, part).await {
            Ok(text) => text,
            Err(error) => {
                tracing::warn!(%error, "could not read a stored output");
                None
            }
        }
    }

    /// The full text of `part` of `call_id`'s result, from memory, else from
    /// the shared store: `Ok(None)` when it is not kept (evicted, expired,
    /// never stored), an error when the shared store could not be asked.
    pub async fn fetch_part(&self, call_id: &str, part: Part) -> Result<Option<Arc<str>>, StoreError> {
        let key = (call_id.to_string(), part);
        if let Some(text) = self.memory.lock().unwrap_or_else(|p| p.into_inner()).entries.get(&key) {
            return Ok(Some(text.clone()));
        }
        match &self.shared {
            None => Ok(None),
            Some(Shared::Disk(disk)) => Ok(disk.get(call_id, part)),
            Some(Shared::Redis(redis)) => redis.get(call_id, part).await,
        }
    }

    /// Claim `name` until `until` (plus [`super::CLOCK_SKEW`]) in the shared
    /// store, once among every process sharing it (`super::claims`); `None`
    /// when this store shares nothing. An error: the claim was not made (the
    /// store is unreachable, unfit, or holds as many claims as it may).
    pub async fn claim(&self, name: &str, until: SystemTime) -> Option<Result<Claim, StoreError>> {
        Some(match self.shared.as_ref()? {
            Shared::Disk(disk) => disk.claim(name, until).map_err(|e| StoreError::Failed {
                store: disk.dir().display().to_string(),
                why: e.to_string(),
            }),
            Shared::Redis(redis) => redis.claim(name, until).await,
        })
    }

    /// Bytes currently kept: in the shared store when there is one, else in
    /// memory.
    pub async fn bytes(&self) -> Result<usize, StoreError> {
        match &self.shared {
            None => Ok(self.memory.lock().unwrap_or_else(|p| p.into_inner()).bytes),
            Some(Shared::Disk(disk)) => Ok(disk.bytes()),
            Some(Shared::Redis(redis)) => redis.bytes().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn store_evicts_least_recently_used_by_bytes() {
        let store = OutputStore::new(10);
        store.put("a", "aaaa".into()).await;
        store.put("b", "bbbb".into()).await;
        assert!(store.get("a").await.is_some()); // a is now the most recent
        store.put("c", "cccc".into()).await;
        assert!(store.get("b").await.is_none());
        assert_eq!(store.get("a").await.as_deref(), Some("aaaa"));
        assert_eq!(store.bytes().await.unwrap(), 8);
        assert_eq!(store.put("huge", "x".repeat(11).into()).await, Stored::TooLarge);
        assert!(store.get("huge").await.is_none());
    }

    #[tokio::test]
    async fn parts_are_kept_apart_and_share_the_budget() {
        let store = OutputStore::new(10);
        assert!(store.put_part("a", Part::Error, "eee".into()).await.is_kept());
        assert!(store.put_part("a", Part::Metadata, "mmm".into()).await.is_kept());
        store.put("a", "ccc".into()).await;
        assert_eq!(store.get_part("a", Part::Error).await.as_deref(), Some("eee"));
        assert_eq!(store.get_part("a", Part::Metadata).await.as_deref(), Some("mmm"));
        assert_eq!(store.get("a").await.as_deref(), Some("ccc"));
        assert_eq!(store.get_part("a", Part::Display).await, None);
        assert_eq!(store.bytes().await.unwrap(), 9);
        assert!(!store.put_part("b", Part::Display, "x".repeat(11).into()).await.is_kept());
        assert!(store.put_part("b", Part::Display, "dd".into()).await.is_kept());
        // The error was the least recently used.
        assert_eq!(store.get_part("a", Part::Error).await, None);
        assert_eq!(store.bytes().await.unwrap(), 8);
    }

    #[tokio::test]
    async fn only_cut_parts_are_shared_and_every_part_is_read_back_here() {
        let dir = tempfile::tempdir().unwrap();
        let a = OutputStore::on_disk(&dir.path().join("outputs"), 1000).unwrap();
        let b = OutputStore::on_disk(&dir.path().join("outputs"), 1000).unwrap();
        assert!(a.keep("whole", Part::Content, "fits".into(), false).await.is_kept());
        assert!(a.keep("cut", Part::Content, "too long".into(), true).await.is_kept());
        assert_eq!(a.get("whole").await.as_deref(), Some("fits"));
        assert_eq!(a.get("cut").await.as_deref(), Some("too long"));
        // Another instance finds what was cut, and only that.
        assert_eq!(b.get("cut").await.as_deref(), Some("too long"));
        assert_eq!(b.get("whole").await, None);
        assert_eq!(std::fs::read_dir(dir.path().join("outputs")).unwrap().count(), 1);
    }
}
