//! What a component asks for and whether its grants cover it, judged from its
//! imports at load, before any of its code runs: identity (the pinned sha256),
//! each import against the grants (`capability_denied`, naming the key that would
//! grant it), and what `toolhost inspect` shows it requests.

use crate::error::LoadError;
use crate::policy::grants::{FsGrant, PluginGrants, Sockets};

/// Import prefixes a plugin may have. Anything else is refused at load,
/// before any of its code runs.
const GRANTED_IMPORTS: &[(&str, &str)] = &[
    ("toolhost:plugin/", "the toolhost contract"),
    ("wasi:cli/", "args, env and stdio (all empty or captured)"),
    ("wasi:io/", "streams"),
    ("wasi:clocks/", "clocks"),
    ("wasi:random/", "random numbers"),
    ("wasi:filesystem/", "the work dir preopen, when the call grants it"),
];

/// The pinned-fetch interface: granted only to a plugin whose network grant lists hosts.
const FETCH_INTERFACE: &str = "toolhost:plugin/fetch";

/// The `wasi:http` client interfaces: granted, like fetch, only to a plugin whose network
/// grant lists hosts; every request goes through the pinned client.
const HTTP_CLIENT_INTERFACES: [&str; 2] = ["wasi:http/outgoing-handler", "wasi:http/types"];

/// `wasi:config/store` (any version): granted only to a plugin whose entry has `config`.
const CONFIG_INTERFACE: &str = "wasi:config/store";

/// The exec interface: granted only to a plugin whose grant lists programs or the shell.
const EXEC_INTERFACE: &str = "toolhost:plugin/exec";

/// The search interface: granted only to a plugin granted the work dir (it reads it).
const SEARCH_INTERFACE: &str = "toolhost:plugin/search";

/// Socket interfaces: linked only when the grants stub them (every operation refused).
const SOCKETS_PREFIX: &str = "wasi:sockets/";

/// The import names of `component`, sorted.
pub(crate) fn imports_of(
    engine: &wasmtime::Engine,
    component: &wasmtime::component::Component,
) -> Vec<String> {
    let mut names: Vec<String> =
        component.component_type().imports(engine).map(|(name, _)| name.to_string()).collect();
    names.sort();
    names
}

pub(crate) fn is_fetch(import: &str) -> bool {
    import.strip_prefix(FETCH_INTERFACE).is_some_and(|rest| rest.is_empty() || rest.starts_with('@'))
}

/// `wasi:http/outgoing-handler` or `wasi:http/types` (any version).
pub(crate) fn is_http_client(import: &str) -> bool {
    HTTP_CLIENT_INTERFACES.iter().any(|interface| {
        import.strip_prefix(interface).is_some_and(|rest| rest.is_empty() || rest.starts_with('@'))
    })
}

/// `wasi:config/store` (any version).
pub(crate) fn is_config(import: &str) -> bool {
    import.strip_prefix(CONFIG_INTERFACE).is_some_and(|rest| rest.is_empty() || rest.starts_with('@'))
}

pub(crate) fn is_exec(import: &str) -> bool {
    import.strip_prefix(EXEC_INTERFACE).is_some_and(|rest| rest.is_empty() || rest.starts_with('@'))
}

/// `toolhost:plugin/search` (any version).
pub(crate) fn is_search(import: &str) -> bool {
    import.strip_prefix(SEARCH_INTERFACE).is_some_and(|rest| rest.is_empty() || rest.starts_with('@'))
}

/// Refuse bytes whose `sha256` is not the one `grants` pins (`identity_mismatch`).
pub(crate) fn check_identity(name: &str, sha256: &str, grants: &PluginGrants) -> Result<(), LoadError> {
    match &grants.sha256 {
        Some(expected) if !expected.eq_ignore_ascii_case(sha256) => Err(LoadError::IdentityMismatch {
            plugin: name.to_string(),
            expected: expected.clone(),
            actual: sha256.to_string(),
        }),
        _ => Ok(()),
    }
}

/// Refuse any import `grants` does not cover, naming it and the grant that would
/// cover it: `toolhost:plugin/fetch` needs network hosts, `wasi:sockets` the stub,
/// anything outside [`GRANTED_IMPORTS`] is never provided.
pub(crate) fn check_imports(imports: &[String], grants: &PluginGrants) -> Result<(), LoadError> {
    for import in imports {
        let denied = |why: String| LoadError::CapabilityDenied { interface: import.clone(), why };
        if is_fetch(import) || is_http_client(import) {
            if grants.net.is_empty() {
                let how = grants.source.how_to_grant("network", "[\"HOST\", …]", "--allow-host PATTERN");
                return Err(denied(format!(
                    "no network hosts are granted to this plugin (grant some with {how})"
                )));
            }
            continue;
        }
        if is_config(import) {
            if grants.config.is_empty() {
                let how = grants.source.how_to_grant(
                    "config",
                    "{ KEY = \"value\", KEY2 = { env = \"NAME\" } }",
                    "a policy entry",
                );
                return Err(denied(format!(
                    "no config values are granted to this plugin (grant some with {how})"
                )));
            }
            continue;
        }
        if is_exec(import) {
            if grants.exec.is_empty() {
                let how = grants.source.how_to_grant(
                    "exec",
                    "{ programs = [\"NAME\", …] }",
                    "--allow-program NAME",
                );
                return Err(denied(format!(
                    "no programs are granted to this plugin (grant some with {how})"
                )));
            }
            continue;
        }
        if is_search(import) && grants.fs == FsGrant::None {
            let how = grants.source.how_to_grant("filesystem", "\"read\"", "a policy entry");
            return Err(denied(format!(
                "this plugin is granted no filesystem, and the search reads the work dir (grant it with {how})"
            )));
        }
        if import.starts_with(SOCKETS_PREFIX) {
            if grants.sockets == Sockets::Stub {
                continue;
            }
            let how = grants.source.how_to_grant("sockets", "\"stub\"", "--stub-sockets");
            return Err(denied(format!(
                "plugins get no sockets; network access is only through the host's pinned fetch. \
                 A runtime that imports sockets without using them can be linked with every socket \
                 operation refused: {how}"
            )));
        }
        if GRANTED_IMPORTS.iter().any(|(prefix, _)| import.starts_with(prefix)) {
            continue;
        }
        let why = if import.starts_with("wasi:http/") {
            "plugins may make outgoing requests (wasi:http/outgoing-handler) but never serve HTTP"
        } else {
            "the host does not provide this interface to plugins"
        };
        return Err(denied(why.into()));
    }
    Ok(())
}

