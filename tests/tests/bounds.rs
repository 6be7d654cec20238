//! Bounds on what a plugin sends the host (issue 13, items 7 and 8; issue 14).
//!
//! At load, a tool list is checked before it is converted or parsed: too many
//! tools, a name, description or schema too long, a schema nested too deep, a
//! list too large in all, or a listing that traps, loops or hogs memory is a
//! clean `LoadError`, quickly, and the process lives on. Per call, every part of
//! a result (error message and code, display, metadata) is bounded, its full text
//! kept by call id and read back with `read_output`, and the host keeps serving.
//! Errors the host makes itself are bounded the same way.
//!
//! The tests moving 100 MB take one lock, so the peak RSS each measures is its own.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolhost::{Host, Limits, LoadError, ToolCall, ToolResult};
use toolhost_tests::{FLOOD_WASM, hostile_host, test_engine_settings, toolhost_bin};

const MIB: usize = 1 << 20;

/// Held by every test that moves about 100 MB, so each measures its own peak.
static HEAVY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Resident and peak resident memory of this process, in bytes.
fn rss() -> (usize, usize) {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let field = |name: &str| -> usize {
        let line = status.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name}"));
        line[name.len()..].trim().trim_end_matches("kB").trim().parse::<usize>().expect("a number of kB")
            << 10
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Runs `work` and returns what it returned and how far above the starting RSS
/// the process's peak went (the peak is reset first through `clear_refs`).
async fn peak_growth<T>(work: impl std::future::Future<Output = T>) -> (T, usize) {
    std::fs::write("/proc/self/clear_refs", "5").expect("resetting the peak RSS");
    let (before, _) = rss();
    let out = work.await;
    let (_, peak) = rss();
    (out, peak.saturating_sub(before))
}

fn assert_sane_growth(growth: usize, what: &str) {
    eprintln!("{what}: peak RSS grew by {} MiB", growth / MIB);
    assert!(growth < 1 << 30, "{what}: peak RSS grew by {} MiB", growth / MIB);
}

/// A host with only the flood plugin, listing as `FLOOD_LISTING=listing` says.
async fn flood_host(listing: &str, limits: Limits) -> Result<Host, LoadError> {
    let mut builder = Host::builder()
        .without_builtins()
        .limits(limits)
        .engine_settings(test_engine_settings())
        .mode(toolhost::Mode::Yolo)
        .plugin_file(FLOOD_WASM);
    if !listing.is_empty() {
        builder = builder.plugin_env(FLOOD_WASM, "FLOOD_LISTING", listing);
    }
    builder.build().await
}

/// The load error for `listing`, which must be refused.
async fn refused(listing: &str, limits: Limits) -> String {
    match flood_host(listing, limits).await {
        Ok(host) => panic!("{listing}: loaded {} tools", host.registry().len()),
        Err(err) => {
            let text = err.to_string();
            assert!(text.len() < 4096, "{listing}: the load error is {} bytes", text.len());
            text
        }
    }
}

fn big_listing_limits() -> Limits {
    Limits { memory_bytes: 512 * MIB, ..Limits::default() }
}

/// Limits under which a guest can hand the host 100 MB parts.
fn big_result_limits() -> Limits {
    Limits { memory_bytes: 1 << 30, output_bytes: 256 * MIB, ..Limits::default() }
}

async fn big_result_host() -> (Host, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::builder()
        .work_dir(dir.path())
        .limits(big_result_limits())
        .output_store_bytes(256 * MIB)
        .engine_settings(test_engine_settings())
        .mode(toolhost::Mode::Yolo)
        .plugin_file(toolhost_tests::HOSTILE_WASM)
        .plugin_file(FLOOD_WASM)
        .build()
        .await
        .expect("the hostile and flood plugins load");
    (host, dir)
}

async fn call(host: &Host, name: &str, args: Value) -> ToolResult {
    host.execute(ToolCall::new(name, args)).await
}

async fn call_id(host: &Host, id: &str, name: &str, args: Value) -> ToolResult {
    host.execute(ToolCall::new(name, args).with_id(id)).await
}

async fn still_serves(host: &Host) {
    let r = call(host, "noop", json!({})).await;
    assert!(r.ok && r.output == "ok", "noop after a hostile call: {:?}", r.error);
}

fn message(r: &ToolResult) -> &str {
    &r.error.as_ref().unwrap_or_else(|| panic!("expected a failure, got {:?}", r.output)).message
}

/// `read_output` with `args`, which must succeed.
async fn read_back(host: &Host, args: Value) -> ToolResult {
    let r = call(host, "read_output", args.clone()).await;
    assert!(r.ok, "read_output {args}: {:?}", r.error);
    assert!(r.output.len() <= host.limits().clamp_bytes, "a read_output reply is {} bytes", r.output.len());
    r
}

// ---- the tool list at load --------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_normal_listing_loads_and_up_to_the_bound_of_tools_too() {
    let host = flood_host("", Limits::default()).await.expect("the default listing loads");
    let r = call(&host, "flood_noop", json!({})).await;
    assert_eq!((r.ok, r.output.as_str()), (true, "flood_noop ran"), "{:?}", r.error);
    // The variable reaches the listing: exactly the bound of tools loads.
    let host = flood_host("tools:1000", Limits::default()).await.expect("1000 tools load");
    assert_eq!(host.registry().len(), 1000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_tools_are_refused_naming_the_bound() {
    for (listing, count) in [("tools:1001", "1001"), ("tools:10000", "10000")] {
        let err = refused(listing, Limits::default()).await;
        assert!(err.starts_with("tool_list_too_large: "), "{err}");
        assert!(err.contains(&format!("it lists {count} tools; a plugin may list at most 1000")), "{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_thousand_tools_are_refused_quickly() {
    let _heavy = HEAVY.lock().await;
    let started = Instant::now();
    let err = refused("tools:200000", big_listing_limits()).await;
    let took = started.elapsed();
    assert!(err.contains("it lists 200000 tools"), "{err}");
    assert!(took < Duration::from_secs(10), "refusing 200,000 tools took {took:?}");
    eprintln!("200,000 tools refused in {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_description_name_or_schema_is_refused_naming_the_tool() {
    let _heavy = HEAVY.lock().await;
    let cases = [
        (
            format!("description:{}", 100 * MIB),
            "tool \"big_description\": its description is 104857600 bytes; the bound is 32768",
        ),
        (
            format!("schema:{}", 10 * MIB),
            "tool \"big_schema\": its parameter schema is 10485760 bytes; the bound is 262144",
        ),
        (format!("schema:{}", 256 * 1024 + 1), "tool \"big_schema\": its parameter schema is 262145 bytes"),
        (format!("name:{}", 10 * MIB), "its name is 10485760 bytes; the bound is 64 bytes"),
    ];
    for (listing, expected) in cases {
        let (err, growth) = peak_growth(refused(&listing, big_listing_limits())).await;
        assert!(err.contains(expected), "{listing}: {err}");
        assert_sane_growth(growth, &listing);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deeply_nested_schema_is_refused_before_it_is_parsed() {
    for depth in [100_000, 64] {
        // The schema's object is one level, so 64 nested arrays make 65.
        let err = refused(&format!("deep:{depth}"), Limits::default()).await;
        assert!(
            err.contains(
                "tool \"deep_schema\": its parameter schema nests arrays and objects deeper than 64"
            ),
            "{err}"
        );
    }
    let host = flood_host("deep:63", Limits::default()).await.expect("a schema 64 levels deep loads");
    assert!(host.registry().get("deep_schema").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_too_large_in_all_is_refused() {
    // 200 descriptions of 30 KiB: each within its bound, 6 MB together.
    let err = refused("total:200:30720", Limits::default()).await;
    assert!(
        err.contains("its 200 tools are ") && err.contains("in all; the bound is 4194304 bytes"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_megabytes_of_small_schema_values_is_refused_and_the_process_lives() {
    let _heavy = HEAVY.lock().await;
    let (err, growth) = peak_growth(refused(&format!("values:{}", 100 * MIB), big_listing_limits())).await;
    assert!(err.contains("tool \"many_values\": its parameter schema is 10485"), "{err}");
    assert_sane_growth(growth, "100 MB of schema values");
    // The process is alive and a host built afterwards works.
    let (host, _dir) = hostile_host(Limits::default()).await;
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_that_traps_loops_or_hogs_is_a_clean_load_error() {
    let err = refused("panic", Limits::default()).await;
    assert!(
        err.contains("listing its tools failed: trap: ") && err.contains("flood panicked while listing"),
        "{err}"
    );

    let started = Instant::now();
    let err =
        refused("spin", Limits { fuel: u64::MAX, timeout: Duration::from_millis(500), ..Limits::default() })
            .await;
    assert!(err.contains("listing its tools failed: timeout: it took longer than 500 ms"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());

    let err = refused("spin", Limits { fuel: 100_000_000, ..Limits::default() }).await;
    assert!(err.contains("listing its tools failed: fuel_exhausted: "), "{err}");

    let err = refused("hog", Limits { memory_bytes: 64 * MIB, ..Limits::default() }).await;
    assert!(err.contains("listing its tools failed: memory_limit: ") && err.contains("64 MiB"), "{err}");

    let (host, _dir) = hostile_host(Limits::default()).await;
    still_serves(&host).await;
}

#[test]
fn the_cli_exits_2_naming_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let sha = hex::encode(Sha256::digest(std::fs::read(FLOOD_WASM).unwrap()));
    let policy =
        format!("[plugins.flood]\nsource = {FLOOD_WASM:?}\nsha256 = \"{sha}\"\nenv = [\"FLOOD_LISTING\"]\n");
    // Outside the work dir, so the policy needs no `toolhost trust`.
    let policy_dir = tempfile::tempdir().unwrap();
    let policy_path = policy_dir.path().join("toolhost.toml");
    std::fs::write(&policy_path, policy).unwrap();
    let list = |listing: &str| {
        Command::new(toolhost_bin())
            .current_dir(dir.path())
            .args(["list", "--work-dir", dir.path().to_str().unwrap()])
            .arg("--policy")
            .arg(&policy_path)
            .env("FLOOD_LISTING", listing)
            .env_remove("TOOLHOST_LOG")
            .output()
            .expect("running toolhost")
    };
    let out = list("tools:10000");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("tool_list_too_large: flood: it lists 10000 tools"), "{stderr}");
    let out = list("tools:3");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("t2"));
}

// ---- the parts of a call's result ---------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_megabyte_error_message_is_cut_kept_and_read_back() {
    let _heavy = HEAVY.lock().await;
    let (host, _dir) = big_result_host().await;
    let (r, growth) = peak_growth(call_id(&host, "err-1", "huge_error", json!({"bytes": 100 * MIB}))).await;
    assert_sane_growth(growth, "a 100 MB error message");
    assert_eq!(r.code(), Some("huge_error"));
    let text = message(&r);
    assert!(text.len() < 31_000, "the message is {} bytes", text.len());
    assert!(text.starts_with("error line 0\nerror line 1\n"), "{}", &text[..40]);
    assert!(
        text.contains(r#"call read_output with {"call_id": "err-1", "part": "error", "offset": "#),
        "{text}"
    );
    let full =
        host.outputs().get_part("err-1", toolhost::Part::Error).await.expect("the whole message is kept");
    assert!(full.len() >= 100 * MIB, "{}", full.len());
    // The middle, through read_output: a window and a pattern.
    let window =
        read_back(&host, json!({"call_id": "err-1", "part": "error", "offset": 3_000_000, "limit": 2})).await;
    assert!(
        window.output.starts_with("3000000\terror line 2999999\n3000001\terror line 3000000\n"),
        "{}",
        window.output
    );
    let found =
        read_back(&host, json!({"call_id": "err-1", "part": "error", "pattern": "^error line 5000000$"}))
            .await;
    assert_eq!(found.output, "5000001\terror line 5000000\n");
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_message_too_large_to_keep_says_so() {
    let _heavy = HEAVY.lock().await;
    // The default store keeps 64 MiB in all.
    let (host, _dir) = hostile_host(Limits { memory_bytes: 512 * MIB, ..Limits::default() }).await;
    let r = call_id(&host, "err-2", "huge_error", json!({"bytes": 100 * MIB})).await;
    let text = message(&r);
    assert!(text.len() < 31_000, "the message is {} bytes", text.len());
    assert!(text.contains("was too large for the output store and was not kept"), "{text}");
    let miss = call(&host, "read_output", json!({"call_id": "err-2", "part": "error"})).await;
    assert_eq!(miss.code(), Some("output_not_found"));
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_megabyte_display_is_cut_kept_and_read_back() {
    let _heavy = HEAVY.lock().await;
    let (host, _dir) = big_result_host().await;
    let (r, growth) =
        peak_growth(call_id(&host, "disp-1", "huge_display", json!({"bytes": 100 * MIB}))).await;
    assert_sane_growth(growth, "a 100 MB display");
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(r.output, "the display is large");
    let display = r.display.as_deref().unwrap();
    assert!(display.len() < 256 * 1024 + 300, "the display is {} bytes", display.len());
    assert!(display.contains(r#"call read_output with {"call_id": "disp-1", "part": "display", "offset": "#));
    let last = read_back(
        &host,
        json!({"call_id": "disp-1", "part": "display", "pattern": "^display line 4000000$"}),
    )
    .await;
    assert_eq!(last.output, "4000001\tdisplay line 4000000\n");
    still_serves(&host).await;

    // Under the default limits the same display is more than a call may return.
    let (host, _dir) = hostile_host(Limits { memory_bytes: 512 * MIB, ..Limits::default() }).await;
    let r = call(&host, "huge_display", json!({"bytes": 100 * MIB})).await;
    assert_eq!(r.code(), Some("output_limit"), "{:?}", r.error);
    assert!(message(&r).len() < 200);
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_megabyte_metadata_is_not_parsed_and_is_read_back_in_pieces() {
    let _heavy = HEAVY.lock().await;
    let (host, _dir) = big_result_host().await;
    let (r, growth) =
        peak_growth(call_id(&host, "meta-1", "huge_metadata", json!({"bytes": 100 * MIB}))).await;
    assert_sane_growth(growth, "100 MB of metadata");
    assert!(r.ok, "{:?}", r.error);
    let stand_in = r.metadata.as_ref().unwrap();
    let bytes = 100 * MIB + r#"{"text":""}"#.len();
    assert_eq!(stand_in["omitted"], true);
    assert_eq!(stand_in["bytes"], bytes);
    assert_eq!(stand_in["kept"], true);
    assert_eq!(stand_in["read_output"], json!({"call_id": "meta-1", "part": "metadata"}));
    assert!(stand_in["reason"].as_str().unwrap().contains("at most 65536 bytes are parsed"), "{stand_in}");
    assert!(stand_in.to_string().len() < 400);

    // One line of 100 MB: read_output shows it in pieces, each naming the next.
    let first = read_back(&host, json!({"call_id": "meta-1", "part": "metadata"})).await;
    assert!(first.output.starts_with("     1\t{\"text\":\"mmmm"), "{}", &first.output[..40]);
    let next = &first.metadata.as_ref().unwrap()["next"];
    assert_eq!(next["offset"], 1);
    let column = next["column"].as_u64().unwrap();
    assert!(first.output.contains(&format!("use offset=1, column={column} to continue")));
    let tail_at = bytes as u64 - 100;
    let tail = read_back(&host, json!({"call_id": "meta-1", "part": "metadata", "column": tail_at})).await;
    assert_eq!(tail.output, format!("     1\t{}\"}}\n", "m".repeat(98)));
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifty_million_element_metadata_array_is_not_parsed() {
    let _heavy = HEAVY.lock().await;
    let (host, _dir) = big_result_host().await;
    let n = 50_000_000;
    let args = json!({"shape": "array", "n": n});
    let (r, growth) = peak_growth(call_id(&host, "arr-1", "raw_metadata", args)).await;
    assert_sane_growth(growth, "a 50 M-element metadata array");
    assert!(r.ok, "{:?}", r.error);
    let stand_in = r.metadata.as_ref().unwrap();
    assert_eq!(stand_in["bytes"], 2 * n + 1);
    assert_eq!(stand_in["read_output"]["part"], "metadata");
    let kept = host.outputs().get_part("arr-1", toolhost::Part::Metadata).await.unwrap();
    assert_eq!(kept.len(), 2 * n + 1);
    assert!(kept.starts_with("[0,0,") && kept.ends_with(",0]"));
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_or_broken_metadata_is_not_returned_as_json() {
    let (host, _dir) = hostile_and_flood(Limits::default()).await;
    // 100,000 deep is also over the size bound, which is checked first.
    let too_deep = "the metadata nests arrays and objects deeper than 32 levels";
    let too_long = "the metadata is 200000 bytes; at most 65536 bytes are parsed and returned";
    for (depth, reason) in [(100_000, too_long), (30_000, too_deep), (33, too_deep)] {
        let id = format!("deep-{depth}");
        let r = call_id(&host, &id, "raw_metadata", json!({"shape": "deep", "n": depth})).await;
        assert!(r.ok, "{:?}", r.error);
        let stand_in = r.metadata.as_ref().unwrap();
        assert_eq!(stand_in["reason"], reason);
        assert_eq!(stand_in["read_output"], json!({"call_id": id, "part": "metadata"}));
        let back = read_back(&host, json!({"call_id": id, "part": "metadata"})).await;
        assert!(back.output.starts_with("     1\t[[[["), "{}", &back.output[..20]);
    }
    // At the bound it is JSON.
    let r = call(&host, "raw_metadata", json!({"shape": "deep", "n": 32})).await;
    assert!(r.metadata.as_ref().unwrap().is_array(), "{:?}", r.metadata);
    // Within the bounds but not JSON: bad_output, its message bounded.
    let r = call(&host, "raw_metadata", json!({"shape": "invalid", "n": 60_000})).await;
    assert_eq!(r.code(), Some("bad_output"), "{:?}", r.error);
    assert!(message(&r).len() < 300, "{}", message(&r));
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_over_its_bound_under_the_default_limits_gets_a_stand_in() {
    let (host, _dir) = hostile_and_flood(Limits::default()).await;
    let r = call_id(&host, "meta-2", "huge_metadata", json!({"bytes": MIB})).await;
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(r.metadata.as_ref().unwrap()["kept"], true);
    let kept = host.outputs().get_part("meta-2", toolhost::Part::Metadata).await.unwrap();
    assert_eq!(kept.len(), MIB + r#"{"text":""}"#.len());
    // Just within the bound it is returned whole.
    let r = call(&host, "huge_metadata", json!({"bytes": 60_000})).await;
    assert_eq!(r.metadata.as_ref().unwrap()["text"].as_str().map(str::len), Some(60_000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_error_code_becomes_bad_output() {
    let (host, _dir) = hostile_host(Limits::default()).await;
    for bytes in [65, 10 * MIB] {
        let r = call(&host, "huge_code", json!({"bytes": bytes})).await;
        assert_eq!(r.code(), Some("bad_output"));
        let text = message(&r);
        assert!(
            text.contains(&format!("invalid error code ({bytes} bytes"))
                && text.ends_with("the code is large"),
            "{text}"
        );
        assert!(text.len() < 300);
    }
    let r = call(&host, "huge_code", json!({"bytes": 64})).await;
    assert_eq!(r.code().map(str::len), Some(64));
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_output_replies_stay_within_the_clamp_and_give_back_the_whole_text() {
    let (host, _dir) = hostile_and_flood(Limits::default()).await;
    // Many short lines: a reply stops at its budget and names the next offset.
    let r = call_id(&host, "lines-1", "big_output", json!({"bytes": 200_000})).await;
    assert!(r.ok, "{:?}", r.error);
    let back = read_back(&host, json!({"call_id": "lines-1", "limit": 2000})).await;
    let next = back.metadata.as_ref().unwrap()["next"]["offset"].as_u64().unwrap();
    assert!((1000..2000).contains(&next), "stopped before line {next}");
    assert!(back.output.ends_with(&format!("; use offset={next} to continue]\n")), "{}", back.output);

    // One line of 200 kB: following `next` piece by piece gives back all of it.
    let r = call_id(&host, "meta-3", "huge_metadata", json!({"bytes": 200_000})).await;
    assert_eq!(r.metadata.as_ref().unwrap()["kept"], true);
    let (mut whole, mut offset, mut column, mut pieces) = (String::new(), 1, 0, 0);
    loop {
        let args =
            json!({"call_id": "meta-3", "part": "metadata", "offset": offset, "column": column, "limit": 1});
        let piece = read_back(&host, args).await;
        let (number, text) = piece.output.lines().next().unwrap().split_once('\t').unwrap();
        assert_eq!(number.trim(), "1");
        whole.push_str(text);
        pieces += 1;
        match &piece.metadata.as_ref().unwrap()["next"] {
            Value::Null => break,
            next => (offset, column) = (next["offset"].as_u64().unwrap(), next["column"].as_u64().unwrap()),
        }
    }
    let kept = host.outputs().get_part("meta-3", toolhost::Part::Metadata).await.unwrap();
    assert_eq!(whole, *kept);
    assert!(pieces >= 7, "{pieces} pieces");
}

async fn hostile_and_flood(limits: Limits) -> (Host, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::builder()
        .work_dir(dir.path())
        .limits(limits)
        .engine_settings(test_engine_settings())
        .mode(toolhost::Mode::Yolo)
        .plugin_file(toolhost_tests::HOSTILE_WASM)
        .plugin_file(FLOOD_WASM)
        .build()
        .await
        .expect("the hostile and flood plugins load");
    (host, dir)
}

// ---- errors the host makes ------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_made_errors_are_bounded() {
    let (host, dir) = hostile_host(Limits::default()).await;
    let huge = "x".repeat(10 * MIB);

    let r = call(&host, &huge, json!({})).await;
    assert_eq!(r.code(), Some("unknown_tool"));
    assert!(message(&r).starts_with("no tool has a 10485760-byte name (names are at most 64 bytes)"));
    assert!(message(&r).len() < 200, "{} bytes", message(&r).len());

    // The schema validator echoes the value: the message is cut, and kept.
    let r = call_id(&host, "args-1", "echo", json!({"count": huge})).await;
    assert_eq!(r.code(), Some("invalid_args"));
    let text = message(&r);
    assert!(text.len() < 31_000, "the message is {} bytes", text.len());
    assert!(text.contains(r#"{"call_id": "args-1", "part": "error""#), "{}", &text[..200]);
    let kept = host.outputs().get_part("args-1", toolhost::Part::Error).await.unwrap();
    assert!(kept.len() > 10 * MIB);

    let r = call(&host, "read_output", json!({"call_id": huge})).await;
    assert_eq!(r.code(), Some("output_not_found"));
    assert!(message(&r).len() < 600, "{} bytes", message(&r).len());

    for tool in ["read_file", "list_dir", "write_file"] {
        let mut args = json!({"path": huge});
        if tool == "write_file" {
            args["content"] = json!("x");
        }
        let r = call(&host, tool, args).await;
        assert_eq!(r.code(), Some("path_too_long"), "{tool}: {:?}", r.error);
        assert_eq!(message(&r), "the path is 10485760 bytes; paths are at most 4096 bytes");
    }
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "nothing was written");
    still_serves(&host).await;
}

/// An image under the reserved metadata key is lifted out, checked and bounded on its
/// own: it never reaches `metadata`, the store keeps the text, and a lying, malformed
/// or oversized one is refused with a clear code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugins_image_is_checked_and_bounded_on_its_own() {
    let (host, _dir) = hostile_and_flood(Limits::default()).await;
    let r = call_id(&host, "img-1", "raw_metadata", json!({"shape": "image", "n": 3_000_000})).await;
    assert!(r.ok, "{:?}", r.error);
    let image = r.image.as_ref().expect("an image");
    assert_eq!((image.mime_type.as_str(), image.bytes), ("image/png", 3_000_000));
    assert_eq!(image.data.len(), 4_000_000);
    assert_eq!(r.metadata, Some(json!({"note": "beside the image"})));
    let serialized = serde_json::to_string(&r).unwrap();
    assert!(serialized.len() < 2_000, "the data is not serialized: {} bytes", serialized.len());
    let back = read_back(&host, json!({"call_id": "img-1"})).await;
    assert!(back.output.contains("bytes of metadata"), "{}", back.output);
    assert!(host.outputs().get_part("img-1", toolhost::Part::Metadata).await.is_none());

    // At the bound it passes; one byte over is output_limit, with the limit named.
    let r = call(&host, "raw_metadata", json!({"shape": "image", "n": toolhost::MAX_IMAGE_BYTES})).await;
    assert_eq!(r.image.as_ref().map(|i| i.bytes), Some(toolhost::MAX_IMAGE_BYTES), "{:?}", r.error);
    let r = call(&host, "raw_metadata", json!({"shape": "image", "n": toolhost::MAX_IMAGE_BYTES + 1})).await;
    assert_eq!(r.code(), Some("output_limit"), "{:?}", r.error);
    assert!(message(&r).contains(&toolhost::MAX_IMAGE_BYTES.to_string()), "{}", message(&r));
    for (shape, why) in [("image_not_base64", "not standard base64"), ("image_lying", "claims image/gif")] {
        let r = call(&host, "raw_metadata", json!({"shape": shape, "n": 1000})).await;
        assert_eq!(r.code(), Some("bad_output"), "{shape}: {:?}", r.error);
        assert!(message(&r).contains(why) && message(&r).len() < 300, "{shape}: {}", message(&r));
        assert!(r.image.is_none());
    }
    still_serves(&host).await;
}
