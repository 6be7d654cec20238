//! The bearer token `serve --http` requires when it has one: read once from a
//! file only its owner can read, kept as its sha256, and compared with what a
//! request presents in constant time (both sides hashed first, so neither the
//! bytes nor the length of the token leak through timing).

use std::path::Path;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq as _;

use super::HttpError;
use confine::hostfs;

/// The largest token file read.
const MAX_TOKEN_BYTES: u64 = 4096;
/// The shortest token accepted (a guessable token protects nothing).
pub(crate) const MIN_TOKEN_BYTES: usize = 16;

/// A bearer token, as its sha256.
#[derive(Clone)]
pub struct BearerToken {
    digest: [u8; 32],
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(..)")
    }
}

impl BearerToken {
    /// A token from its text (surrounding whitespace trimmed): at least
    /// `MIN_TOKEN_BYTES` (16) visible ASCII bytes.
    pub fn new(text: &str) -> Result<Self, HttpError> {
        let text = text.trim();
        if text.len() < MIN_TOKEN_BYTES {
            return Err(HttpError::Token(format!("a token is at least {MIN_TOKEN_BYTES} bytes")));
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(HttpError::Token("a token is visible ASCII with no spaces".into()));
        }
        Ok(Self { digest: Sha256::digest(text.as_bytes()).into() })
    }

    /// Read the token from `path`: a regular file (a symlink is not followed)
    /// that neither its group nor others may read or write.
    pub fn from_file(path: &Path) -> Result<Self, HttpError> {
        let named = |why: String| HttpError::Token(format!("{}: {why}", path.display()));
        let bytes = hostfs::read_private(path, MAX_TOKEN_BYTES).map_err(|e| named(e.to_string()))?;
        let text = String::from_utf8(bytes).map_err(|_| named("not UTF-8 text".into()))?;
        Self::new(&text).map_err(|e| named(e.to_string()))
    }

    /// Whether an `Authorization` header value is `Bearer` this token.
    pub(crate) fn admits(&self, authorization: Option<&[u8]>) -> bool {
        let Some(value) = authorization else { return false };
        let Some(scheme) = value.get(..7) else { return false };
        if !scheme.eq_ignore_ascii_case(b"bearer ") {
            return false;
        }
        let presented: [u8; 32] = Sha256::digest(value[7..].trim_ascii()).into();
        presented.ct_eq(&self.digest).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_only_the_same_token() {
        let token = BearerToken::new("0123456789abcdef-token").unwrap();
        assert!(token.admits(Some(b"Bearer 0123456789abcdef-token")));
        assert!(token.admits(Some(b"bearer 0123456789abcdef-token")));
        for wrong in [
            &b"Bearer 0123456789abcdef-tokeN"[..],
            b"Bearer 0123456789abcdef-token2",
            b"Bearer ",
            b"Basic 0123456789abcdef-token",
            b"0123456789abcdef-token",
            b"",
        ] {
            assert!(!token.admits(Some(wrong)), "{}", String::from_utf8_lossy(wrong));
        }
        assert!(!token.admits(None));
    }

    #[test]
    fn short_or_spaced_tokens_are_refused() {
        assert!(BearerToken::new("short").is_err());
        assert!(BearerToken::new("0123456789 abcdef").is_err());
        assert!(BearerToken::new("  0123456789abcdef\n").is_ok());
    }
}
