//! What a component asks for and whether its grants cover it, judged from its
//! imports at load, before any of its code runs: identity (the pinned sha256),
//! each import against the grants (`capability_denied`, naming the key that would
//! grant it), and what `toolhost inspect` shows it requests.

use crate::error::LoadError;
use crate::imports::CAPABILITIES;
use crate::imports::capability::{Capability, providing};
use crate::policy::grants::PluginGrants;

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
/// cover it (each capability says which it needs: [`crate::imports::CAPABILITIES`]);
/// an import no capability provides is never linked.
pub(crate) fn check_imports(imports: &[String], grants: &PluginGrants) -> Result<(), LoadError> {
    for import in imports {
        let denied = |why: String| LoadError::CapabilityDenied { interface: import.clone(), why };
        match providing(CAPABILITIES, import) {
            Some(Capability { needs: Some(need), .. }) if !grants.holds(need.key) => {
                let how = grants.source.how_to_grant(need.key, need.example, need.flag);
                return Err(denied(need.refusal(&how)));
            }
            Some(_) => {}
            None if import.starts_with("wasi:http/") => {
                return Err(denied(
                    "plugins may make outgoing requests (wasi:http/outgoing-handler) but never serve HTTP"
                        .into(),
                ));
            }
            None => return Err(denied("the host does not provide this interface to plugins".into())),
        }
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
            let Some(capability) = providing(CAPABILITIES, import) else {
                requested.unknown.push(import.clone());
                continue;
            };
            match capability.name {
                "fetch" => requested.fetch = true,
                "http" => requested.http = true,
                "config" => requested.config = true,
                "exec" => requested.exec = true,
                "sockets" => requested.sockets = true,
                "filesystem" | "search" => requested.filesystem = true,
                "env" => requested.env = true,
                _ => {}
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
    use crate::policy::grants::{FsGrant, GrantSource};

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

    #[test]
    fn every_grant_a_capability_needs_is_one_the_grants_hold_or_lack() {
        let none = {
            let mut grants = PluginGrants::new(GrantSource::AdHoc, Limits::default());
            grants.fs = FsGrant::None;
            grants
        };
        let mut all = with_hosts();
        all.config =
            vec![crate::imports::config::ConfigValue { key: "k".into(), value: "v".into(), from_env: None }];
        all.exec.programs = vec!["git".into()];
        all.sockets = crate::policy::grants::Sockets::Stub;
        let needing: Vec<_> = CAPABILITIES.iter().filter_map(|c| Some((c.name, c.needs.as_ref()?))).collect();
        assert!(needing.len() >= 6, "{needing:?}");
        for (name, need) in needing {
            assert!(all.holds(need.key), "{name}: no grant answers to the key {:?}", need.key);
            assert!(!none.holds(need.key), "{name}: {:?} held by empty grants", need.key);
            let import = CAPABILITIES.iter().find(|c| c.name == name).unwrap().interfaces[0].to_string();
            let import = if import.ends_with('/') { format!("{import}x") } else { format!("{import}@0.1.0") };
            assert_eq!(refusal(&[&import], &all), None, "{name} granted");
            let (_, why) = refusal(&[&import], &none).unwrap_or_else(|| panic!("{name}: not refused"));
            assert!(why.contains(&format!(".{} = {}", need.key, need.example)), "{name}: {why}");
            assert!(!why.contains("{how}"), "{why}");
        }
    }
}
