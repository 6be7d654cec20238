//! Which environment variables a plugin sees: the names its grant lists, taken from
//! the host's environment. A name may be a glob (`LC_*`); a glob never lets through
//! a variable whose name looks like a secret — those pass only when named exactly.

use globset::{Glob, GlobMatcher};

/// Parts of a variable name that mark it as a secret.
const SECRET_WORDS: &[&str] = &["token", "secret", "password", "passwd", "key", "credential", "auth"];

/// Whether `name` looks like it holds a secret.
pub(crate) fn looks_secret(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|word| lower.contains(word))
}

/// One entry of a plugin's `env` list: an exact name or a glob.
#[derive(Debug, Clone)]
pub struct EnvName {
    text: String,
    glob: Option<GlobMatcher>,
}

impl EnvName {
    /// Parse an entry; an entry with `*`, `?` or `[` is a glob.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() || text.contains('=') || text.contains('\0') {
            return Err(format!("`{text}` is not an environment variable name"));
        }
        let glob = if text.contains(['*', '?', '[']) {
            Some(Glob::new(text).map_err(|e| format!("env pattern `{text}`: {e}"))?.compile_matcher())
        } else {
            None
        };
        Ok(Self { text: text.to_string(), glob })
    }

    /// The entry as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    fn admits(&self, name: &str) -> bool {
        match &self.glob {
            None => self.text == name,
            Some(glob) => glob.is_match(name) && !looks_secret(name),
        }
    }
}

/// The variables of `host_env` that `names` grant, sorted by name.
pub(crate) fn select(
    names: &[EnvName],
    host_env: impl IntoIterator<Item = (String, String)>,
) -> Vec<(String, String)> {
    let mut picked: Vec<(String, String)> =
        host_env.into_iter().filter(|(name, _)| names.iter().any(|n| n.admits(name))).collect();
    picked.sort();
    picked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Vec<(String, String)> {
        [
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C"),
            ("GITHUB_TOKEN", "ghp_x"),
            ("MY_API_KEY", "k"),
            ("HOME", "/root"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    fn names(list: &[&str]) -> Vec<EnvName> {
        list.iter().map(|n| EnvName::parse(n).unwrap()).collect()
    }

    #[test]
    fn only_granted_names_pass() {
        let got = select(&names(&["LANG"]), env());
        assert_eq!(got, vec![("LANG".to_string(), "C.UTF-8".to_string())]);
        assert!(select(&[], env()).is_empty());
    }

    #[test]
    fn globs_never_pass_secret_looking_names() {
        let got: Vec<String> = select(&names(&["*"]), env()).into_iter().map(|(k, _)| k).collect();
        assert_eq!(got, ["HOME", "LANG", "LC_ALL"]);
        let exact: Vec<String> =
            select(&names(&["*", "GITHUB_TOKEN"]), env()).into_iter().map(|(k, _)| k).collect();
        assert_eq!(exact, ["GITHUB_TOKEN", "HOME", "LANG", "LC_ALL"]);
    }

    #[test]
    fn secret_words() {
        for name in
            ["GITHUB_TOKEN", "aws_secret_access_key", "DB_PASSWORD", "OAUTH_X", "Credentials", "SSH_KEY"]
        {
            assert!(looks_secret(name), "{name}");
        }
        assert!(!looks_secret("LANG"));
        assert!(EnvName::parse("A=B").is_err());
        assert!(EnvName::parse("[").is_err());
    }
}
