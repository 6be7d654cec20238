//! Registry credentials and the challenges that ask for them.
//!
//! Anonymous by default. With `--registry-auth` the user's `docker login` file
//! (`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`) is read for the
//! registry's own entry: `auth` (base64 `user:password`) or `username`/`password` is
//! basic auth, `registrytoken` a bearer token. Credential helpers (`credsStore`,
//! `credHelpers`) and identity tokens are not run or used.
//!
//! On a `401` the `WWW-Authenticate` challenge decides: `Basic` sends the basic
//! credentials; `Bearer realm=…,service=…,scope=…` asks the realm for a token (the
//! realm URL vetted like any hop) and sends that. Credentials go only to the registry's
//! own origin: a realm on another host is asked anonymously. Nothing here is ever
//! printed or logged: `Debug` shows only which kind of credential there is.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use reqwest::header::HeaderValue;
use serde::Deserialize;

use super::OciError;

/// Largest docker config file read.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// What the registry is sent when it asks.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum Credentials {
    /// Nothing.
    #[default]
    Anonymous,
    /// HTTP basic auth.
    Basic {
        /// The user name.
        username: String,
        /// The password (or a personal access token used as one).
        password: String,
    },
    /// A bearer token sent as it is.
    Bearer(String),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Anonymous => "Anonymous",
            Self::Basic { .. } => "Basic(<redacted>)",
            Self::Bearer(_) => "Bearer(<redacted>)",
        })
    }
}

impl Credentials {
    /// The `Authorization` value of basic credentials.
    pub(crate) fn basic_header(&self) -> Option<HeaderValue> {
        let Self::Basic { username, password } = self else { return None };
        let mut value =
            HeaderValue::from_str(&format!("Basic {}", STANDARD.encode(format!("{username}:{password}"))))
                .ok()?;
        value.set_sensitive(true);
        Some(value)
    }

    /// The credentials for `registry` (`HOST[:PORT]`) in the docker config file at
    /// `path` (default: `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`).
    pub fn from_docker_config(registry: &str, path: Option<&Path>) -> Result<Self, OciError> {
        let path = match path {
            Some(path) => path.to_path_buf(),
            None => default_docker_config().ok_or_else(|| {
                OciError::Key("--registry-auth: no docker config (set DOCKER_CONFIG or HOME)".into())
            })?,
        };
        let err = |why: String| OciError::Key(format!("--registry-auth: {}: {why}", path.display()));
        let bytes = confine::hostfs::read_regular_following(&path, MAX_CONFIG_BYTES)
            .map_err(|e| err(e.to_string()))?
            .ok_or_else(|| err("no such file".into()))?;
        let config: DockerConfig =
            serde_json::from_slice(&bytes).map_err(|e| err(format!("not a docker config: {e}")))?;
        let entry = config.auths.iter().find(|(key, _)| same_registry(key, registry)).map(|(_, entry)| entry);
        let Some(entry) = entry else {
            let helper = config.cred_helpers.contains_key(registry) || config.creds_store.is_some();
            return Err(err(if helper {
                format!(
                    "{registry} is kept by a credential helper, which toolhost does not run; log in without one"
                )
            } else {
                format!("no entry for {registry} under `auths`")
            }));
        };
        if let Some(token) = entry.registrytoken.as_ref().filter(|t| !t.is_empty()) {
            return Ok(Self::Bearer(token.clone()));
        }
        if let (Some(username), Some(password)) = (&entry.username, &entry.password) {
            return Ok(Self::Basic { username: username.clone(), password: password.clone() });
        }
        if let Some(auth) = entry.auth.as_ref().filter(|a| !a.is_empty()) {
            let decoded = STANDARD
                .decode(auth.trim())
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(|| err(format!("the `auth` of {registry} is not base64 of user:password")))?;
            let (username, password) = decoded
                .split_once(':')
                .ok_or_else(|| err(format!("the `auth` of {registry} is not user:password")))?;
            return Ok(Self::Basic { username: username.into(), password: password.into() });
        }
        if entry.identitytoken.is_some() {
            return Err(err(format!(
                "{registry} has only an identity token, which toolhost does not exchange"
            )));
        }
        Err(err(format!("the entry for {registry} holds no credentials")))
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct DockerConfig {
    #[serde(default)]
    auths: HashMap<String, AuthEntry>,
    #[serde(default)]
    creds_store: Option<String>,
    #[serde(default)]
    cred_helpers: HashMap<String, String>,
}

#[derive(Deserialize, Default)]
struct AuthEntry {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
    identitytoken: Option<String>,
    registrytoken: Option<String>,
}

fn default_docker_config() -> Option<PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    env("DOCKER_CONFIG")
        .map(|d| d.join("config.json"))
        .or_else(|| env("HOME").map(|h| h.join(".docker").join("config.json")))
}

/// Whether a docker config key (`host:port`, or a URL such as `https://host/v1/`)
/// names exactly `registry`.
fn same_registry(key: &str, registry: &str) -> bool {
    let key = key.strip_prefix("https://").or_else(|| key.strip_prefix("http://")).unwrap_or(key);
    let key = key.split('/').next().unwrap_or("");
    key.eq_ignore_ascii_case(registry)
}

/// A parsed `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Challenge {
    /// Send basic credentials.
    Basic,
    /// Ask `realm` for a token for `service` and `scope`.
    Bearer { realm: String, service: Option<String>, scope: Option<String> },
}

