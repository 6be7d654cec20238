//! Output redaction: the values of env variables granted to a plugin, and text
//! shaped like a secret (bearer tokens, AWS access keys, private key blocks, GitHub
//! and Slack tokens), are replaced before any output leaves the host: what the model
//! reads, the display, the metadata, error messages and the stored full output.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// What replaces a redacted value.
pub(crate) const REDACTED: &str = "[REDACTED]";

/// Granted values shorter than this are not redacted (`LANG=C` would blank every `C`),
/// except for variables whose names look secret.
const MIN_VALUE_LEN: usize = 8;

static SECRET_SHAPES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)",
        r"|(?i:\bbearer\s+)[A-Za-z0-9\-._~+/]{8,}=*",
        r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        r"|\bgh[pousr]_[A-Za-z0-9]{36,}\b",
        r"|\bgithub_pat_[A-Za-z0-9_]{40,}\b",
        r"|\bxox[abposr]-[A-Za-z0-9-]{10,}\b",
        r"|\bsk-[A-Za-z0-9_-]{20,}\b",
    ))
    .expect("secret patterns compile")
});

/// Redacts one plugin's output.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    values: Vec<String>,
}

impl Redactor {
    /// A redactor for a plugin granted `env`.
    pub fn new(env: &[(String, String)]) -> Self {
        let mut values: Vec<String> = env
            .iter()
            .filter(|(name, value)| {
                value.len() >= MIN_VALUE_LEN || (super::env::looks_secret(name) && value.len() >= 4)
            })
            .map(|(_, value)| value.clone())
            .collect();
        // Longest first, so a value containing another is replaced whole.
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Self { values }
    }

    /// `text` with every secret replaced by `REDACTED`.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for value in &self.values {
            if out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), REDACTED));
            }
        }
        match SECRET_SHAPES.replace_all(&out, REDACTED) {
            Cow::Borrowed(_) => out,
            Cow::Owned(replaced) => Cow::Owned(replaced),
        }
    }

    /// Redact every string inside a JSON value.
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(s) => {
                if let Cow::Owned(r) = self.redact(s) {
                    *s = r;
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            serde_json::Value::Object(map) => map.values_mut().for_each(|v| self.redact_json(v)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn granted_values_and_secret_shapes_are_redacted() {
        let r = Redactor::new(&[
            ("API_TOKEN".into(), "s3cr3t-value-123".into()),
            ("LANG".into(), "C".into()),
            ("DB_PASSWORD".into(), "hunter".into()),
        ]);
        let text = "token s3cr3t-value-123, lang C, pw hunter\nAuthorization: Bearer abcDEF123456789.xyz\n\
                    key AKIAIOSFODNN7EXAMPLE gh ghp_0123456789abcdefghijABCDEFGHIJ012345\n\
                    -----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\ndone";
        let out = r.redact(text);
        for secret in
            ["s3cr3t-value-123", "hunter", "abcDEF123456789", "AKIAIOSFODNN7EXAMPLE", "ghp_0123", "MIIEow"]
        {
            assert!(!out.contains(secret), "{secret} leaked: {out}");
        }
        assert!(out.contains("lang C"), "short non-secret values stay: {out}");
        assert!(out.ends_with("done"));
    }

    #[test]
    fn clean_text_is_not_copied() {
        assert!(matches!(Redactor::default().redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_strings_are_redacted() {
        let r = Redactor::new(&[("KEY".into(), "abcdefgh12".into())]);
        let mut v = serde_json::json!({"a": ["x abcdefgh12"], "b": {"c": "Bearer zzzzzzzzzz"}, "n": 1});
        r.redact_json(&mut v);
        assert_eq!(v, serde_json::json!({"a": ["x [REDACTED]"], "b": {"c": "[REDACTED]"}, "n": 1}));
    }
}
