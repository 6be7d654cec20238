//! Typed-export components end to end: the `typed` test guest exports WIT functions
//! (records, lists, options, enums, variants, flags, tuples, results, a resource)
//! and no `toolhost:plugin`; each function is a tool.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolhost::{Host, Limits, LoadError, Mode, Policy, ToolCall, ToolResult};
use toolhost_tests::{TEST_TYPED_WASM, test_engine_settings};

async fn host(limits: Limits) -> Host {
    Host::builder()
        .engine_settings(test_engine_settings())
        .without_builtins()
        .limits(limits)
        .mode(Mode::Yolo)
        .plugin_file(TEST_TYPED_WASM)
        .build()
        .await
        .unwrap_or_else(|e| panic!("the typed component loads: {e}"))
}

async fn call(host: &Host, tool: &str, args: Value) -> ToolResult {
    host.execute(ToolCall::new(tool, args)).await
}

fn ok(r: &ToolResult) -> &str {
    assert!(r.ok, "expected success, got {:?}", r.error);
    &r.output
}

fn failed(r: &ToolResult) -> (&str, &str) {
    let e = r.error.as_ref().unwrap_or_else(|| panic!("expected a failure, got {:?}", r.output));
    (e.code.as_str(), e.message.as_str())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_function_is_a_tool_with_a_derived_schema_and_its_doc_comment() {
    let host = host(Limits::default()).await;
    let defs = host.definitions();
    let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "area",
            "echo",
            "flood",
            "get_weather",
            "halve",
            "hog",
            "mirror",
            "nothing",
            "read_file",
            "spin",
            "swap",
            "version",
            "weather_echo"
        ],
        "one tool per function; the interface's echo is prefixed with its name"
    );
    let def = |name: &str| defs.iter().find(|d| d.name == name).expect(name).clone();
    assert_eq!(
        def("get_weather").description,
        "Get the weather at a place.\n\nFails for a latitude outside -90 to 90."
    );
    assert_eq!(def("echo").description, "Echo the text back.");
    assert_eq!(def("weather_echo").description, "Echo the text, from the weather interface.");
    assert_eq!(def("version").description, "The interface's version.");

    let weather = def("get_weather").parameters;
    assert_eq!(weather["required"], json!(["location", "extras"]), "an option parameter is not required");
    assert_eq!(weather["additionalProperties"], json!(false));
    let location = &weather["properties"]["location"];
    assert_eq!(location["type"], "object");
    assert_eq!(location["required"], json!(["lat", "lon"]));
    assert_eq!(location["properties"]["lat"], json!({"type": "number"}));
    assert_eq!(
        weather["properties"]["units"],
        json!({"anyOf": [{"type": "string", "enum": ["metric", "imperial"]}, {"type": "null"}]})
    );
    assert_eq!(
        weather["properties"]["extras"],
        json!({"type": "array", "items": {"type": "string", "enum": ["wind", "humidity", "pressure"]}, "uniqueItems": true})
    );

    let everything = &def("mirror").parameters["properties"]["value"]["properties"];
    assert_eq!(everything["byte"], json!({"type": "integer", "minimum": 0, "maximum": 255}));
    assert_eq!(everything["small"], json!({"type": "integer", "minimum": -128, "maximum": 127}));
    assert_eq!(everything["ulong"]["maximum"], json!(u64::MAX));
    assert_eq!(everything["letter"], json!({"type": "string", "minLength": 1, "maxLength": 1}));
    assert_eq!(
        everything["pair"]["prefixItems"],
        json!([{"type": "string"}, {"type": "integer", "minimum": 0, "maximum": 255}])
    );
    assert_eq!(everything["pair"]["items"], json!(false));
    assert_eq!(everything["shape"]["oneOf"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        everything["shape"]["oneOf"][2],
        json!({"type": "object", "properties": {"tag": {"const": "point"}}, "required": ["tag"], "additionalProperties": false})
    );
    assert_eq!(everything["outcome"]["oneOf"][0]["required"], json!(["ok"]));

    // Every schema is valid JSON Schema, and a tool that is not told read-only is not.
    for d in &defs {
        jsonschema::validator_for(&d.parameters).unwrap_or_else(|e| panic!("{}: {e}", d.name));
        let tool = host.registry().get(&d.name).unwrap().clone();
        assert!(!tool.spec().read_only && !tool.spec().destructive, "{}", d.name);
    }
    // A plain-text result has no typed output; the others have one, valid too.
    assert!(host.registry().get("echo").unwrap().output_schema().is_none());
    let report = host.registry().get("get_weather").unwrap().output_schema().expect("typed result").clone();
    assert_eq!(report["properties"]["notes"], json!({"type": "array", "items": {"type": "string"}}));
    jsonschema::validator_for(&report).expect("valid output schema");
}

