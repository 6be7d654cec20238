//! `scale`: calls per second through `toolhost serve --http` instances: one
//! directly, one behind haproxy, three behind haproxy (round robin, one
//! shared output store directory and compile cache), and the same tool over
//! stdio with as many requests in flight, all in one run.

use std::net::SocketAddr;
use std::time::Instant;

use serde_json::json;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
use toolhost_tests::servers::{Haproxy, Instance, call_text, modern_body, modern_request, serve_command};

/// Clients at once, and calls in all, for each setup.
const CLIENTS: usize = 16;
const CALLS: usize = 4000;

/// `read_file` of a 1 KB file: a real tool, a fresh sandbox per call.
fn args() -> serde_json::Value {
    json!({"name": "read_file", "arguments": {"path": "small.txt"}})
}

/// Calls per second of `CALLS` calls from `CLIENTS` clients through `url`.
async fn rate(url: &str) -> f64 {
    let client = toolhost_tests::servers::http_client().build().expect("client");
    for id in 0..100 {
        modern_request(&client, url, id, "tools/call", args()).await.expect("warm-up call");
    }
    let started = Instant::now();
    let mut clients = tokio::task::JoinSet::new();
    for c in 0..CLIENTS {
        let (client, url) = (client.clone(), url.to_string());
        clients.spawn(async move {
            for i in 0..CALLS / CLIENTS {
                let answer = modern_request(&client, &url, (c * CALLS + i) as u64, "tools/call", args())
                    .await
                    .expect("answered");
                assert!(call_text(&answer).expect("text").contains("xxxx"), "{answer}");
            }
        });
    }
    while clients.join_next().await.is_some() {}
    CALLS as f64 / started.elapsed().as_secs_f64()
}

/// Calls per second over stdio with `CLIENTS` requests in flight.
async fn stdio_rate(work: &std::path::Path) -> f64 {
    let mut child = serve_command(work, &[])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("serve starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let line = |id: usize| format!("{}\n", modern_body(id as u64, "tools/call", args()));
    for id in 0..100 {
        stdin.write_all(line(id).as_bytes()).await.expect("write");
        stdout.next_line().await.expect("read").expect("a line");
    }
    let started = Instant::now();
    for id in 0..CLIENTS {
        stdin.write_all(line(1000 + id).as_bytes()).await.expect("write");
    }
    for id in CLIENTS..CALLS + CLIENTS {
        let answer = stdout.next_line().await.expect("read").expect("a line");
        assert!(answer.contains("xxxx"), "{answer}");
        if id < CALLS {
            stdin.write_all(line(1000 + id).as_bytes()).await.expect("write");
        }
    }
    let rate = CALLS as f64 / started.elapsed().as_secs_f64();
    let _ = child.kill().await;
    rate
}

pub(crate) async fn scale() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("small.txt"), "xxxxxxxxxxxxxxxxxxxx\n".repeat(48)).expect("write");
    let store = work.path().join(".outputs");
    let (balancer, single) = (Haproxy::address(), Haproxy::address());
    let (authority, single_authority) = (balancer.to_string(), single.to_string());
    let flags = [
        "--allow-authority",
        &authority,
        "--allow-authority",
        &single_authority,
        "--store",
        store.to_str().expect("utf-8"),
    ];
    let mut instances = Vec::new();
    for name in ["a", "b", "c"] {
        instances.push(Instance::start(name, work.path(), &flags).await);
    }
    let stdio = stdio_rate(work.path()).await;
    let direct = rate(&instances[0].url()).await;
    let one = Haproxy::start(single, &[instances[0].addr]).await;
    let one_rate = rate(&one.url()).await;
    drop(one);
    let addrs: Vec<SocketAddr> = instances.iter().map(|i| i.addr).collect();
    let three = Haproxy::start(balancer, &addrs).await;
    let three_rate = rate(&three.url()).await;
    let label = |what: &str| format!("scale: read_file 1 KB, {CLIENTS} clients, {what}");
    println!("{:<64} {stdio:.0} calls/s", label("stdio (in flight)"));
    println!("{:<64} {direct:.0} calls/s", label("HTTP, 1 instance direct"));
    println!("{:<64} {one_rate:.0} calls/s", label("HTTP, 1 instance behind haproxy"));
    println!(
        "{:<64} {three_rate:.0} calls/s ({:.2}x of 1 behind haproxy)",
        label("HTTP, 3 instances behind haproxy"),
        three_rate / one_rate
    );
}
