//! Answers already used: a 2026-07-28 approval is good for one call, so the
//! retry that carried it is recorded, and the same `requestState` coming back
//! (replayed, to this instance or another, or sent to two at once) is refused.
//!
//! The record is a claim on the question's 128-bit nonce (from inside the
//! sealed state, so a client cannot choose it), kept until the question would
//! have expired anyway (plus [`crate::output::CLOCK_SKEW`]):
//! - in the shared output store when there is one (`serve --store DIR` or
//!   `--store redis://…`, [`crate::OutputStore::claim`]): every instance
//!   sharing it refuses an answer another one used, and of two racing on one
//!   answer exactly one wins;
//! - else in the data dir's `approvals/` (this machine's processes);
//! - else in this process's memory.
//!
//! A record that cannot be made (the store is unreachable, unfit or full)
//! refuses the answer: nothing runs. Only an answer to a question sealed with
//! the key makes a record, so there are at most as many as questions answered
//! within one answer window (`serve --approval-timeout`), and the store bounds
//! them besides.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::output::claims::ClaimDir;
use crate::output::{Claim, OutputStore, StoreError};

/// Records in the data dir at most (the store's own bound applies there).
const MAX_DIR_RECORDS: usize = 4096;

/// Why an answer could not be recorded as used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SpendError {
    /// The nonce inside the state is not one this server makes.
    #[error("the state's nonce is not 128 bits of hex")]
    BadNonce,
    /// The store of records failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Where used answers are recorded.
pub(crate) enum Spent {
    /// In the shared output store.
    Store(Arc<OutputStore>),
    /// In a directory of this machine.
    Dir(ClaimDir),
    /// In this process's memory: nonce → until when.
    Memory(Mutex<HashMap<String, SystemTime>>),
}

impl Spent {
    /// Records in `dir` (created private when first needed), or in this
    /// process's memory when `None`.
    pub(crate) fn new(dir: Option<PathBuf>) -> Self {
        match dir {
            Some(dir) => Self::Dir(ClaimDir::new(dir, MAX_DIR_RECORDS)),
            None => Self::Memory(Mutex::new(HashMap::new())),
        }
    }

    /// Records in `outputs` when it is shared with other processes, else as [`Spent::new`].
    pub(crate) fn for_store(outputs: &Arc<OutputStore>, dir: Option<PathBuf>) -> Self {
        if outputs.is_shared() { Self::Store(outputs.clone()) } else { Self::new(dir) }
    }

    /// Record `nonce` (hex) as used until `until`; whether it was used before.
    /// An error (the record could not be made) must refuse the answer.
    pub(crate) async fn spend(&self, nonce: &str, until: SystemTime) -> Result<Claim, SpendError> {
        if nonce.len() != 32 || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(SpendError::BadNonce);
        }
        let name = format!("approval:{}", nonce.to_ascii_lowercase());
        match self {
            Self::Store(outputs) => match outputs.claim(&name, until).await {
                Some(claimed) => Ok(claimed?),
                None => Err(SpendError::Store(StoreError::Failed {
                    store: outputs.location(),
                    why: "it is not shared: it keeps no claims".into(),
                })),
            },
            Self::Dir(dir) => dir.claim(&name, until).map_err(|e| {
                SpendError::Store(StoreError::Failed {
                    store: dir.dir().display().to_string(),
                    why: e.to_string(),
                })
            }),
            Self::Memory(used) => {
                let now = SystemTime::now();
                let mut used = used.lock().unwrap_or_else(|e| e.into_inner());
                used.retain(|_, expiry| *expiry > now);
                if used.contains_key(&name) {
                    return Ok(Claim::Again);
                }
                used.insert(name, until + crate::output::CLOCK_SKEW);
                Ok(Claim::First)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const NONCE: &str = "00112233445566778899aabbccddeeff";

    #[tokio::test]
    async fn a_nonce_is_used_once_in_the_store_on_disk_and_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let later = SystemTime::now() + Duration::from_secs(60);
        let store = Arc::new(OutputStore::on_disk(&dir.path().join("outputs"), 1000).unwrap());
        let memory = Arc::new(OutputStore::new(1000));
        for spent in [
            Spent::for_store(&store, None),
            Spent::new(Some(dir.path().join("approvals"))),
            Spent::for_store(&memory, None),
        ] {
            assert_eq!(spent.spend(NONCE, later).await.unwrap(), Claim::First);
            assert_eq!(spent.spend(NONCE, later).await.unwrap(), Claim::Again);
            assert_eq!(spent.spend(&NONCE.replace('0', "1"), later).await.unwrap(), Claim::First);
            for bad in ["", "../../etc/passwd", "0011", &"g".repeat(32)] {
                assert!(matches!(spent.spend(bad, later).await, Err(SpendError::BadNonce)), "{bad:?}");
            }
        }
        // Another process sharing the store sees the record.
        let other = Arc::new(OutputStore::on_disk(&dir.path().join("outputs"), 1000).unwrap());
        assert_eq!(Spent::for_store(&other, None).spend(NONCE, later).await.unwrap(), Claim::Again);
        assert!(matches!(Spent::for_store(&memory, None), Spent::Memory(_)));
    }

    #[tokio::test]
    async fn expired_records_are_forgotten_in_memory() {
        let memory = Spent::new(None);
        let past = SystemTime::now() - crate::output::CLOCK_SKEW - Duration::from_secs(1);
        assert_eq!(memory.spend(NONCE, past).await.unwrap(), Claim::First);
        let later = SystemTime::now() + Duration::from_secs(60);
        assert_eq!(memory.spend(NONCE, later).await.unwrap(), Claim::First, "an expired record is gone");
    }
}
