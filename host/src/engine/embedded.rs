//! Code the binary carries: each builtin plugin compiled by `build.rs` with
//! this engine's code settings (`config::code_config`), deflated.
//!
//! A first start inflates it into the compile cache once (11.7 MB of code,
//! 4.3 MB in the binary); every start after maps it from the cache's file,
//! and the binary's copy is never read again. Without a cache it is inflated
//! at each start (about 40 ms for the three builtins). Code that does not fit
//! this engine (another CPU, a cross build: then `build.rs` leaves it empty)
//! is set aside and the component compiled from its bytes.

use wasmtime::component::Component;

use super::{Engine, LoadedComponent};
use crate::error::LoadError;

/// The most a builtin's code may inflate to: far above the three builtins'
/// 1.5–6.1 MB, and a bound on what a damaged copy can make us allocate.
const MAX_INFLATED: usize = 64 << 20;

impl Engine {
    /// Load `deflated`, a builtin's code as the binary carries it, when it fits
    /// this engine; otherwise (another CPU, a cross build, an empty or damaged
    /// copy) fall back to [`Engine::component`] on `bytes`.
    ///
    /// With a compile cache the code is mapped from the cache's file: wasmtime
    /// maps a file's pages as they are used, while loading from memory copies
    /// the whole artifact into fresh pages (twice its size resident for the
    /// life of the process). A copy that does not load is removed by the cache
    /// and this falls back as without a cache.
    pub(crate) fn embedded(
        &self,
        deflated: &'static [u8],
        bytes: &[u8],
        sha256: &str,
    ) -> Result<LoadedComponent, LoadError> {
        if let Some(cache) = &self.cache
            && let Some(component) = cache.load(&self.inner, sha256)
        {
            return Ok(self.optimized(component, true));
        }
        if let Some(artifact) = inflate(deflated) {
            if let Some(cache) = &self.cache
                && let Some(component) = cache.load_or_keep(&self.inner, sha256, &artifact)
            {
                return Ok(self.optimized(component, true));
            }
            // SAFETY: the artifact is part of this binary, written by its own
            // build script with this wasmtime and `config::code_config`;
            // wasmtime checks its header, version and settings against this
            // engine and refuses one that does not fit.
            #[allow(unsafe_code)]
            match unsafe { Component::deserialize(&self.inner, &artifact) } {
                Ok(component) => return Ok(self.optimized(component, true)),
                Err(err) => {
                    tracing::debug!("compiling a builtin: its precompiled code does not fit: {err:#}")
                }
            }
        }
        self.component_named(sha256.get(..12).unwrap_or(sha256), bytes, sha256)
    }
}

/// The code `deflated` holds, or `None` when there is none (a cross build) or
/// it does not inflate within [`MAX_INFLATED`].
fn inflate(deflated: &[u8]) -> Option<Vec<u8>> {
    if deflated.is_empty() {
        return None;
    }
    match miniz_oxide::inflate::decompress_to_vec_with_limit(deflated, MAX_INFLATED) {
        Ok(code) => Some(code),
        Err(err) => {
            tracing::debug!("compiling a builtin: its precompiled code does not inflate: {err}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{EngineSettings, cache_salt};
    use super::*;

    fn engine(dir: &std::path::Path) -> Engine {
        Engine::new(&EngineSettings {
            max_concurrent_calls: 1,
            cache_dir: Some(dir.into()),
            ..Default::default()
        })
        .unwrap()
    }

    #[test]
    fn a_builtin_is_inflated_into_the_cache_once_then_mapped_from_it() {
        let sys = crate::load::builtins::ALL.iter().find(|b| b.name == "builtin:sys").unwrap();
        assert!(sys.precompiled.len() * 2 < inflate(sys.precompiled).unwrap().len(), "carried deflated");
        let dir = tempfile::tempdir().unwrap();
        let engine = engine(dir.path());
        let file = dir.path().join(cache_salt(engine.wasmtime())).join(format!("{}.cwasm", sys.sha256));

        let first = engine.embedded(sys.precompiled, sys.bytes, sys.sha256).unwrap();
        assert!(first.from_cache);
        assert_eq!(
            std::fs::read(&file).unwrap(),
            inflate(sys.precompiled).unwrap(),
            "the binary's copy, once"
        );
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        assert!(maps.contains(file.to_str().unwrap()), "the code is mapped from the file, not copied");
        let again = engine.embedded(sys.precompiled, sys.bytes, sys.sha256).unwrap();
        assert!(again.from_cache);
    }

    #[test]
    fn code_that_does_not_fit_or_does_not_inflate_is_compiled_instead() {
        let sys = crate::load::builtins::ALL.iter().find(|b| b.name == "builtin:sys").unwrap();
        // Code for another wasmtime or CPU: it inflates, does not load, and
        // is replaced in the cache by what the engine compiles.
        let foreign: &'static [u8] = miniz_oxide::deflate::compress_to_vec(b"\x7fELF not for us", 6).leak();
        // A damaged copy, and one that would inflate past the bound.
        let damaged: &'static [u8] = b"not deflate data";
        let bomb: &'static [u8] =
            miniz_oxide::deflate::compress_to_vec(&vec![0u8; MAX_INFLATED + 1], 6).leak();
        assert!(inflate(damaged).is_none() && inflate(bomb).is_none(), "neither inflates");
        for copy in [foreign, damaged, bomb] {
            let dir = tempfile::tempdir().unwrap();
            let engine = engine(dir.path());
            let file = dir.path().join(cache_salt(engine.wasmtime())).join(format!("{}.cwasm", sys.sha256));
            let compiled = engine.embedded(copy, sys.bytes, sys.sha256).unwrap();
            assert!(!compiled.from_cache);
            let kept = std::fs::read(&file).unwrap();
            assert!(kept.starts_with(b"\x7fELF") && kept.len() > 100_000, "the compiled artifact is cached");
        }
    }
}
