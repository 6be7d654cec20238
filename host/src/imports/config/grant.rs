//! A plugin's `config` table, what `wasi:config/store` hands its component:
//!
//! ```toml
//! [plugins.weather]
//! config = { OPENWEATHER_API_KEY = { env = "OPENWEATHER_API_KEY" }, units = "metric" }
//! ```
//!
//! A value is given in the policy, or taken from the host variable an entry names (never
//! from the host's environment otherwise). Values taken from the environment are secrets:
//! the plugin's redactor removes them from everything its calls return.

use serde::Deserialize;

/// Where one config value comes from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum ConfigSource {
    /// The value itself, as the policy gives it.
    Literal(String),
    /// The host environment variable of this name (`{ env = "NAME" }`).
    Env {
        /// The variable's name.
        env: String,
    },
}

/// One resolved config value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigValue {
    /// The key the component asks for.
    pub key: String,
    /// Its value.
    pub value: String,
    /// The host variable it was taken from, if any (then it is redacted).
    pub from_env: Option<String>,
}

/// Check a config key: non-empty, no control characters.
pub(crate) fn check_key(key: &str) -> Result<(), String> {
    if key.is_empty() || key.chars().any(char::is_control) {
        return Err(format!("config key {key:?}: must be non-empty, without control characters"));
    }
    Ok(())
}

/// The values of `entries`, variables looked up in `host_env`. A variable that is not
/// set leaves its key out (the component sees `none`), with a warning.
pub(crate) fn resolve(entries: &[(String, ConfigSource)], host_env: &[(String, String)]) -> Vec<ConfigValue> {
    let mut out = Vec::new();
    for (key, source) in entries {
        match source {
            ConfigSource::Literal(value) => {
                out.push(ConfigValue { key: key.clone(), value: value.clone(), from_env: None })
            }
            ConfigSource::Env { env } => match host_env.iter().find(|(name, _)| name == env) {
                Some((_, value)) => out.push(ConfigValue {
                    key: key.clone(),
                    value: value.clone(),
                    from_env: Some(env.clone()),
                }),
                None => tracing::warn!(key, env, "config: the variable is not set; the key is left out"),
            },
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_named_variables_only() {
        let entries = vec![
            ("units".to_owned(), ConfigSource::Literal("metric".into())),
            ("API_KEY".to_owned(), ConfigSource::Env { env: "WEATHER_KEY".into() }),
            ("MISSING".to_owned(), ConfigSource::Env { env: "NOT_SET".into() }),
        ];
        let host_env =
            vec![("WEATHER_KEY".to_owned(), "s3cr3t-value".to_owned()), ("HOME".into(), "/root".into())];
        let got = resolve(&entries, &host_env);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(
            (got[0].key.as_str(), got[0].value.as_str(), got[0].from_env.as_deref()),
            ("units", "metric", None)
        );
        assert_eq!(got[1].value, "s3cr3t-value");
        assert_eq!(got[1].from_env.as_deref(), Some("WEATHER_KEY"));
        assert!(got.iter().all(|v| v.value != "/root"), "nothing else of the host env");
        assert!(
            check_key("").is_err() && check_key("a\nb").is_err() && check_key("OPENWEATHER_API_KEY").is_ok()
        );
    }
}
