//! Two compiler tiers: a component missing from the compile cache is compiled by
//! Winch (wasmtime's baseline compiler: one pass, no optimisation, a fraction of
//! Cranelift's time) so its first call runs at once, while Cranelift compiles it
//! in the background, one component at a time, and writes the cache; its later
//! calls take the optimised code as soon as it is there.
//!
//! Compiled code belongs to the engine that compiled it: the baseline tier has
//! its own engine (the same code settings but the compiler, so the same fuel,
//! epoch interruption and pooling limits) and its own cache directory (the salt
//! differs), and what is linked for one engine is never instantiated in the
//! other. [`Tiered`] holds what a call instantiates and swaps it whole.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};

use wasmtime::component::Component;

use super::cache::CompileCache;

/// Which compiler made a component's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// Cranelift: optimised code, the code every cached component has.
    Optimized,
    /// Winch: compiled fast for the first calls, replaced by Cranelift's code
    /// when its background compile ends.
    Baseline,
}

/// Which compilers make the code of a component missing from the compile cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CompilerTiers {
    /// Winch for the first calls, Cranelift in the background for the rest.
    #[default]
    Both,
    /// Cranelift only: loading waits for its compile.
    Optimized,
    /// Winch only, never replaced (tests of the baseline tier's limits; hosts
    /// whose tools only ever make short calls).
    Baseline,
}

/// The baseline tier's engine and its own compile cache.
pub(crate) struct Baseline {
    pub(crate) engine: wasmtime::Engine,
    pub(crate) cache: Option<CompileCache>,
}

/// One background compile: the bytes, and what to do with the optimised code.
pub(crate) struct Job {
    pub(crate) sha256: String,
    pub(crate) bytes: Arc<[u8]>,
    /// Given the optimised component; `false` when nobody wants it any more (the
    /// plugin was dropped), so the compile is skipped.
    pub(crate) done: Box<dyn Fn(Option<Component>) -> bool + Send>,
}

/// The baseline engine (made on first use: a host whose components are all cached
/// never builds it) and the queue of background compiles.
pub(crate) struct Tiers {
    which: CompilerTiers,
    make: Box<dyn Fn() -> Option<Baseline> + Send + Sync>,
    baseline: OnceLock<Option<Baseline>>,
    queue: Mutex<Option<Sender<Job>>>,
}

impl Tiers {
    /// `which` tiers, the baseline engine built by `make` (`None`: no baseline
    /// tier here).
    pub(crate) fn new(
        which: CompilerTiers,
        make: impl Fn() -> Option<Baseline> + Send + Sync + 'static,
    ) -> Self {
        Self { which, make: Box::new(make), baseline: OnceLock::new(), queue: Mutex::new(None) }
    }

    /// The baseline engine, built on first use.
    pub(crate) fn baseline(&self) -> Option<&Baseline> {
        self.baseline.get_or_init(|| (self.make)()).as_ref()
    }

    /// `bytes` compiled by the baseline tier (or loaded from its cache), and whether
    /// it came from the cache; `None` when there is no baseline tier or Winch
    /// cannot compile it (a proposal it lacks: the caller compiles with Cranelift).
    /// `announce` is called only when it compiles, and what it returns is held
    /// while it does (a progress step).
    pub(crate) fn compile<S>(
        &self,
        bytes: &[u8],
        sha256: &str,
        announce: impl FnOnce() -> S,
    ) -> Option<(Component, bool, wasmtime::Engine)> {
        if self.which == CompilerTiers::Optimized {
            return None;
        }
        let baseline = self.baseline()?;
        if let Some(component) = baseline.cache.as_ref().and_then(|c| c.load(&baseline.engine, sha256)) {
            return Some((component, true, baseline.engine.clone()));
        }
        let step = announce();
        let compiled = Component::new(&baseline.engine, bytes);
        drop(step);
        match compiled {
            Ok(component) => {
                if let Some(cache) = &baseline.cache {
                    cache.store(sha256, &component);
                }
                Some((component, false, baseline.engine.clone()))
            }
            Err(err) => {
                tracing::debug!("the baseline compiler cannot compile {sha256}: {err:#}");
                None
            }
        }
    }

