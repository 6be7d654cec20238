//! What a plugin's calls instantiate, linked for the engine whose code it is: a
//! component compiled by the baseline tier is linked by a linker of the baseline
//! engine and runs in stores of that engine; when the optimised code arrives it
//! is linked by the host's linker and replaces the baseline's whole
//! ([`Tiered`]), so no call ever mixes the two.

use std::borrow::Cow;
use std::sync::Arc;

use wasmtime::component::{Component, ComponentExportIndex, InstancePre, Linker};

use crate::bindings::HostPluginPre as PluginPre;
use crate::engine::{Engine, LoadedComponent, Tier, Tiered};
use crate::error::LoadError;
use crate::imports::config::ConfigValues;
use crate::load::typed::{self, TypedExports};
use crate::sandbox::{CallState, Prepared};

/// A typed-export component's pre-linked instance and the index of each tool's
/// function in it (indices belong to one compiled component).
pub(crate) struct TypedPrepared {
    pub(crate) prepared: Prepared<InstancePre<CallState>>,
    /// By tool, in the order of [`TypedExports::funcs`].
    pub(crate) exports: Vec<ComponentExportIndex>,
}

/// What every store of a plugin sees, whatever compiled its code.
#[derive(Clone)]
pub(crate) struct Link {
    pub(crate) name: Arc<str>,
    pub(crate) env: Arc<[(String, String)]>,
    pub(crate) config: ConfigValues,
}

impl Link {
    /// `component` (compiled for `engine`) linked by `linker`, as a
    /// `toolhost:plugin/tools` plugin.
    pub(crate) fn tools(
        &self,
        linker: &Linker<CallState>,
        engine: &wasmtime::Engine,
        component: &Component,
    ) -> Result<Prepared, LoadError> {
        let pre = PluginPre::new(self.instance_pre(linker, component)?).map_err(|e| {
            LoadError::BadPlugin(format!(
                "{}: it does not export the toolhost:plugin/tools interface (0.1.0): {e:#}",
                self.name
            ))
        })?;
        Ok(self.prepare(engine, pre))
    }

    /// `component` linked by `linker`, with the functions of `typed` found in it.
    pub(crate) fn typed(
        &self,
        linker: &Linker<CallState>,
        engine: &wasmtime::Engine,
        component: &Component,
        typed: &TypedExports,
    ) -> Result<TypedPrepared, LoadError> {
        let pre = self.instance_pre(linker, component)?;
        let exports = typed.funcs.iter().map(|f| f.export).collect();
        Ok(TypedPrepared { prepared: self.prepare(engine, pre), exports })
    }

    fn instance_pre(
        &self,
        linker: &Linker<CallState>,
        component: &Component,
    ) -> Result<InstancePre<CallState>, LoadError> {
        linker
            .instantiate_pre(component)
            .map_err(|e| LoadError::BadPlugin(format!("{}: cannot link the component: {:#}", self.name, e)))
    }

    fn prepare<P>(&self, engine: &wasmtime::Engine, pre: P) -> Prepared<P> {
        Prepared {
            engine: engine.clone(),
            pre,
            name: self.name.clone(),
            env: self.env.clone(),
            config: self.config.clone(),
        }
    }
}

/// The linker for `loaded`'s engine: `linker` (the host's) for optimised code, a
/// fresh one of the baseline engine for baseline code.
pub(crate) fn linker_for<'a>(
    loaded: &LoadedComponent,
    linker: &'a Linker<CallState>,
) -> Result<Cow<'a, Linker<CallState>>, LoadError> {
    match loaded.tier {
        Tier::Optimized => Ok(Cow::Borrowed(linker)),
        Tier::Baseline => crate::sandbox::linker(&loaded.engine).map(Cow::Owned),
    }
}

/// Have `engine` compile `bytes` with Cranelift in the background and link the
/// result into `tools` or `typed`'s slot, for the calls after it.
pub(crate) fn optimize_later(
    engine: &Engine,
    linker: &Linker<CallState>,
    link: Link,
    bytes: &[u8],
    sha256: &str,
    slot: Slot<'_>,
) {
    let (linker, wasm, bytes) = (linker.clone(), engine.wasmtime().clone(), Arc::<[u8]>::from(bytes));
    let done = match slot {
        Slot::Tools(slot) => crate::engine::upgrade(slot, move |component| {
            link.tools(&linker, &wasm, &component)
                .inspect_err(|e| tracing::warn!("linking the optimised code: {e}"))
                .ok()
        }),
        Slot::Typed(slot) => {
            let docs = bytes.clone();
            crate::engine::upgrade(slot, move |component| {
                let typed = typed::derive(&wasm, &component, &docs);
                link.typed(&linker, &wasm, &component, &typed)
                    .inspect_err(|e| tracing::warn!("linking the optimised code: {e}"))
                    .ok()
            })
        }
    };
    engine.optimize_later(bytes, sha256, done);
}

/// The slot a background compile fills.
pub(crate) enum Slot<'a> {
    Tools(&'a Arc<Tiered<Prepared>>),
    Typed(&'a Arc<Tiered<TypedPrepared>>),
}
