//! `floor`: one `read_file` call through `Host::execute` against what the runtime
//! itself allows: a minimal embedder of the same wasmtime (the host's engine,
//! so the same compiled code, pooling allocator, fuel and epoch settings) doing
//! instantiate → call → drop of the same component (`builtin:fs`) with the same
//! preopen, fuel, epoch deadline and memory cap, and nothing else: plain
//! `wasmtime-wasi` (no guard in front of the filesystem), every other import a
//! trap, no argument checks, no permissions, no output store.
//!
//! The two alternate call by call so both see the same machine; the ratio of
//! the medians is what toolhost adds on top of wasmtime.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::{CompilerTiers, Engine, EngineSettings, Host, Limits, ToolCall};
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{
    Component, ComponentExportIndex, ComponentType, InstancePre, Lift, Linker, Lower, ResourceTable,
};
use wasmtime::{Store, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// The store's state: WASI and the memory cap, nothing more.
struct Floor {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: StoreLimits,
}

impl WasiView for Floor {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// `toolhost:plugin/types.call-context`.
#[derive(ComponentType, Lower)]
#[component(record)]
struct CallContext {
    #[component(name = "call-id")]
    call_id: String,
    #[component(name = "work-dir")]
    work_dir: Option<String>,
}

/// `toolhost:plugin/types.tool-output`.
#[derive(ComponentType, Lift)]
#[component(record)]
struct ToolOutput {
    content: String,
    #[allow(dead_code)]
    display: Option<String>,
    #[allow(dead_code)]
    metadata: Option<String>,
}

/// `toolhost:plugin/types.tool-error`.
#[derive(ComponentType, Lift, Debug)]
#[component(record)]
struct ToolError {
    code: String,
    message: String,
}

/// The minimal embedder: the component linked once, a store per call.
struct Embedder {
    pre: InstancePre<Floor>,
    call: ComponentExportIndex,
    work_dir: String,
    limits: Limits,
}

impl Embedder {
    fn new(engine: &wasmtime::Engine, component: &Component, work_dir: &Path) -> Self {
        let mut linker = Linker::new(engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("wasi links");
        // toolhost's own imports (log, files, search): each function a trap.
        for (name, item) in component.component_type().imports(engine) {
            let ComponentItem::ComponentInstance(instance) = item.ty else { continue };
            if !name.starts_with("toolhost:") {
                continue;
            }
            let mut linked = linker.instance(name).expect("an instance");
            for (func, item) in instance.exports(engine) {
                if matches!(item.ty, ComponentItem::ComponentFunc(_)) {
                    linked
                        .func_new(func, |_, _, _, _| Err(wasmtime::Error::msg("not in the floor")))
                        .expect("a trap");
                }
            }
        }
        let pre = linker.instantiate_pre(component).expect("instantiate_pre");
        let (_, tools) = component.get_export(None, "toolhost:plugin/tools@0.1.0").expect("exports tools");
        let (_, call) = component.get_export(Some(&tools), "call").expect("exports call");
        let work_dir = work_dir.to_string_lossy().into_owned();
        Self { pre, call, work_dir, limits: Limits::default() }
    }

    /// instantiate → call → drop, as the host does it, with nothing around it.
    async fn read(&self, args: &'static str) -> String {
        let mut wasi = WasiCtxBuilder::new();
        wasi.allow_blocking_current_thread(true);
        wasi.preopened_dir(&self.work_dir, &self.work_dir, FsPerms::ReadOnly).expect("preopen");
        let limits = StoreLimitsBuilder::new().memory_size(self.limits.memory_bytes).build();
        let state = Floor { wasi: wasi.build(), table: ResourceTable::new(), limits };
        let mut store = Store::new(self.pre.engine(), state);
        store.limiter(|s| &mut s.limits);
        store.set_fuel(self.limits.fuel).expect("fuel");
        store.set_epoch_deadline(1);
        store.epoch_deadline_async_yield_and_update(1);
        let instance = self.pre.instantiate_async(&mut store).await.expect("instantiates");
        let call = instance
            .get_typed_func::<(&str, &str, CallContext), (Result<ToolOutput, ToolError>,)>(
                &mut store, self.call,
            )
            .expect("call's type");
        let context = CallContext { call_id: "floor".into(), work_dir: Some(self.work_dir.clone()) };
        let (result,) = call.call_async(&mut store, ("read_file", args, context)).await.expect("no trap");
        match result {
            Ok(output) => output.content,
            Err(e) => panic!("{}: {}", e.code, e.message),
        }
    }
}

pub(crate) async fn floor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text: String = (0..40).map(|i| format!("line {i} of a small file\n")).collect();
    std::fs::write(dir.path().join("small.txt"), text).expect("write");
    let work = dir.path().canonicalize().expect("canonical work dir");
    let settings = EngineSettings {
        cache_dir: Some(super::bench_cache()),
        tiers: CompilerTiers::Optimized,
        ..EngineSettings::default()
    };
    let host = Host::builder().work_dir(&work).engine_settings(settings.clone()).build().await.expect("host");
    let engine = Engine::new(&settings).expect("engine");
    let bytes = toolhost::builtin_component("builtin:fs").expect("builtin:fs");
    let sha = sha256_hex(bytes);
    let component = engine.component(bytes, &sha).expect("compiles").component;
    let embedder = Embedder::new(engine.wasmtime(), &component, &work);

    let args = r#"{"path":"small.txt"}"#;
    let want = host.execute(ToolCall::new("read_file", json!({"path": "small.txt"}))).await;
    assert!(want.ok, "{:?}", want.error);
    assert_eq!(embedder.read(args).await, want.output, "the same component answers the same");

    let (n, warm) = (3000, 300);
    let (mut ours, mut bare) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..warm + n {
        let started = Instant::now();
        let r = host.execute(ToolCall::new("read_file", json!({"path": "small.txt"}))).await;
        let took_ours = started.elapsed();
        assert!(r.ok);
        let started = Instant::now();
        std::hint::black_box(embedder.read(args).await);
        let took_bare = started.elapsed();
        if i >= warm {
            ours.push(took_ours);
            bare.push(took_bare);
        }
    }
    let median = |s: &mut Vec<Duration>| {
        s.sort();
        s[s.len() / 2]
    };
    let ratio = median(&mut ours).as_secs_f64() / median(&mut bare).as_secs_f64();
    super::report("read_file through Host::execute", ours);
    super::report("read_file, minimal wasmtime embedder (floor)", bare);
    println!("Host::execute / floor, median: {ratio:.2}x (goal <= 1.3x)");
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}
