//! Stage 1, once per host: the wasmtime [`Engine`], its epoch ticker and the
//! on-disk compile cache.
//!
//! Every component is compiled by this one engine. The configuration turns on
//! what the sandbox relies on: fuel (CPU budget), epoch interruption (the
//! wall-clock deadline and cancellation, driven by a background ticker) and the
//! pooling allocator (cheap fresh instances per call).

use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use wasmtime::component::Component;
use wasmtime::{InstanceAllocationStrategy, PoolingAllocationConfig};

mod cache;
mod config;
mod embedded;
pub(crate) mod progress;
mod tier;

pub use tier::{CompilerTiers, Tier};
pub(crate) use tier::{Tiered, upgrade};

use crate::error::LoadError;
use cache::CompileCache;
use tier::Tiers;

/// How often the epoch ticker advances the engine's epoch. A running guest
/// reaches a yield point (where the deadline and cancellation are checked)
/// at most this long after its deadline.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Low bytes of each freed memory and table slot kept mapped for reuse.
const KEEP_RESIDENT_BYTES: usize = 4 << 20;

/// The wasmtime version compiled artifacts are tied to (pinned in Cargo.toml; a
/// test checks it against Cargo.lock).
pub(crate) const WASMTIME_VERSION: &str = "48.0.10";

/// The host's cache dir by default (`$TOOLHOST_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/toolhost`, else `~/.cache/toolhost`): compiled components, and the
/// store of pulled ones (`oci/`).
pub(crate) fn default_cache_dir() -> Option<PathBuf> {
    CompileCache::default_dir()
}

/// Settings of the engine, chosen once per host.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// How many calls may hold an instance at once. The pooling allocator
    /// reserves slots for this many, plus headroom for loading plugins.
    pub max_concurrent_calls: u32,
    /// Where compiled components are cached; `None` turns the cache off.
    pub cache_dir: Option<PathBuf>,
    /// Which compilers make the code of a component missing from the cache.
    pub tiers: CompilerTiers,
}

impl Default for EngineSettings {
    fn default() -> Self {
        Self { max_concurrent_calls: 64, cache_dir: CompileCache::default_dir(), tiers: CompilerTiers::Both }
    }
}

/// The host's one wasmtime engine and compile cache.
#[derive(Clone)]
pub struct Engine {
    inner: wasmtime::Engine,
    cache: Option<CompileCache>,
    progress: Option<std::sync::Arc<dyn progress::Progress>>,
    tiers: Arc<Tiers>,
}

impl Engine {
    /// Build the engine and start its epoch ticker (a thread that stops by
    /// itself when the last clone of the engine is dropped).
    pub fn new(settings: &EngineSettings) -> Result<Self, LoadError> {
        let inner = build(config::code_config(), settings)?;
        let cache = settings.cache_dir.clone().map(|dir| CompileCache::new(dir, cache_salt(&inner)));
        let baseline = settings.clone();
        let tiers = Tiers::new(settings.tiers, move || {
            let engine = build(config::baseline_config(), &baseline)
                .inspect_err(|err| tracing::debug!("no baseline compiler tier: {err}"))
                .ok()?;
            let cache = baseline.cache_dir.clone().map(|dir| CompileCache::new(dir, cache_salt(&engine)));
            Some(tier::Baseline { engine, cache })
        });
        Ok(Self { inner, cache, progress: None, tiers: Arc::new(tiers) })
    }

    /// This engine, telling `progress` when it compiles a component.
    pub fn with_progress(mut self, progress: std::sync::Arc<dyn progress::Progress>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// The wasmtime engine.
    pub fn wasmtime(&self) -> &wasmtime::Engine {
        &self.inner
    }

    /// Compile `bytes` (whose sha256 is `sha256`), or load the artifact a
    /// previous run cached for the same engine settings and bytes.
    pub fn component(&self, bytes: &[u8], sha256: &str) -> Result<LoadedComponent, LoadError> {
        self.component_named(sha256.get(..12).unwrap_or(sha256), bytes, sha256)
    }

    /// [`Engine::component`], naming the component `name` in progress reports.
    pub fn component_named(
        &self,
        name: &str,
        bytes: &[u8],
        sha256: &str,
    ) -> Result<LoadedComponent, LoadError> {
        if let Some(cached) = self.cached(sha256) {
            return Ok(cached);
        }
        let step = progress::start(self.progress.as_ref(), &format!("compiling {name}"), None);
        let component = Component::new(&self.inner, bytes).map_err(LoadError::compile);
        drop(step);
        let component = component?;
        if let Some(cache) = &self.cache {
            cache.store(sha256, &component);
        }
        Ok(self.optimized(component, false))
    }
}

impl Engine {
    /// [`Engine::component_named`], but on a cache miss compiled by the baseline
    /// tier (Winch), whose code runs at once; [`Engine::optimize_later`] then gets
    /// the optimised code. Falls back to Cranelift where there is no baseline tier
    /// or Winch cannot compile the component.
    pub(crate) fn component_tiered(
        &self,
        name: &str,
        bytes: &[u8],
        sha256: &str,
    ) -> Result<LoadedComponent, LoadError> {
        if let Some(cached) = self.cached(sha256) {
            return Ok(cached);
        }
        let announce =
            || progress::start(self.progress.as_ref(), &format!("compiling {name} (baseline)"), None);
        match self.tiers.compile(bytes, sha256, announce) {
            Some((component, from_cache, engine)) => {
                Ok(LoadedComponent { component, from_cache, tier: Tier::Baseline, engine })
            }
            None => self.component_named(name, bytes, sha256),
        }
    }