/// What a component asks for, read from its imports.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Requested {
    /// It imports `wasi:filesystem` or `toolhost:plugin/search` (it can use the
    /// work dir if it is granted it).
    pub filesystem: bool,
    /// It imports `toolhost:plugin/fetch` (it needs network hosts).
    pub fetch: bool,
    /// It imports `wasi:http`'s client interfaces (it needs network hosts).
    pub http: bool,
    /// It imports `wasi:config/store` (it needs `config` values in its entry).
    pub config: bool,
    /// It imports `wasi:sockets` (only ever stubbed).
    pub sockets: bool,
    /// It imports `toolhost:plugin/exec` (it needs an exec grant).
    pub exec: bool,
    /// It imports `wasi:cli/environment` (it can read granted env variables).
    pub env: bool,
    /// Imports the host never provides.
    pub unknown: Vec<String>,
}

impl Requested {
    /// Read the requests off `imports`.
    pub fn from_imports(imports: &[String]) -> Self {
        let mut requested = Requested::default();
        for import in imports {
            if is_fetch(import) {
                requested.fetch = true;
            } else if is_http_client(import) {
                requested.http = true;
            } else if is_config(import) {
                requested.config = true;
            } else if is_exec(import) {
                requested.exec = true;
            } else if import.starts_with(SOCKETS_PREFIX) {
                requested.sockets = true;
            } else if import.starts_with("wasi:filesystem/") || is_search(import) {
                requested.filesystem = true;
            } else if import.starts_with("wasi:cli/environment") {
                requested.env = true;
            } else if !GRANTED_IMPORTS.iter().any(|(prefix, _)| import.starts_with(prefix)) {
                requested.unknown.push(import.clone());
            }
        }
        requested
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limits;
    use crate::imports::fetch::HostPattern;
    use crate::policy::grants::GrantSource;

    /// Grants of an ad-hoc plugin whose network lists `example.com`.
    fn with_hosts() -> PluginGrants {
        let mut grants = PluginGrants::new(GrantSource::AdHoc, Limits::default());
        grants.net.hosts = vec![HostPattern::parse("example.com").expect("pattern")];
        grants
    }

    fn refusal(imports: &[&str], grants: &PluginGrants) -> Option<(String, String)> {
        let imports: Vec<String> = imports.iter().map(|i| (*i).to_owned()).collect();
        match check_imports(&imports, grants) {
            Ok(()) => None,
            Err(LoadError::CapabilityDenied { interface, why }) => Some((interface, why)),
            Err(other) => panic!("expected capability_denied, got {other}"),
        }
    }

    #[test]
    fn serving_http_is_refused_even_with_network_hosts() {
        let grants = with_hosts();
        let client = ["wasi:http/types@0.2.6", "wasi:http/outgoing-handler@0.2.6"];
        assert_eq!(refusal(&client, &grants), None, "the client interfaces are granted");
        for serving in ["wasi:http/incoming-handler@0.2.0", "wasi:http/incoming-handler@0.2.6"] {
            let (interface, why) = refusal(&[client[0], serving], &grants).expect("refused");
            assert_eq!(interface, serving);
            assert!(why.contains("never serve HTTP"), "{why}");
        }
    }

    #[test]
    fn the_client_interfaces_without_hosts_are_refused_naming_the_grant() {
        let grants = PluginGrants::new(GrantSource::AdHoc, Limits::default());
        for import in ["wasi:http/types@0.2.0", "wasi:http/outgoing-handler@0.2.6"] {
            let (interface, why) = refusal(&[import], &grants).expect("refused");
            assert_eq!(interface, import);
            assert!(why.contains("--allow-host"), "{why}");
        }
        assert!(Requested::from_imports(&["wasi:http/types@0.2.0".into()]).http);
    }

    #[test]
    fn the_search_needs_the_work_dir() {
        let mut grants = PluginGrants::new(GrantSource::AdHoc, Limits::default());
        let import = ["toolhost:plugin/search@0.1.0"];
        assert_eq!(refusal(&import, &grants), None, "granted with the work dir");
        grants.fs = FsGrant::Read;
        assert_eq!(refusal(&import, &grants), None);
        grants.fs = FsGrant::None;
        let (interface, why) = refusal(&import, &grants).expect("refused without it");
        assert_eq!(interface, import[0]);
        assert!(why.contains("granted no filesystem") && why.contains("filesystem = \"read\""), "{why}");
        assert!(Requested::from_imports(&[import[0].into()]).filesystem);
    }
}
