//! What keeping a part's full text came to ([`Stored`]), and a store that
//! could not be opened or reached ([`StoreError`]): shared by the
//! [`OutputStore`](super::OutputStore) and the stores it shares parts through
//! (`super::disk`, `super::redis`).

/// Whether a part's full text was kept, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stored {
    /// Kept: `read_output` can read it.
    Kept,
    /// Larger than the whole budget: not kept.
    TooLarge,
    /// The store failed (a Redis that went away, a full disk): the reason.
    Failed(String),
}

impl Stored {
    /// Whether the text was kept.
    pub fn is_kept(&self) -> bool {
        matches!(self, Stored::Kept)
    }
}

/// A store that could not be opened or reached.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store's URL is not one this host can use.
    #[error("{url} is not a usable output store URL: {why}")]
    BadUrl {
        /// The URL, without a password.
        url: String,
        /// Why.
        why: String,
    },
    /// The store holds as many one-time claims as it may (until some expire).
    #[error(
        "the output store at {store} holds {max} claims that have not expired, its most: refused until some expire"
    )]
    Full {
        /// Which store.
        store: String,
        /// How many it may hold.
        max: usize,
    },
    /// The store on disk failed.
    #[error("the output store at {store} failed: {why}")]
    Failed {
        /// Which store (its directory).
        store: String,
        /// What failed.
        why: String,
    },
    /// The store did not answer, or answered with an error.
    #[error("the output store at {store} is unreachable: {why}")]
    Unreachable {
        /// Which store (a URL without a password).
        store: String,
        /// What failed.
        why: String,
    },
}
