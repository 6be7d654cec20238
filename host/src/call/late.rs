//! Plugins that finish loading after the host is built
//! ([`HostBuilder::compile_in_background`](crate::HostBuilder::compile_in_background),
//! what `toolhost serve` does): a component whose code the compile cache does not
//! hold yet is checked against its pin and its grants at once (a refusal still
//! fails the build), then compiled on a blocking thread, linked and listed while
//! the host already serves everything else. Its tools join the registry when it is
//! ready and the host's tool version moves ([`Host::tools_changed`](crate::Host::tools_changed), which `serve`
//! turns into `notifications/tools/list_changed`). A call naming a tool nobody has
//! yet waits for the loads in flight before it is `unknown_tool`; a plugin that
//! fails to load is logged, and named in that error.

use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::watch;

use crate::engine::Engine;
use crate::error::LoadError;
use crate::load::plugin::Plugin;
use crate::load::registry::Registry;
use crate::policy::grants::PluginGrants;
use crate::sandbox::CallState;

/// One plugin to load later: checked already, not compiled.
pub(crate) struct Deferred {
    pub(crate) name: String,
    pub(crate) bytes: Vec<u8>,
    pub(crate) sha256: String,
    pub(crate) grants: PluginGrants,
    /// A remote component's store write, made once it has loaded.
    pub(crate) unstored: Option<crate::oci::pull::Unstored>,
}

/// What the host needs to finish a plugin's load the way `build` does.
pub(crate) struct Finish {
    pub(crate) engine: Engine,
    pub(crate) linker: wasmtime::component::Linker<CallState>,
    pub(crate) search: Vec<std::path::PathBuf>,
    pub(crate) work_dir: Option<std::path::PathBuf>,
}

/// The plugins loading, or loaded, after the build.
pub(crate) struct Late {
    /// Loaded, in the order they finished.
    loaded: RwLock<Vec<Arc<Plugin>>>,
    /// The plugins that did not load, and why.
    failed: Mutex<Vec<(String, String)>>,
    /// How many are still loading.
    pending: watch::Sender<usize>,
    /// The host's tool version (`Host::tools_changed`), moved on with each plugin loaded.
    version: watch::Sender<u64>,
}

impl Late {
    /// Start loading `deferred`, one after the other on the runtime of the caller.
    pub(crate) fn start(deferred: Vec<Deferred>, finish: Finish, version: watch::Sender<u64>) -> Arc<Self> {
        let late = Arc::new(Self {
            loaded: RwLock::new(Vec::new()),
            failed: Mutex::new(Vec::new()),
            pending: watch::Sender::new(deferred.len()),
            version,
        });
        let weak = Arc::downgrade(&late);
        tokio::spawn(async move {
            for plugin in deferred {
                let name = plugin.name.clone();
                let outcome = load(plugin, &finish).await;
                // The host is gone: nobody waits for the rest.
                let Some(late) = weak.upgrade() else { return };
                match outcome {
                    Ok(plugin) => late.loaded.write().unwrap_or_else(|e| e.into_inner()).push(plugin),
                    Err(err) => {
                        tracing::error!(plugin = %name, "not loaded: {err}");
                        late.failed.lock().unwrap_or_else(|e| e.into_inner()).push((name, err.to_string()));
                    }
                }
                // The version first: whoever sees the loads settled sees the new list.
                late.version.send_modify(|v| *v += 1);
                late.pending.send_modify(|n| *n = n.saturating_sub(1));
            }
        });
        late
    }

    /// Wait until every plugin has loaded or failed; `false` when none was loading.
    pub(crate) async fn settled(&self) -> bool {
        let mut pending = self.pending.subscribe();
        if *pending.borrow_and_update() == 0 {
            return false;
        }
        // The sender lives as long as `self`.
        let _ = pending.wait_for(|n| *n == 0).await;
        true
    }

    /// The plugins that failed to load, and why.
    pub(crate) fn failures(&self) -> Vec<(String, String)> {
        self.failed.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Register the loaded plugins' tools in `registry`; a plugin whose tools
    /// clash with one there already is left out (and recorded as failed).
    pub(crate) fn register_into(&self, registry: &mut Registry) {
        for plugin in self.loaded.read().unwrap_or_else(|e| e.into_inner()).iter() {
            if let Err(err) = registry.register(plugin.clone()) {
                let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
                if !failed.iter().any(|(name, _)| name == plugin.name()) {
                    tracing::error!(plugin = %plugin.name(), "not loaded: {err}");
                    failed.push((plugin.name().to_string(), err.to_string()));
                }
            }
        }
    }
}

/// Compile `plugin` (off the runtime's threads), link it and list its tools.
async fn load(plugin: Deferred, finish: &Finish) -> Result<Arc<Plugin>, LoadError> {
    let Deferred { name, bytes, sha256, grants, unstored } = plugin;
    let bytes: Arc<[u8]> = bytes.into();
    let engine = finish.engine.clone();
    let (for_compile, key, label) = (bytes.clone(), sha256.clone(), name.clone());
    let loaded = tokio::task::spawn_blocking(move || engine.component_tiered(&label, &for_compile, &key))
        .await
        .map_err(|e| LoadError::BadPlugin(format!("{name}: compiling it failed: {e}")))??;
    let mut plugin =
        Plugin::from_component(&finish.engine, &finish.linker, &name, &bytes, sha256, loaded, &grants)
            .await?;
    if let Some(unstored) = unstored {
        unstored.keep_loaded(&name, &bytes)?;
    }
    plugin.resolve_exec(&finish.search, finish.work_dir.as_deref());
    Ok(Arc::new(plugin))
}
