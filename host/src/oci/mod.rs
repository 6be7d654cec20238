//! Community tools from OCI registries: pull and push components in the wasm OCI
//! layout, cosign-compatible signatures, and a content-addressed store.
//!
//! The path of a pull, and the module of each step:
//!
//! 1. [`reference`](mod@reference): `oci://HOST[:PORT]/REPO[:TAG][@sha256:…]`; the registry is always
//!    named.
//! 2. `transport`: reqwest configured by hand — every hop vetted with the pinned fetch's
//!    checks, names resolved through a vetting resolver, redirects followed by us, no
//!    proxy, no referer, ring-backed rustls, timeouts, bounded bodies. Only the registry
//!    named (host and port) may be on a private address; `--plain-http` only for a
//!    loopback registry.
//! 3. [`auth`]: anonymous, basic or bearer; the docker login file only when asked for;
//!    credentials only ever sent to the registry's own origin.
//! 4. `registry`: manifests (digest checked), blobs (size bounded before they are asked
//!    for, then size and digest checked), uploads.
//! 5. [`artifact`]: exactly one `application/wasm` layer; an index or an image is refused.
//! 6. [`sign`], [`keys`], [`verify`], [`keyless`]: cosign's signature images
//!    (`sha256-<digest>.sig`, simple signing payloads), P-256 keys in cosign's
//!    encrypted format, key-based and keyless (Fulcio certificate + Rekor bundle against
//!    a trusted root file, offline) verification.
//! 7. [`store`]: the verified bytes under the cache dir, by digest; a hit is hashed and
//!    its signatures verified again each time.
//!
//! [`pull::pull`] and [`push::publish`] put the steps together; every refusal is an
//! [`OciError`] whose code (`signature_missing`, `digest_mismatch`, `too_large`, …) is
//! stable.

pub mod artifact;
pub mod auth;
mod error;
pub mod keyless;
pub mod keys;
pub mod pull;
pub mod push;
pub mod reference;
mod registry;
pub mod sign;
pub mod store;
mod transport;
pub mod verify;

pub use auth::Credentials;
pub use error::OciError;
pub use keyless::Identity;
pub use reference::OciRef;
pub use registry::{RegistryClient, digest_of};
pub use store::Store;
pub use transport::{DEFAULT_MAX_LAYER_BYTES, RegistrySettings};
pub use verify::{TrustSet, Verified};
