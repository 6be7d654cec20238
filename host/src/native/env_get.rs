//! `env_get`: the environment variables granted to the builtin tools (`[builtins]
//! env` in the policy) — never any other. A value whose name looks like a secret is
//! shown as `<redacted: N chars>` unless the policy lists the name in `reveal`.

use std::fmt::Write as _;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{NativeCall, NativeOutput, NativeTool};
use crate::error::CallError;
use crate::load::spec::ToolSpec;
use crate::policy::env::looks_secret;

/// The tool, with the granted variables and the names it may reveal.
pub(crate) struct EnvGet {
    pub(crate) vars: Vec<(String, String)>,
    pub(crate) reveal: Vec<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Exact variable names.
    names: Option<Vec<String>>,
    /// Only names starting with this.
    prefix: Option<String>,
}

impl EnvGet {
    /// The value as shown: masked when the name looks secret and is not revealed.
    fn shown(&self, name: &str, value: &str) -> String {
        if looks_secret(name) && !self.reveal.iter().any(|r| r == name) {
            format!("<redacted: {} chars>", value.chars().count())
        } else {
            value.to_string()
        }
    }
}

impl NativeTool for EnvGet {
    fn redacted(&self) -> bool {
        false
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "env_get".into(),
            description: "Read environment variables granted to the tools (only those; the host's other \
                variables are not visible). Give `names` for specific ones or `prefix` to list a family; \
                without either, lists every granted variable. Values of names that look like secrets \
                (token, key, password, …) are masked as <redacted: N chars>."
                .into(),
            parameters: super::args_schema::<Args>(),
            read_only: true,
            destructive: false,
            timeout_ms: None,
        }
    }

    fn call<'a>(
        &'a self,
        args: Value,
        _call: NativeCall<'a>,
    ) -> BoxFuture<'a, Result<NativeOutput, CallError>> {
        Box::pin(async move {
            let args: Args = super::parse_args(args)?;
            let mut out = String::new();
            let mut found = serde_json::Map::new();
            let mut missing = Vec::new();
            let selected: Vec<&(String, String)> = match &args.names {
                Some(names) => names
                    .iter()
                    .filter_map(|n| {
                        let hit = self.vars.iter().find(|(k, _)| k == n);
                        if hit.is_none() {
                            missing.push(n.clone());
                        }
                        hit
                    })
                    .collect(),
                None => self.vars.iter().collect(),
            };
            for (name, value) in selected {
                if args.prefix.as_deref().is_some_and(|p| !name.starts_with(p)) {
                    continue;
                }
                let shown = self.shown(name, value);
                let _ = writeln!(out, "{name}={shown}");
                found.insert(name.clone(), Value::String(shown));
            }
            for name in &missing {
                let _ = writeln!(out, "{name}: not set or not granted");
            }
            if found.is_empty() && missing.is_empty() {
                out.push_str("no granted variable matches\n");
            }
            Ok(NativeOutput { content: out, metadata: Some(json!({"vars": found, "missing": missing})) })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_looking_values_are_masked_unless_revealed() {
        let tool = EnvGet { vars: vec![], reveal: vec!["DEPLOY_KEY".into()] };
        assert_eq!(tool.shown("API_TOKEN", "abcdef"), "<redacted: 6 chars>");
        assert_eq!(tool.shown("DEPLOY_KEY", "abc"), "abc");
        assert_eq!(tool.shown("LANG", "C.UTF-8"), "C.UTF-8");
    }
}
