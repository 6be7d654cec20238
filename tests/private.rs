//! The private destinations every network test must see refused, in one place: the
//! forms of a private, loopback or link-local address a URL can spell, the names that
//! resolve to one, and a name that rebinds. The `fetch`-over-`wasi:http` tests (the raw
//! `http` guest, the `wstd` guest, the JavaScript `fetch()` example) share them, so a
//! form added here is checked against every client.
//!
//! Nothing here opens a socket: names come from [`ScriptedResolver`], and [`net`]'s
//! connector sends only [`PUBLIC`] (to the loopback test server) and loopback anywhere.

use std::net::SocketAddr;

use crate::net::{Net, RecordingConnector, Reply, Request, ScriptedResolver};

/// A public-looking address the connector of [`net`] serves from the loopback test server.
pub const PUBLIC: &str = "93.184.216.34";

/// `PUBLIC:80`, where a request to a `*.test` name answering [`PUBLIC`] connects.
pub fn public_addr() -> SocketAddr {
    SocketAddr::new(PUBLIC.parse().expect("ip"), 80)
}

/// The names of [`urls`] and of the rebinding test: `public.test` answers [`PUBLIC`];
/// `loop.test`, `private.test`, `metadata.test`, `v6.test` and `ula.test` a private
/// address each; `mixed.test` a public and a private one; `rebind.test` first [`PUBLIC`],
/// then 127.0.0.1 on every later lookup.
pub fn resolver() -> ScriptedResolver {
    ScriptedResolver::default()
        .with("public.test", &[PUBLIC])
        .with("loop.test", &["127.0.0.1"])
        .with("private.test", &["10.0.0.5"])
        .with("metadata.test", &["169.254.169.254"])
        .with("mixed.test", &[PUBLIC, "192.168.0.1"])
        .with("v6.test", &["::1"])
        .with("ula.test", &["fd00::1"])
        .script("rebind.test", &[&[PUBLIC], &["127.0.0.1"]])
}

/// [`resolver`]'s names, with connections to [`PUBLIC`] going to the loopback `server`.
pub fn net(server: SocketAddr) -> Net {
    Net::new(resolver(), RecordingConnector::default().map(PUBLIC, server))
}

/// Every URL a plugin must be refused without `allow_private` (with every host granted),
/// before anything is connected: loopback (`port` is the test server's, which must not be
/// reached) in its decimal, short, hex and octal spellings, IPv6 and IPv4-mapped forms,
/// the unspecified address, RFC 1918, CGNAT, link-local and the cloud metadata address,
/// multicast, `localhost` and `.local` names, and [`resolver`]'s names that answer a
/// private address (one of two answers is enough).
pub fn urls(port: u16) -> Vec<String> {
    let mut urls = vec![format!("http://127.0.0.1:{port}/"), format!("http://127.42.0.1:{port}/")];
    urls.extend(
        [
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0177.0.0.1/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:a9fe:a9fe]/",
            "http://[fd00::1]/",
            "http://[fe80::1]/",
            "http://[::]/",
            "http://0.0.0.0/",
            "http://10.1.2.3/",
            "http://172.16.0.1/",
            "http://192.168.1.1/",
            "http://100.64.0.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://224.0.0.1/",
            "https://127.0.0.1/",
            "http://localhost/",
            "http://api.localhost/",
            "http://printer.local/",
            "http://loop.test/",
            "http://private.test/",
            "http://metadata.test/",
            "http://mixed.test/",
            "http://v6.test/",
            "http://ula.test/",
        ]
        .map(String::from),
    );
    urls
}

/// The hostile answers the client tests share: `/huge` streams 100 MB (declared),
/// `/forever` a chunked body that never ends, `/drip` one byte every 200 ms, `/private`
/// redirects to 127.0.0.1, `/rebind` to `rebind.test` (which rebinds), `/moved` to
/// `/page`; `None` for any other path (the test's own page).
pub fn hostile_reply(request: &Request) -> Option<Reply> {
    Some(match request.target.as_str() {
        "/huge" => Reply::Stream(100_000_000),
        "/forever" => Reply::Forever,
        "/drip" => Reply::Drip,
        "/private" => Reply::Redirect("http://127.0.0.1/admin".into()),
        "/rebind" => Reply::Redirect("http://rebind.test/again".into()),
        "/moved" => Reply::Redirect("/page".into()),
        _ => return None,
    })
}