    /// Compile `bytes` with Cranelift in the background (one component at a time)
    /// into the compile cache, then call `done` with it; `done` answers `false`
    /// when the code is no longer wanted (checked before compiling too).
    pub(crate) fn optimize_later(
        &self,
        bytes: Arc<[u8]>,
        sha256: &str,
        done: Box<dyn Fn(Option<Component>) -> bool + Send>,
    ) {
        let job = tier::Job { sha256: sha256.to_string(), bytes, done };
        self.tiers.optimize_later(&self.inner, self.cache.as_ref(), job);
    }

    /// Whether the compile cache holds optimised code for `sha256` (not loaded
    /// or checked: that is [`Engine::component`]'s).
    pub(crate) fn has_cached(&self, sha256: &str) -> bool {
        self.cache.as_ref().is_some_and(|cache| cache.has(sha256))
    }

    /// The optimised code cached for `sha256` with this engine's settings, if any.
    fn cached(&self, sha256: &str) -> Option<LoadedComponent> {
        let component = self.cache.as_ref()?.load(&self.inner, sha256)?;
        Some(self.optimized(component, true))
    }

    /// `component`, compiled by this engine's own (optimising) compiler.
    fn optimized(&self, component: Component, from_cache: bool) -> LoadedComponent {
        LoadedComponent { component, from_cache, tier: Tier::Optimized, engine: self.inner.clone() }
    }
}

/// A compiled component, whether it came from the cache, and which tier compiled
/// it for which engine.
pub struct LoadedComponent {
    /// The component, ready to link.
    pub component: Component,
    /// True when it was loaded from the compile cache (or, for a builtin,
    /// from the code the binary carries) rather than compiled.
    pub from_cache: bool,
    /// Which compiler made its code.
    pub tier: Tier,
    /// The engine its code belongs to: the only one that may link and
    /// instantiate it.
    pub engine: wasmtime::Engine,
}

/// An engine with `config` and the pooling allocator sized for `settings`, its
/// epoch ticker started.
fn build(mut config: wasmtime::Config, settings: &EngineSettings) -> Result<wasmtime::Engine, LoadError> {
    // Each call instantiates afresh, so keep instance slots ready. One
    // component instance holds several core instances, memories and tables.
    let slots = settings.max_concurrent_calls.max(1) + 8;
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(slots)
        .total_core_instances(slots * 16)
        .total_memories(slots * 4)
        .total_tables(slots * 16)
        .total_stacks(slots)
        .max_memory_size(4 << 30)
        .max_core_instance_size(16 << 20)
        .max_component_instance_size(16 << 20)
        .table_elements(100_000)
        // A freed slot keeps its low pages mapped and only the pages the
        // call dirtied are reset (PAGEMAP_SCAN on Linux ≥ 6.7, else a
        // memset): the next call takes no page faults and no madvise on
        // them. Measured: no-op median 35 → 22 µs (BENCHMARKS.md).
        .pagemap_scan(wasmtime::Enabled::Auto)
        .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
        .table_keep_resident(KEEP_RESIDENT_BYTES);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    let engine = wasmtime::Engine::new(&config).map_err(LoadError::engine)?;
    spawn_epoch_ticker(&engine);
    Ok(engine)
}

/// A value that changes whenever an artifact compiled by one engine could not
/// be loaded by another: the wasmtime version and every setting that affects
/// code generation.
fn cache_salt(engine: &wasmtime::Engine) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    format!("wasmtime-{WASMTIME_VERSION}-{:016x}", hasher.finish())
}

fn spawn_epoch_ticker(engine: &wasmtime::Engine) {
    let weak = engine.weak();
    thread::Builder::new()
        .name("toolhost-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                thread::sleep(EPOCH_TICK);
            }
        })
        .expect("spawning the epoch ticker thread");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_baseline_tier_caches_apart_from_the_optimising_one() {
        let settings = EngineSettings { max_concurrent_calls: 1, cache_dir: None, ..Default::default() };
        let optimized = build(config::code_config(), &settings).unwrap();
        let baseline = build(config::baseline_config(), &settings).unwrap();
        assert_ne!(cache_salt(&optimized), cache_salt(&baseline));
    }

    #[test]
    fn the_version_named_is_the_runtime_in_cargo_lock() {
        let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock")).unwrap();
        let at = lock.find("\nname = \"wasmtime\"\nversion = \"").expect("wasmtime in Cargo.lock");
        let rest = lock[at..].splitn(4, '"').nth(3).unwrap();
        let locked = rest.split('"').next().unwrap();
        assert_eq!(
            WASMTIME_VERSION, locked,
            "engine::WASMTIME_VERSION names another wasmtime than Cargo.lock's"
        );
    }
}
