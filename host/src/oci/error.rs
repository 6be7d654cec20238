//! Why a pull, a push or a verification was refused: one case per error code.

use crate::error::codes;

/// A refused registry operation. Displayed as `code: message`; the message names the
/// image and what was expected, and never holds a credential or a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OciError {
    /// Not an `oci://HOST[:PORT]/REPO[:TAG][@sha256:…]` reference (or an unusable URL).
    #[error("{code}: {0}", code = codes::INVALID_URL)]
    InvalidReference(String),
    /// A hop to a private address other than the registry named, or plain HTTP where
    /// only HTTPS goes.
    #[error("{code}: {0}", code = codes::BLOCKED_URL)]
    Blocked(String),
    /// More redirects than the limit (a loop, say).
    #[error("{code}: {0}", code = codes::TOO_MANY_REDIRECTS)]
    TooManyRedirects(String),
    /// A manifest or layer over its size limit, refused before it is read.
    #[error("{code}: {0}", code = codes::TOO_LARGE)]
    TooLarge(String),
    /// Resolving, connecting, TLS or the exchange failed (a connection closed mid-layer).
    #[error("{code}: {0}", code = codes::TRANSPORT)]
    Transport(String),
    /// A connect, a read or the whole request took too long.
    #[error("{code}: {0}", code = codes::TIMEOUT)]
    Timeout(String),
    /// The registry has no such tag, manifest or blob.
    #[error("{code}: {0}", code = codes::NOT_FOUND)]
    NotFound(String),
    /// The registry answered with an error status.
    #[error("{code}: {0}", code = codes::REGISTRY_ERROR)]
    Registry(String),
    /// Bytes that do not hash to the digest (or size) they were asked for.
    #[error("{code}: {0}", code = codes::DIGEST_MISMATCH)]
    DigestMismatch(String),
    /// Not a component in the wasm OCI layout.
    #[error("{code}: {0}", code = codes::UNSUPPORTED_ARTIFACT)]
    Unsupported(String),
    /// No signature by a trusted key or identity.
    #[error("{code}: {0}", code = codes::SIGNATURE_MISSING)]
    SignatureMissing(String),
    /// Signatures that do not verify.
    #[error("{code}: {0}", code = codes::SIGNATURE_INVALID)]
    SignatureInvalid(String),
    /// A keyless signature's transparency-log entry does not verify (its log, SET,
    /// inclusion proof or checkpoint), or is for something else.
    #[error("{code}: {0}", code = codes::SIGNATURE_TLOG_INVALID)]
    TlogInvalid(String),
    /// A keyless certificate without an SCT from a trusted CT log.
    #[error("{code}: {0}", code = codes::SIGNATURE_SCT_INVALID)]
    SctInvalid(String),
    /// A keyless certificate that does not chain to a trusted CA at signing time.
    #[error("{code}: {0}", code = codes::SIGNATURE_CERTIFICATE_INVALID)]
    CertificateInvalid(String),
    /// A valid keyless signature by an identity (subject, issuer) that is not trusted.
    #[error("{code}: {0}", code = codes::SIGNATURE_IDENTITY_MISMATCH)]
    IdentityMismatch(String),
    /// A key (or a trusted root) that cannot be read or used.
    #[error("{code}: {0}", code = codes::INVALID_KEY)]
    Key(String),
    /// The local store could not be read or written.
    #[error("{code}: {0}", code = codes::IO_ERROR)]
    Store(String),
}

impl OciError {
    /// The stable `snake_case` code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidReference(_) => codes::INVALID_URL,
            Self::Blocked(_) => codes::BLOCKED_URL,
            Self::TooManyRedirects(_) => codes::TOO_MANY_REDIRECTS,
            Self::TooLarge(_) => codes::TOO_LARGE,
            Self::Transport(_) => codes::TRANSPORT,
            Self::Timeout(_) => codes::TIMEOUT,
            Self::NotFound(_) => codes::NOT_FOUND,
            Self::Registry(_) => codes::REGISTRY_ERROR,
            Self::DigestMismatch(_) => codes::DIGEST_MISMATCH,
            Self::Unsupported(_) => codes::UNSUPPORTED_ARTIFACT,
            Self::SignatureMissing(_) => codes::SIGNATURE_MISSING,
            Self::SignatureInvalid(_) => codes::SIGNATURE_INVALID,
            Self::TlogInvalid(_) => codes::SIGNATURE_TLOG_INVALID,
            Self::SctInvalid(_) => codes::SIGNATURE_SCT_INVALID,
            Self::CertificateInvalid(_) => codes::SIGNATURE_CERTIFICATE_INVALID,
            Self::IdentityMismatch(_) => codes::SIGNATURE_IDENTITY_MISMATCH,
            Self::Key(_) => codes::INVALID_KEY,
            Self::Store(_) => codes::IO_ERROR,
        }
    }

    /// The message without its code.
    pub fn message(&self) -> &str {
        match self {
            Self::InvalidReference(m)
            | Self::Blocked(m)
            | Self::TooManyRedirects(m)
            | Self::TooLarge(m)
            | Self::Transport(m)
            | Self::Timeout(m)
            | Self::NotFound(m)
            | Self::Registry(m)
            | Self::DigestMismatch(m)
            | Self::Unsupported(m)
            | Self::SignatureMissing(m)
            | Self::SignatureInvalid(m)
            | Self::TlogInvalid(m)
            | Self::SctInvalid(m)
            | Self::CertificateInvalid(m)
            | Self::IdentityMismatch(m)
            | Self::Key(m)
            | Self::Store(m) => m,
        }
    }

    pub(crate) fn store(what: &str, err: impl std::fmt::Display) -> Self {
        Self::Store(format!("the OCI store: {what}: {err}"))
    }
}
