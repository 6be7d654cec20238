//! Community tools from OCI registries: pull and push components in the wasm OCI
//! layout, cosign-compatible signatures, and a content-addressed store.
//!
//! The path of a pull, and the module of each step:
//!
//! 1. `reference`: `oci://HOST[:PORT]/REPO[:TAG][@sha256:…]`; the registry is always
//!    named.
//! 2. `transport`: reqwest configured by hand — every hop vetted with the pinned fetch's
//!    checks, names resolved through a vetting resolver, redirects followed by us, no
//!    proxy, no referer, ring-backed rustls (the webpki roots, plus a CA file only when
//!    the user names one: `roots`), timeouts, bounded bodies. Only the registry
//!    named (host and port) may be on a private address; `--plain-http` only for a
//!    loopback registry.
//! 3. `auth`: anonymous, basic or bearer; the docker login file only when asked for;
//!    credentials only ever sent to the registry's own origin.
//! 4. `registry`: manifests (digest checked), blobs (size bounded before they are asked
//!    for, then size and digest checked), uploads.
//! 5. `artifact`: exactly one `application/wasm` layer; an index or an image is refused.
//! 6. `sign`, `keys`, `verify`, `keyless`: cosign's signature images
//!    (`sha256-<digest>.sig`, simple signing payloads), P-256 keys in cosign's
//!    encrypted format, key-based and keyless (Fulcio certificate + Rekor bundle against
//!    a trusted root file, offline) verification.
//! 7. `store`: the verified bytes under the cache dir, by digest; a hit is hashed and
//!    its signatures verified again each time.
//!
//! [`pull()`] and [`publish`] put the steps together; every refusal is an
//! [`OciError`] whose code (`signature_missing`, `digest_mismatch`, `too_large`, …) is
//! stable.
//!
//! # Why not `oci-client` and `sigstore`
//!
//! Issue 17 names them; this module is built on `oci-spec`, reqwest, ring,
//! rustls-webpki and x509-parser instead, because (as read in oci-client 0.17.0 and
//! sigstore 0.14.0):
//!
//! - `oci_client::Client` builds its own `reqwest::Client` from a `ClientConfig`
//!   (`Client::new` / `TryFrom<ClientConfig>`): there is no way to hand it our client or
//!   a `reqwest::dns::Resolve`, so the vetting resolver (a name that resolves to a
//!   private address refused before connecting) would be bypassed. Its builder never
//!   calls `no_proxy()`, `referer(false)` or a redirect policy, so reqwest's defaults
//!   apply: proxies from the environment, and redirects followed (up to 10, with a
//!   `Referer`) without vetting each hop or dropping credentials off the registry. Manifests are read with `bytes()`, without
//!   a size bound. `Client::new` falls back to a default config when its config fails
//!   to build. Its `rustls-tls` feature is reqwest's `rustls` (aws-lc-rs).
//! - `sigstore`'s cosign verification (`cosign::Client`) pulls the signature image
//!   itself through an `oci_client::Client` it builds from its own `ClientConfig`, and
//!   the verified `SignatureLayer` is made only inside the crate from that pull
//!   (`SignatureLayer::new` is `pub(crate)`), so it brings all of the above. With its
//!   `cosign` feature it also compiles the Fulcio, Rekor and OIDC clients (reqwest)
//!   and rustls-webpki with aws-lc-rs; its default features add `native-tls`
//!   (OpenSSL). Beyond that pull it needs no network: a `ManualTrustRoot` takes the
//!   Fulcio certificates and Rekor keys as they are.
//!
//! What is ours is small and tested against independent implementations: sigstore-rs
//! signs, pushes and verifies cosign signatures with toolhost over a loopback registry
//! (`tests/tests/sigstore_interop.rs`, driving `tests/sigstore-peer`), OpenSSL and
//! skopeo (`tests/tests/oci.rs`), and a Fulcio/Rekor-like CA and log made with rcgen
//! (`keyless_tests.rs`).
//!
//! # Why a public module
//!
//! Pulling, verifying, signing and publishing are an API of their own beside the host
//! (`toolhost pull`, `publish`, `update` use them): its items are re-exported here,
//! flat; its files are private.

pub(crate) mod artifact;
pub(crate) mod auth;
pub(crate) mod bundle;
mod error;
pub(crate) mod keyless;
pub(crate) mod keys;
pub(crate) mod pull;
pub(crate) mod push;
pub(crate) mod reference;
mod registry;
pub(crate) mod roots;
mod sct;
pub(crate) mod sign;
pub(crate) mod store;
mod tlog;
mod transport;
pub(crate) mod verify;

pub use artifact::{Artifact, ComponentInfo, build as build_artifact};
pub use auth::Credentials;
pub use bundle::{Artifact as BundleArtifact, BundleSigner, MAX_BUNDLE_BYTES, verify_bundle};
pub use error::OciError;
pub use keyless::Identity;
pub use keyless::TrustedRoot;
pub use keys::{PublicKey, SigningKey};
pub use pull::{Pulled, fetch_pinned_url, fetch_signatures, from_store, pull};
pub use push::{Published, publish};
pub use reference::OciRef;
pub use registry::{RegistryClient, digest_of};
pub use roots::REGISTRY_CA_ENV;
pub use sign::{SignatureLayer, payload, signature_image};
pub use store::Store;
pub use transport::{DEFAULT_MAX_LAYER_BYTES, MAX_MANIFEST_BYTES, RegistrySettings};
pub use verify::{TrustSet, Verified};