    /// Queue `job` for the background compiler of `engine` (one thread, started on
    /// first use, compiling one component at a time; it ends when the host's engine
    /// is dropped and the queue is empty).
    pub(crate) fn optimize_later(&self, engine: &wasmtime::Engine, cache: Option<&CompileCache>, job: Job) {
        if self.which == CompilerTiers::Baseline {
            return;
        }
        let mut queue = self.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let job = match queue.as_ref() {
            Some(tx) => match tx.send(job) {
                Ok(()) => return,
                Err(failed) => failed.0,
            },
            None => job,
        };
        let (tx, rx) = channel();
        let (engine, cache) = (engine.clone(), cache.cloned());
        let started = std::thread::Builder::new()
            .name("toolhost-optimize".into())
            .spawn(move || optimize(&engine, cache.as_ref(), &rx));
        match started {
            Ok(_) => {
                let _ = tx.send(job);
                *queue = Some(tx);
            }
            Err(err) => tracing::warn!("cannot start the background compiler: {err}"),
        }
    }
}

/// The background compiler: each job's component from the cache (another host may
/// have compiled it meanwhile) or compiled and cached, then handed over.
fn optimize(engine: &wasmtime::Engine, cache: Option<&CompileCache>, jobs: &Receiver<Job>) {
    while let Ok(job) = jobs.recv() {
        if !(job.done)(None) {
            continue;
        }
        let component = match cache.and_then(|c| c.load(engine, &job.sha256)) {
            Some(component) => Some(component),
            // Taken back from the cache's file, as a cached component is: its code
            // mapped from the file rather than held in anonymous memory.
            None => match Component::new(engine, &job.bytes) {
                Ok(component) => match cache {
                    Some(cache) => {
                        cache.store(&job.sha256, &component);
                        cache.load(engine, &job.sha256).or(Some(component))
                    }
                    None => Some(component),
                },
                Err(err) => {
                    tracing::warn!("optimising {}: {err:#}", job.sha256);
                    None
                }
            },
        };
        if let Some(component) = component {
            (job.done)(Some(component));
        }
    }
}

/// What a call instantiates, in the best tier there is so far: read once per call,
/// replaced whole when the optimised code is linked.
pub(crate) struct Tiered<T> {
    current: RwLock<(Tier, Arc<T>)>,
}

impl<T> Tiered<T> {
    /// `value`, made from code of `tier`.
    pub(crate) fn new(tier: Tier, value: T) -> Arc<Self> {
        Arc::new(Self { current: RwLock::new((tier, Arc::new(value))) })
    }

    /// What a call instantiates now.
    pub(crate) fn current(&self) -> Arc<T> {
        self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).1.clone()
    }

    /// Which tier made it.
    pub(crate) fn tier(&self) -> Tier {
        self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).0
    }

    /// Replace it with `value`, made from optimised code. Calls under way keep
    /// what they took.
    pub(crate) fn optimize(&self, value: T) {
        *self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner) =
            (Tier::Optimized, Arc::new(value));
    }
}

/// The [`Job::done`] of `slot`: while it lives, `make` turns the optimised component
/// into what its calls instantiate (`None` when linking fails: the baseline stays).
pub(crate) fn upgrade<T: Send + Sync + 'static>(
    slot: &Arc<Tiered<T>>,
    make: impl Fn(Component) -> Option<T> + Send + 'static,
) -> Box<dyn Fn(Option<Component>) -> bool + Send> {
    let slot: Weak<Tiered<T>> = Arc::downgrade(slot);
    Box::new(move |component| {
        let Some(slot) = slot.upgrade() else { return false };
        if let Some(value) = component.and_then(&make) {
            slot.optimize(value);
        }
        true
    })
}
