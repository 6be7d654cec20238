//! Component hooks: a component exporting the WIT `hooks` interface (world
//! `tool-hook`), pinned by sha256, compiled once at load and instantiated fresh for
//! every call in a store with no capability at all: no filesystem, network,
//! processes or environment; the default memory cap and fuel; its own deadline.

use std::path::Path;
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::component::Linker;

use super::HookCall;
use super::answer::{Answer, Input};
use crate::bindings::hook::ToolHookPre;
use crate::engine::Engine;
use crate::error::LoadError;
use crate::limits::{Deadline, Limits};
use crate::load::capabilities::{check_identity, check_imports, imports_of};
use crate::load::inspect::read_component;
use crate::policy::grants::{FsGrant, GrantSource, PluginGrants};
use crate::sandbox::{CallState, Prepared, run_hook};

/// A loaded hook component.
pub(super) struct ComponentHook {
    prepared: Prepared<ToolHookPre<CallState>>,
    limits: Limits,
}

impl ComponentHook {
    /// Read `source`, check it against `sha256`, compile it (through the cache) and
    /// link it: it may import nothing a tool with no grants could not.
    pub(super) fn load(
        engine: &Engine,
        linker: &Linker<CallState>,
        source: &Path,
        sha256: &str,
        label: &str,
        timeout: Duration,
    ) -> Result<Self, LoadError> {
        let bytes = read_component(source)?;
        let actual = hex::encode(Sha256::digest(&bytes));
        let limits = Limits { timeout, max_timeout: timeout, ..Limits::default() };
        let mut grants =
            PluginGrants::new(GrantSource::Policy { name: format!("hooks {label}") }, limits.clone());
        grants.fs = FsGrant::None;
        grants.sha256 = Some(sha256.to_string());
        check_identity(&source.display().to_string(), &actual, &grants)?;
        crate::load::preflight::check_declared_imports(&bytes, &grants)?;
        let component = engine.component(&bytes, &actual)?.component;
        check_imports(&imports_of(engine.wasmtime(), &component), &grants)?;
        let pre = linker
            .instantiate_pre(&component)
            .and_then(ToolHookPre::new)
            .map_err(|e| LoadError::BadPlugin(format!("it does not export toolhost:plugin/hooks: {e:#}")))?;
        let prepared = Prepared {
            engine: engine.wasmtime().clone(),
            pre,
            name: label.into(),
            env: Vec::new().into(),
            config: Vec::new().into(),
        };
        Ok(Self { prepared, limits })
    }

    /// Ask it about `call`.
    pub(super) async fn run(&self, input: &Input, call: &HookCall<'_>) -> Result<Answer, String> {
        let deadline = Deadline::after(self.limits.timeout);
        let out = run_hook(&self.prepared, &self.limits, deadline, &input.wit, call.cancel)
            .await
            .map_err(|e| e.to_string())?;
        Answer::from_wit(out)
    }
}
