//! The `requestState` of a 2026-07-28 approval question: what the question
//! binds, sealed with rmcp's [`RequestStateCodec`] (HMAC-SHA256, an expiry
//! inside the tag) under a [`StateKey`], so that any instance holding the key
//! can check an answer, and none has to remember the question.
//!
//! The state binds the tool, a digest of the exact arguments the permissions
//! saw, a digest of the question (why it asked, and the rule "always" saves),
//! a random nonce (an answer is good for one call: [`super::approve_spent`])
//! and the expiry. It is signed, not encrypted: it holds digests, never the
//! arguments themselves.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::policy::ApprovalRequest;
use confine::hostfs;

/// Mixed into every tag: a toolhost approval state opens as nothing else.
const DOMAIN: &[u8] = b"toolhost/serve/approval/v1";
/// The largest key file read.
const MAX_KEY_FILE_BYTES: u64 = 4096;

/// The key approval states are sealed with: shared by the instances behind one
/// endpoint (`serve --state-key-file`), or made up by this process.
#[derive(Clone)]
pub struct StateKey {
    codec: RequestStateCodec,
    shared: bool,
}

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateKey").field("shared", &self.shared).finish_non_exhaustive()
    }
}

/// Why a key file was refused.
#[derive(Debug, thiserror::Error)]
#[error("state key file {path}: {why}")]
#[non_exhaustive]
pub struct StateKeyError {
    /// The file.
    pub path: String,
    /// What was wrong with it.
    pub why: String,
}

impl StateKey {
    /// The key in `path`: a regular file (a symlink is not followed) that
    /// neither its group nor others may access, holding at least 32 bytes
    /// (surrounding whitespace trimmed), such as 32 random bytes in base64.
    pub fn from_file(path: &Path) -> Result<Self, StateKeyError> {
        let refused = |why: String| StateKeyError { path: path.display().to_string(), why };
        let bytes = hostfs::read_private(path, MAX_KEY_FILE_BYTES).map_err(|e| refused(e.to_string()))?;
        let key = bytes.trim_ascii();
        let codec = RequestStateCodec::try_new(key.to_vec()).map_err(|_| {
            refused(format!(
                "{} bytes; a key is at least {} (for example `head -c 32 /dev/urandom | base64`)",
                key.len(),
                RequestStateCodec::MIN_KEY_LENGTH
            ))
        })?;
        Ok(Self { codec, shared: true })
    }

    /// A key of 32 random bytes known to this process only: only it can check
    /// the answers to its questions.
    pub fn random() -> Self {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).expect("the system's random source");
        let codec = RequestStateCodec::try_new(key.to_vec()).expect("32 bytes is long enough");
        Self { codec, shared: false }
    }

    /// Whether the key came from a file (other instances may hold it too).
    pub fn is_shared(&self) -> bool {
        self.shared
    }

    /// `sealed` as an opaque `requestState` that opens for `ttl`.
    pub(crate) fn seal(&self, sealed: &Sealed, ttl: Duration) -> String {
        let options = SealOptions::new().associated_data(DOMAIN).ttl(ttl);
        self.codec.seal_json_with(sealed, &options).expect("the state serializes")
    }

    /// What a `requestState` binds, if it was sealed with this key and has not
    /// expired.
    pub(crate) fn open(&self, state: &str) -> Result<Sealed, RequestStateError> {
        self.codec.open_json_with(state, DOMAIN)
    }
}

/// What an approval question binds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Sealed {
    /// The tool asked about.
    pub(crate) tool: String,
    /// The sha256 of its arguments as the permissions saw them (canonical JSON).
    pub(crate) args: String,
    /// The sha256 of the question: why it asked, and the rule "always" saves.
    pub(crate) question: String,
    /// 128 random bits, hex: an answer is used once.
    pub(crate) nonce: String,
    /// When the question expires, in unix milliseconds (the seal checks it too;
    /// this says how long to remember the answer was used).
    pub(crate) expires_ms: u64,
}

/// How an answer's question differs from the call it came back with.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Mismatch {
    /// Another tool.
    Tool(String),
    /// Other arguments.
    Args,
    /// Another question (the reason, or the rule "always" saves).
    Question,
}

impl Sealed {
    /// The question `request` asks, open until `expires`.
    pub(crate) fn asking(request: &ApprovalRequest, expires: SystemTime) -> Self {
        let mut nonce = [0u8; 16];
        getrandom::fill(&mut nonce).expect("the system's random source");
        Self {
            tool: request.tool.clone(),
            args: args_digest(&request.args),
            question: question_digest(request),
            nonce: hex::encode(nonce),
            expires_ms: expires.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64,
        }
    }