/// The first challenge of a scheme we answer, from every `WWW-Authenticate` value.
pub(crate) fn parse_challenges<'a>(values: impl Iterator<Item = &'a HeaderValue>) -> Option<Challenge> {
    for value in values {
        let Ok(text) = value.to_str() else { continue };
        for challenge in http_auth::parser::ChallengeParser::new(text).flatten() {
            let param = |name: &str| {
                challenge
                    .params
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v.to_unescaped())
            };
            if challenge.scheme.eq_ignore_ascii_case("basic") {
                return Some(Challenge::Basic);
            }
            if challenge.scheme.eq_ignore_ascii_case("bearer")
                && let Some(realm) = param("realm")
            {
                return Some(Challenge::Bearer { realm, service: param("service"), scope: param("scope") });
            }
        }
    }
    None
}

/// A token server's answer.
#[derive(Deserialize)]
pub(crate) struct TokenAnswer {
    token: Option<String>,
    access_token: Option<String>,
}

impl TokenAnswer {
    /// The token as an `Authorization` value (marked sensitive).
    pub(crate) fn header(&self) -> Option<HeaderValue> {
        let token = self.token.as_ref().or(self.access_token.as_ref()).filter(|t| !t.is_empty())?;
        let mut value = HeaderValue::from_str(&format!("Bearer {token}")).ok()?;
        value.set_sensitive(true);
        Some(value)
    }
}

/// `Authorization: Bearer TOKEN` for a token given as it is.
pub(crate) fn bearer_header(token: &str) -> Option<HeaderValue> {
    let mut value = HeaderValue::from_str(&format!("Bearer {token}")).ok()?;
    value.set_sensitive(true);
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_parsed_with_their_parameters() {
        let h = |s: &str| HeaderValue::from_str(s).unwrap();
        let values =
            [h(r#"Bearer realm="https://auth.example/token",service="reg",scope="repository:a/b:pull""#)];
        assert_eq!(
            parse_challenges(values.iter()),
            Some(Challenge::Bearer {
                realm: "https://auth.example/token".into(),
                service: Some("reg".into()),
                scope: Some("repository:a/b:pull".into()),
            })
        );
        let values = [h("Newauth x=1"), h(r#"Basic realm="registry""#)];
        assert_eq!(parse_challenges(values.iter()), Some(Challenge::Basic));
        assert_eq!(
            parse_challenges([h("Bearer service=x")].iter()),
            None,
            "a bearer challenge needs a realm"
        );
        assert_eq!(parse_challenges([h("garbage ,,, ===")].iter()), None);
    }

    #[test]
    fn docker_config_entries_are_read_for_the_exact_registry_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        let auth = STANDARD.encode("alice:s3cret");
        std::fs::write(
            &path,
            format!(
                r#"{{"auths": {{"127.0.0.1:5000": {{"auth": "{auth}"}}, "https://reg.example/v1/": {{"registrytoken": "tok"}},
                "other:1": {{"username": "bob", "password": "pw"}}, "idt:1": {{"identitytoken": "x"}}}},
                "credHelpers": {{"helped:1": "pass"}}}}"#
            ),
        )
        .unwrap();
        let creds = Credentials::from_docker_config("127.0.0.1:5000", Some(&path)).unwrap();
        assert!(
            matches!(&creds, Credentials::Basic { username, password } if username == "alice" && password == "s3cret")
        );
        assert_eq!(format!("{creds:?}"), "Basic(<redacted>)", "never printed");
        assert!(
            matches!(Credentials::from_docker_config("reg.example", Some(&path)).unwrap(), Credentials::Bearer(t) if t == "tok")
        );
        assert!(matches!(
            Credentials::from_docker_config("other:1", Some(&path)).unwrap(),
            Credentials::Basic { .. }
        ));
        // Another port is another registry.
        let err = Credentials::from_docker_config("127.0.0.1:5001", Some(&path)).unwrap_err().to_string();
        assert!(err.contains("no entry for 127.0.0.1:5001"), "{err}");
        let err = Credentials::from_docker_config("helped:1", Some(&path)).unwrap_err().to_string();
        assert!(err.contains("credential helper"), "{err}");
        let err = Credentials::from_docker_config("idt:1", Some(&path)).unwrap_err().to_string();
        assert!(err.contains("identity token"), "{err}");
        assert!(!err.contains("s3cret"));
    }
}