fn everything() -> Value {
    json!({
        "flag": true, "small": -128, "byte": 255, "short": -32768, "ushort": 65535,
        "int": -2147483648i64, "uint": 4294967295u64, "long": i64::MIN, "ulong": u64::MAX,
        "single": 1.5, "double": -0.1, "letter": "é", "text": "line\nnext \u{1F600}",
        "items": [0, 1, 4294967295u64], "maybe": null, "color": "green", "perms": ["read", "exec"],
        "shape": {"tag": "rect", "value": [2.0, 3.5]}, "pair": ["x", 7],
        "outcome": {"err": "nope"}, "nested": [null, "blue"]
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_round_trip_every_type() {
    let host = host(Limits::default()).await;
    let value = everything();
    let r = call(&host, "mirror", json!({"value": value})).await;
    let out: Value = serde_json::from_str(ok(&r)).expect("a JSON result");
    assert_eq!(out, value, "every type comes back as it went in");
    assert_eq!(r.metadata, Some(json!({"result": value})), "the typed value rides along");
    let schema = host.registry().get("mirror").unwrap().output_schema().unwrap().clone();
    assert!(jsonschema::validator_for(&schema).unwrap().is_valid(&out), "the result fits its schema");

    let mut some = everything();
    some["maybe"] = json!("here");
    some["outcome"] = json!({"ok": 3});
    some["shape"] = json!({"tag": "point"});
    some["perms"] = json!([]);
    let r = call(&host, "mirror", json!({"value": some})).await;
    assert_eq!(serde_json::from_str::<Value>(ok(&r)).unwrap(), some);

    let r = call(&host, "echo", json!({"text": "hi there"})).await;
    assert_eq!(ok(&r), "hi there", "a string result is the text itself");
    assert_eq!(r.metadata, None);
    assert_eq!(ok(&call(&host, "weather_echo", json!({"text": "x"})).await), "weather: x");
    let r = call(&host, "area", json!({"shape": {"tag": "circle", "value": 1.0}})).await;
    assert_eq!(ok(&r), std::f64::consts::PI.to_string());
    assert_eq!(ok(&call(&host, "swap", json!({"pair": ["a", 9]})).await), r#"[9,"a"]"#);
    assert_eq!(ok(&call(&host, "halve", json!({"n": 10})).await), "5", "the ok of a result");
    assert_eq!(ok(&call(&host, "nothing", json!({})).await), "");
    assert_eq!(ok(&call(&host, "version", Value::Null).await), "1");

    let r = call(
        &host,
        "get_weather",
        json!({"location": {"lat": 45.0, "lon": 7.0, "name": "Turin"}, "units": "imperial", "extras": ["wind"]}),
    )
    .await;
    let report: Value = serde_json::from_str(ok(&r)).unwrap();
    assert_eq!(
        report,
        json!({"place": "Turin", "temperature": 51.8, "units": "imperial", "extras": ["wind"], "notes": ["made up"]})
    );
    // Quoted numbers are taken, as for every tool.
    let r = call(&host, "get_weather", json!({"location": {"lat": "10", "lon": 0}, "extras": []})).await;
    assert!(ok(&r).contains(r#""place":"10,0""#), "{}", r.output);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mismatch_is_invalid_args_naming_the_field() {
    let host = host(Limits::default()).await;
    let weather = |location: Value, extra: Value| {
        let mut args = json!({"location": location, "extras": []});
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        args
    };
    let with = |field: &str, v: Value| {
        let mut value = everything();
        value[field] = v;
        json!({"value": value})
    };
    let mut without_byte = everything();
    without_byte.as_object_mut().unwrap().remove("byte");
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "get_weather",
            weather(json!({"lat": "north", "lon": 0}), json!({})),
            "location.lat: expected f64, got string",
        ),
        ("get_weather", weather(json!({"lon": 0}), json!({})), "location: missing field \"lat\""),
        (
            "get_weather",
            weather(json!({"lat": 1, "lon": 0, "alt": 3}), json!({})),
            "location: unknown field \"alt\"",
        ),
        (
            "get_weather",
            weather(json!({"lat": 1, "lon": 0}), json!({"units": "kelvin"})),
            "units: unknown case \"kelvin\"; the cases are metric, imperial",
        ),
        (
            "get_weather",
            weather(json!({"lat": 1, "lon": 0}), json!({"extras": ["rain"]})),
            "extras[0]: unknown flag \"rain\"",
        ),
        (
            "get_weather",
            weather(json!({"lat": 1, "lon": 0}), json!({"extras": ["wind", "wind"]})),
            "extras[1]: flag wind is given twice",
        ),
        ("get_weather", json!({"extras": []}), "missing argument \"location\""),
        (
            "get_weather",
            weather(json!({"lat": 1, "lon": 0}), json!({"when": "now"})),
            "unknown argument \"when\"",
        ),
        ("mirror", with("byte", json!(300)), "value.byte: 300 is out of range for u8 (0 to 255)"),
        ("mirror", with("small", json!(-129)), "value.small: -129 is out of range for s8"),
        ("mirror", with("uint", json!(-1)), "value.uint: -1 is out of range for u32"),
        ("mirror", with("int", json!(1.5)), "value.int: expected s32, got 1.5"),
        ("mirror", with("single", json!(1e300)), "value.single: 1e+300 is out of range for f32"),
        ("mirror", with("letter", json!("ab")), "value.letter: expected char (one character)"),
        ("mirror", with("items", json!([1, "2x"])), "value.items[1]: expected u32, got string"),
        ("mirror", with("shape", json!({"tag": "hexagon"})), "value.shape: unknown case \"hexagon\""),
        ("mirror", with("shape", json!({"tag": "circle"})), "value.shape: case circle needs a \"value\""),
        (
            "mirror",
            with("shape", json!({"tag": "point", "value": 1})),
            "value.shape: unknown field \"value\" for case point",
        ),
        ("mirror", with("pair", json!(["x"])), "value.pair: expected 2 items, got 1"),
        (
            "mirror",
            with("outcome", json!({"maybe": 1})),
            "value.outcome: unknown key \"maybe\"; expected ok or err",
        ),
        (
            "mirror",
            with("outcome", json!({"ok": 1, "err": "x"})),
            "value.outcome: expected an object with one key",
        ),
        ("mirror", with("nested", json!(["purple"])), "value.nested[0]: unknown case \"purple\""),
        ("mirror", with("flag", json!(null)), "value.flag: expected bool, got null"),
        ("mirror", json!({"value": without_byte}), "value: missing field \"byte\""),
        ("swap", json!({"pair": "a,1"}), "pair: expected tuple (an array), got string"),
        ("echo", json!(["not", "an", "object"]), "the arguments must be an object, got array"),
    ];
    for (tool, args, expected) in cases {
        let r = call(&host, tool, args.clone()).await;
        let (code, message) = failed(&r);
        assert_eq!(code, "invalid_args", "{tool} {args}: {message}");
        assert!(
            message.starts_with(expected),
            "{tool} {args}:\n  got      {message}\n  expected {expected}…"
        );
    }
    // The host is fine afterwards.
    assert_eq!(ok(&call(&host, "echo", json!({"text": "still here"})).await), "still here");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_error_is_a_tool_error_with_its_text() {
    let host = host(Limits::default()).await;
    let r = call(&host, "get_weather", json!({"location": {"lat": 100, "lon": 0}, "extras": []})).await;
    assert_eq!(failed(&r), ("tool_error", "latitude 100 is not between -90 and 90"));
    let r = call(&host, "halve", json!({"n": 3})).await;
    assert_eq!(failed(&r), ("tool_error", r#"{"code":7,"reason":"3 is odd"}"#), "a non-string error as JSON");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_lists_the_functions_it_skips_and_why() {
    let engine = toolhost::Engine::new(&test_engine_settings()).unwrap();
    let report = toolhost::inspect_file(&engine, Path::new(TEST_TYPED_WASM), None).await.unwrap();
    assert!(report.typed && report.refused.is_none(), "{:?}", report.refused);
    assert_eq!(report.tools.len(), 13);
    let skipped: Vec<(&str, &str)> =
        report.skipped.iter().map(|s| (s.function.as_str(), s.why.as_str())).collect();
    let functions: Vec<&str> = skipped.iter().map(|(f, _)| *f).collect();
    assert_eq!(
        functions,
        ["counters#[constructor]counter", "counters#[method]counter.get", "counters#make", "counters#read"],
        "{skipped:?}"
    );
    for (function, why) in &skipped {
        assert!(why.contains("resource handle (own/borrow)"), "{function}: {why}");
    }
    assert!(skipped[3].1.starts_with("parameter c: "), "{:?}", skipped[3]);
    assert!(skipped[2].1.starts_with("its result: "), "{:?}", skipped[2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_limits_bound_a_typed_call() {
    let started = Instant::now();
    let deadline = Limits { fuel: u64::MAX, timeout: Duration::from_millis(300), ..Limits::default() };
    let host = host(deadline).await;
    let r = call(&host, "spin", json!({})).await;
    assert_eq!(failed(&r).0, "timeout", "{:?}", r.error);
    assert!(started.elapsed() < Duration::from_secs(20));

    let fuel = Limits { fuel: 100_000_000, timeout: Duration::from_secs(60), ..Limits::default() };
    let r = call(&host_with(fuel).await, "spin", json!({})).await;
    assert_eq!(failed(&r).0, "fuel_exhausted", "{:?}", r.error);

    let memory = Limits { memory_bytes: 32 << 20, fuel: u64::MAX, ..Limits::default() };
    let host = host_with(memory).await;
    let r = call(&host, "hog", json!({})).await;
    let (code, message) = failed(&r);
    assert_eq!(code, "memory_limit", "{message}");
    assert!(message.contains("32 MiB"), "{message}");
    assert_eq!(ok(&call(&host, "echo", json!({"text": "after"})).await), "after");

    // A result larger than the host takes from a guest (wasmtime's bound on what one
    // call copies out, counted in host values): output_limit, the host unharmed.
    let host = host_with(Limits { fuel: u64::MAX, ..Limits::default() }).await;
    let r = call(&host, "flood", json!({"n": 8_000_000})).await;
    let (code, message) = failed(&r);
    assert_eq!(code, "output_limit", "{message}");
    assert!(message.contains("too large to take from the guest"), "{message}");
    let r = call(&host, "flood", json!({"n": 3})).await;
    assert_eq!(ok(&r), "[7,7,7]");
}

async fn host_with(limits: Limits) -> Host {
    host(limits).await
}

/// Write a policy entry for the typed guest with `extra` and build a host over it.
async fn policy_host(
    dir: &Path,
    extra: &str,
    sha: Option<&str>,
    mode: Option<Mode>,
) -> Result<Host, LoadError> {
    let real = hex::encode(Sha256::digest(std::fs::read(TEST_TYPED_WASM).unwrap()));
    let sha = sha.unwrap_or(&real);
    let text = format!("[plugins.weather]\nsource = {TEST_TYPED_WASM:?}\nsha256 = \"{sha}\"\n{extra}\n");
    let path = dir.join("toolhost.toml");
    std::fs::write(&path, text).unwrap();
    let mut builder =
        Host::builder().work_dir(dir).engine_settings(test_engine_settings()).without_builtins();
    if let Some(mode) = mode {
        builder = builder.mode(mode);
    }
    builder.policy(Policy::load(&path)?).build().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_comes_from_the_policy_entry_alone() {
    let dir = tempfile::tempdir().unwrap();
    let host = policy_host(dir.path(), r#"read-only = ["get_weather"]"#, None, Some(Mode::Default))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(host.registry().get("get_weather").unwrap().spec().read_only);
    assert!(!host.registry().get("echo").unwrap().spec().read_only);
    // Without an approver, default mode runs read-only tools and refuses the others.
    let r = call(&host, "get_weather", json!({"location": {"lat": 0, "lon": 0}, "extras": []})).await;
    ok(&r);
    let r = call(&host, "echo", json!({"text": "x"})).await;
    assert_eq!(failed(&r).0, "permission_denied", "{:?}", r.error);

    let err =
        policy_host(dir.path(), r#"read-only = ["get_wether"]"#, None, None).await.err().expect("refused");
    assert!(
        err.to_string().contains("read-only names \"get_wether\", which is not one of its tools"),
        "{err}"
    );
    // The same pinning as any plugin.
    let err = policy_host(dir.path(), "", Some(&"0".repeat(64)), None).await.err().expect("refused");
    assert!(matches!(err, LoadError::IdentityMismatch { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_a_builtin_has_gets_the_plugin_name_first() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::builder()
        .work_dir(dir.path())
        .engine_settings(test_engine_settings())
        .mode(Mode::Yolo)
        .plugin_file(TEST_TYPED_WASM)
        .build()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(host.registry().get("read_file").unwrap().source(), "builtin:fs");
    let stem = Path::new(TEST_TYPED_WASM).file_stem().unwrap().to_str().unwrap().replace('-', "_");
    let prefixed = format!("{stem}_read_file");
    let r = call(&host, &prefixed, json!({"path": "x"})).await;
    assert_eq!(ok(&r), "not a file reader: x");
}

/// The JavaScript typed-export example (componentize-js, `plugins/examples/js-typed`):
/// the same derivation for another toolchain's component.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_javascript_component_s_functions_are_tools_too() {
    let host = Host::builder()
        .engine_settings(test_engine_settings())
        .without_builtins()
        .mode(Mode::Yolo)
        .plugin_file(toolhost_tests::example_wasm("weather"))
        .build()
        .await
        .unwrap_or_else(|e| panic!("the JS typed component loads: {e}"));
    let defs = host.definitions();
    let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["get_weather", "shout"]);
    // componentize-js keeps no doc comments: the default names the function.
    assert_eq!(
        defs[0].description,
        "Calls the function `forecast#get-weather` of this WebAssembly component."
    );
    assert_eq!(defs[0].parameters["required"], json!(["location", "tags"]));

    assert_eq!(ok(&call(&host, "shout", json!({"text": "quiet"})).await), "QUIET");
    let args = json!({"location": {"lat": 45, "lon": 7}, "units": "imperial", "tags": ["a"]});
    let report: Value = serde_json::from_str(ok(&call(&host, "get_weather", args).await)).unwrap();
    assert_eq!(
        report,
        json!({"place": "45,7", "temperature": 51.8, "units": "imperial", "sky": {"tag": "cloudy", "value": 40}, "tags": ["a"]})
    );
    let args = json!({"location": {"lat": 0, "lon": 0}, "tags": []});
    let report: Value = serde_json::from_str(ok(&call(&host, "get_weather", args).await)).unwrap();
    assert_eq!(report["sky"], json!({"tag": "clear"}));
    assert_eq!(report["units"], "metric");

    let r = call(&host, "get_weather", json!({"location": {"lat": -91, "lon": 0}, "tags": []})).await;
    assert_eq!(failed(&r), ("tool_error", "latitude -91 is not between -90 and 90"));
    let r = call(&host, "get_weather", json!({"location": {"lat": 1, "lon": "east"}, "tags": []})).await;
    assert_eq!(failed(&r), ("invalid_args", "location.lon: expected f64, got string"));
}

/// Over MCP: a typed result is `structuredContent.metadata.result`, fitting the
/// tool's own `outputSchema`; a string result stays plain text with the shared schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_mcp_a_typed_result_is_structured_content_fitting_its_output_schema() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    let work = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::new(toolhost_tests::toolhost_bin());
    cmd.arg("serve").arg("--work-dir").arg(work.path()).args([
        "--plugin",
        TEST_TYPED_WASM,
        "--eager",
        "--mode",
        "yolo",
    ]);
    cmd.env("TOOLHOST_CACHE_DIR", toolhost_tests::workspace_root().join("target").join("test-compile-cache"));
    cmd.env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir());
    cmd.env_remove("TOOLHOST_LOG").kill_on_drop(true);
    let transport = rmcp::transport::TokioChildProcess::new(cmd).expect("spawn toolhost serve");
    let client = ().serve(transport).await.expect("MCP handshake");
    let tools = client.list_all_tools().await.expect("tools/list");
    let tool = |name: &str| tools.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("{name}")).clone();
    let schema = |name: &str| Value::Object((*tool(name).output_schema.expect("outputSchema")).clone());
    let weather_schema = schema("get_weather");
    assert_eq!(weather_schema["properties"]["metadata"]["required"], json!(["result"]));
    assert!(
        schema("echo")["properties"]["metadata"].get("properties").is_none(),
        "a string result: the shared schema"
    );

    let call = |name: &str, args: Value| {
        let Value::Object(args) = args else { unreachable!() };
        client.call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(args))
    };
    let r = call(
        "get_weather",
        json!({"location": {"lat": 0, "lon": 0, "name": "Null Island"}, "extras": ["wind"]}),
    )
    .await
    .expect("tools/call");
    let structured = r.structured_content.clone().expect("structuredContent");
    assert_eq!(structured["metadata"]["result"]["place"], "Null Island");
    assert_eq!(structured["metadata"]["result"]["extras"], json!(["wind"]));
    let validator = jsonschema::validator_for(&weather_schema).expect("a valid outputSchema");
    assert!(validator.is_valid(&structured), "{structured}");

    let r = call("echo", json!({"text": "plain"})).await.expect("tools/call");
    assert_eq!(r.content[0].as_text().expect("text").text, "plain");
    let structured = r.structured_content.clone().expect("structuredContent");
    assert!(structured.get("metadata").is_none(), "{structured}");
    client.cancel().await.ok();
}

fn toolhost(cwd: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(toolhost_tests::toolhost_bin())
        .current_dir(cwd)
        .args(args)
        .env_remove("TOOLHOST_LOG")
        .env("TOOLHOST_CONFIG_DIR", toolhost_tests::test_config_dir())
        .env("TOOLHOST_DATA_DIR", toolhost_tests::test_data_dir())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("running toolhost")
}

/// `toolhost inspect` shows the tools with their schemas and the skipped functions;
/// `toolhost add` writes `read-only` and the `config` values a component reads.
#[test]
fn inspect_shows_schemas_and_skipped_functions_and_add_writes_read_only_and_config() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(TEST_TYPED_WASM, dir.path().join("typed.wasm")).unwrap();
    let out = toolhost(dir.path(), &["inspect", "typed.wasm"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("tools: (its exported functions)\n"), "{stdout}");
    assert!(stdout.contains("  get_weather: Get the weather at a place.\n    arguments: {"), "{stdout}");
    assert!(stdout.contains("skipped functions (not tools):\n  counters#[constructor]counter: "), "{stdout}");
    assert!(stdout.contains("  counters#make: its result: a resource handle"), "{stdout}");

    let out =
        toolhost(dir.path(), &["add", "typed.wasm", "--read-only", "get_weather", "--read-only", "area"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let policy = std::fs::read_to_string(dir.path().join("toolhost.toml")).unwrap();
    assert!(policy.contains("read-only = [\"get_weather\", \"area\"]"), "{policy}");
    let out = toolhost(dir.path(), &["add", "typed.wasm", "--name", "other", "--read-only", "nope"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("read-only names \"nope\""), "{out:?}");

    // A component reading wasi:config: its keys are asked for, and written.
    std::fs::copy(toolhost_tests::TEST_CONFIG_WASM, dir.path().join("cfg.wasm")).unwrap();
    let out = toolhost(dir.path(), &["inspect", "cfg.wasm"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("config:     yes (wasi:config/store"), "{out:?}");
    let out = toolhost(dir.path(), &["add", "cfg.wasm"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--config KEY=VALUE"), "{out:?}");
    let out = toolhost(dir.path(), &["add", "cfg.wasm", "--config", "units=metric", "--config", "API_KEY"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let policy = std::fs::read_to_string(dir.path().join("toolhost.toml")).unwrap();
    assert!(policy.contains("config = { units = \"metric\", API_KEY = { env = \"API_KEY\" } }"), "{policy}");
}