    /// When the question expires.
    pub(crate) fn expires(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.expires_ms)
    }

    /// Whether this question is about a call to `tool`.
    pub(crate) fn check_tool(&self, tool: &str) -> Result<(), Mismatch> {
        if self.tool == tool { Ok(()) } else { Err(Mismatch::Tool(self.tool.clone())) }
    }

    /// Whether this is the question `request` asks: the same tool, arguments,
    /// reason and rule.
    pub(crate) fn check(&self, request: &ApprovalRequest) -> Result<(), Mismatch> {
        self.check_tool(&request.tool)?;
        if self.args != args_digest(&request.args) {
            return Err(Mismatch::Args);
        }
        if self.question != question_digest(request) {
            return Err(Mismatch::Question);
        }
        Ok(())
    }
}

fn question_digest(request: &ApprovalRequest) -> String {
    let mut hash = Sha256::new();
    for part in [&request.tool, &request.reason, &request.suggested_rule] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    hex::encode(hash.finalize())
}

/// The sha256 of `args` as canonical JSON: object keys sorted at every depth,
/// no spaces (so key order on the wire doesn't matter, and nothing else can differ).
pub(crate) fn args_digest(args: &Value) -> String {
    let mut text = String::new();
    canonical(args, &mut text);
    hex::encode(Sha256::digest(text.as_bytes()))
}

fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(key.as_str()).to_string());
                out.push(':');
                canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(args: Value) -> ApprovalRequest {
        ApprovalRequest {
            call_id: "c1".into(),
            tool: "write_file".into(),
            plugin: "builtin:fs".into(),
            args,
            reason: "write_file can change things, and default mode asks first".into(),
            suggested_rule: "write_file(path=a.txt)".into(),
        }
    }

    fn later() -> SystemTime {
        SystemTime::now() + Duration::from_secs(60)
    }

    #[test]
    fn a_sealed_question_opens_only_with_its_key_and_binds_the_call() {
        let key = StateKey::random();
        let asked = request(json!({"path": "a.txt", "content": "x"}));
        let sealed = Sealed::asking(&asked, later());
        let state = key.seal(&sealed, Duration::from_secs(60));
        let opened = key.open(&state).unwrap();
        assert_eq!(opened, sealed);
        assert_eq!(opened.check(&asked), Ok(()));
        // Key order does not matter; anything else does.
        assert_eq!(opened.check(&request(json!({"content": "x", "path": "a.txt"}))), Ok(()));
        assert_eq!(opened.check(&request(json!({"path": "b.txt", "content": "x"}))), Err(Mismatch::Args));
        let mut other = asked.clone();
        other.tool = "edit_file".into();
        assert_eq!(opened.check(&other), Err(Mismatch::Tool("write_file".into())));
        let mut wider = asked.clone();
        wider.suggested_rule = "write_file".into();
        assert_eq!(opened.check(&wider), Err(Mismatch::Question));
        // Another process's key, or a changed byte, does not open it.
        assert!(StateKey::random().open(&state).is_err());
        let mut tampered = state.clone().into_bytes();
        let at = tampered.len() / 2;
        tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
        assert!(key.open(&String::from_utf8(tampered).unwrap()).is_err());
        // Two questions about the same call differ by their nonce.
        assert_ne!(Sealed::asking(&asked, later()).nonce, sealed.nonce);
    }

    #[test]
    fn an_expired_question_does_not_open() {
        let key = StateKey::random();
        let state = key.seal(&Sealed::asking(&request(json!({})), later()), Duration::from_millis(1));
        std::thread::sleep(Duration::from_millis(20));
        assert!(matches!(key.open(&state), Err(RequestStateError::Expired)));
    }

    #[test]
    fn key_files_are_private_and_long_enough() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str, mode: u32| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            path
        };
        let good = write("good", "0123456789abcdef0123456789abcdef\n", 0o600);
        let a = StateKey::from_file(&good).unwrap();
        let b = StateKey::from_file(&good).unwrap();
        assert!(a.is_shared() && !StateKey::random().is_shared());
        let sealed = Sealed::asking(&request(json!({})), later());
        assert_eq!(b.open(&a.seal(&sealed, Duration::from_secs(60))).unwrap(), sealed);
        let readable = write("readable", "0123456789abcdef0123456789abcdef", 0o640);
        let short = write("short", "too short\n", 0o600);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&good, &link).unwrap();
        for (path, expected) in [
            (readable, "chmod 600"),
            (short, "at least 32"),
            (link, "symlink"),
            (dir.path().join("missing"), "no such file"),
        ] {
            let error = StateKey::from_file(&path).unwrap_err().to_string();
            assert!(error.contains(expected), "{error}");
        }
    }
}
