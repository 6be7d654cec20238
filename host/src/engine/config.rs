//! The code-generation half of the engine's configuration: every setting that
//! changes compiled code, and nothing else.
//!
//! Shared by the engine (`super::Engine::new`, which adds the pooling
//! allocator) and by `host/build.rs`, which precompiles the builtin plugins
//! with it at build time (`#[path]`-included there). An artifact compiled under
//! one configuration loads only into an engine with the same one, so both must
//! take their settings from this one function.

/// A `wasmtime::Config` with what the sandbox relies on: fuel (the CPU budget),
/// epoch interruption (the wall-clock deadline and cancellation) and the
/// component model.
pub(crate) fn code_config() -> wasmtime::Config {
    let mut config = wasmtime::Config::new();
    config.consume_fuel(true).epoch_interruption(true).wasm_component_model(true);
    config
}

/// [`code_config`] compiled by Winch, wasmtime's baseline compiler: the same fuel,
/// epoch interruption and component model (Winch on x86_64 emits the fuel and
/// epoch checks at each function entry and loop header, as Cranelift does), for
/// the first calls of a component while Cranelift compiles it.
///
/// Winch leaves the trampolines between host and guest to Cranelift, one per
/// function a host or a table can reach: in this tier they are compiled without
/// optimisation too.
pub(crate) fn baseline_config() -> wasmtime::Config {
    let mut config = code_config();
    config.strategy(wasmtime::Strategy::Winch).cranelift_opt_level(wasmtime::OptLevel::None);
    config
}
