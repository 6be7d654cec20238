//! Tests for the pure vetting module: no sockets, no DNS.

use super::*;

fn v4(s: &str) -> IpAddr {
    IpAddr::V4(s.parse().unwrap())
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn is_blocked(r: &Result<Url, VetError>) -> bool {
    matches!(r, Err(VetError::Blocked(_)))
}

fn is_invalid(r: &Result<Url, VetError>) -> bool {
    matches!(r, Err(VetError::InvalidUrl(_)))
}

#[test]
fn refused_urls_with_exact_variant() {
    const B: bool = true; // Blocked
    const I: bool = false; // InvalidUrl
    let table: &[(&str, bool)] = &[
        // One address in each IPv4 range, plus edges.
        ("http://0.0.0.0/", B),
        ("http://0.1.2.3/", B),
        ("http://10.0.0.1/", B),
        ("http://10.255.255.255/", B),
        ("http://100.64.0.1/", B),
        ("http://100.127.255.255/", B),
        ("http://127.0.0.1/", B),
        ("http://127.255.255.254/", B),
        ("http://169.254.169.254/", B),
        ("http://172.16.0.1/", B),
        ("http://172.31.255.255/", B),
        ("http://192.0.0.1/", B),
        ("http://192.0.2.1/", B),
        ("http://198.51.100.7/", B),
        ("http://203.0.113.9/", B),
        ("http://198.18.0.1/", B),
        ("http://198.19.255.255/", B),
        ("http://192.168.1.1/", B),
        ("http://224.0.0.1/", B),
        ("http://239.255.255.250/", B),
        ("http://240.0.0.1/", B),
        ("http://255.255.255.255/", B),
        // Numeric IPv4 spellings that the WHATWG parser canonicalises.
        ("http://2130706433/", B),
        ("http://0x7f.1/", B),
        ("http://017700000001/", B),
        ("http://127.1/", B),
        ("http://0x7f000001/", B),
        ("http://0177.0.0.1/", B),
        ("http://127.0.0.1.:80/", B),
        ("http://0x7f.0x0.0x0.0x1/", B),
        ("http://0/", B),
        ("http://%31%32%37.0.0.1/", B),
        ("http://\u{ff11}\u{ff12}\u{ff17}.\u{ff10}.\u{ff10}.\u{ff11}/", B), // full-width digits
        ("HTTP://127.0.0.1:8080/x", B),
        // IPv6 literals.
        ("http://[::1]/", B),
        ("http://[::ffff:127.0.0.1]/", B),
        ("http://[::ffff:7f00:1]/", B),
        ("http://[0:0:0:0:0:ffff:a00:1]/", B),
        ("http://[::127.0.0.1]/", B),
        ("http://[::ffff:0:127.0.0.1]/", B),
        ("http://[64:ff9b::7f00:1]/", B),
        ("http://[64:ff9b::a00:1]/", B),
        ("http://[64:ff9b:1::5db8:d822]/", B),
        ("http://[2002:7f00:1::]/", B),
        ("http://[2002:c0a8:101::1]/", B),
        ("http://[fe80::1]/", B),
        ("http://[fd00::1]/", B),
        ("http://[fc00::1]/", B),
        ("http://[fec0::1]/", B),
        ("http://[ff02::1]/", B),
        ("http://[::]/", B),
        ("http://[2001:db8::1]/", B),
        ("http://[2001::1]/", B),
        ("http://[100::1]/", B),
        ("http://[3fff::1]/", B),
        ("https://[::1]:8443/", B),
        // User info never hides the host.
        ("http://example.com@127.0.0.1/", B),
        ("http://user:pass@10.0.0.1/", B),
        ("http://docs.rs:443@[::1]/", B),
        // Local names.
        ("http://localhost/", B),
        ("http://LOCALHOST./", B),
        ("http://localhost:3000/", B),
        ("http://foo.localhost/", B),
        ("http://printer.local/", B),
        ("http://db.internal/", B),
        ("http://nas.home.arpa/", B),
        ("http://local%68ost/", B),
        ("http://localhost%2e/", B),
        ("http://\u{ff4c}\u{ff4f}\u{ff43}\u{ff41}\u{ff4c}\u{ff48}\u{ff4f}\u{ff53}\u{ff54}/", B), // full-width
        // Not http(s), or not a well-formed URL.
        ("file:///etc/passwd", I),
        ("gopher://example.com/", I),
        ("ftp://example.com/", I),
        ("ws://example.com/", I),
        ("data:text/plain,hi", I),
        ("javascript:alert(1)", I),
        ("http:///nohost", I),
        ("http:nohost", I),
        ("http:/nohost", I),
        ("http:\\\\example.com/", I),
        ("http://example.com\\@127.0.0.1/", I),
        ("not a url", I),
        ("notaurl", I),
        ("", I),
        ("http://", I),
        ("http://user@/", I),
        ("http://[::1/", I),
        ("http://[fe80::1%25eth0]/", I),
        ("http://1.2.3.4.5/", I),
        ("http://256.0.0.1/", I),
        ("http://4294967296/", I),
        ("http://example.com:99999/", I),
        ("http://127.0.0.1../", I),
        ("http://a..b.com/", I),
        ("http://*.example.com/", I),
        ("http://ex!ample.com/", I),
        (" http://example.com/", I),
        ("http://example.com/ ", I),
        ("http://exa\tmple.com/", I),
        ("http://example.com/\n", I),
        ("http://example.com/a\u{1}b", I),
        ("http://example.com/\u{7f}", I),
        ("http://example.com/\u{85}", I),
    ];
    assert!(table.iter().filter(|(_, b)| *b).count() >= 40);
    for &(url, blocked) in table {
        let r = vet_url(url, false);
        let ok = if blocked { is_blocked(&r) } else { is_invalid(&r) };
        let want = if blocked { "Blocked" } else { "InvalidUrl" };
        assert!(ok, "{url:?}: expected {want}, got {r:?}");
    }
}

#[test]
fn url_crate_canonicalises_numeric_ipv4_hosts() {
    let loopback = Host::Ipv4(Ipv4Addr::LOCALHOST);
    for form in [
        "http://2130706433/",
        "http://0x7f.1/",
        "http://017700000001/",
        "http://127.1/",
        "http://0x7f000001/",
        "http://0177.0.0.1/",
        "http://127.0.0.1./",
        "http://%31%32%37.0.0.1/",
        "http://\u{ff11}\u{ff12}\u{ff17}.\u{ff10}.\u{ff10}.\u{ff11}/",
    ] {
        let url = Url::parse(form).unwrap();
        assert_eq!(url.host(), Some(loopback.clone()), "{form}");
        assert_eq!(url.as_str(), "http://127.0.0.1/", "{form}");
    }
    // ...but two trailing dots make it a (bogus) domain name, which vet_url refuses.
    assert_eq!(Url::parse("http://127.0.0.1../").unwrap().host(), Some(Host::Domain("127.0.0.1..")));
    // The lenient spellings that vet_url refuses all parse to a plain http://nohost/.
    for lenient in ["http:///nohost", "http:nohost", "http:/nohost", "http:\\\\nohost", " http://nohost"] {
        assert_eq!(Url::parse(lenient).unwrap().as_str(), "http://nohost/", "{lenient:?}");
    }
}

#[test]
fn public_urls_allowed() {
    for (raw, host) in [
        ("https://93.184.216.34/", "93.184.216.34"),
        ("http://[2606:2800:220:1:248:1893:25c8:1946]/", "[2606:2800:220:1:248:1893:25c8:1946]"),
        ("http://[::ffff:93.184.216.34]/", "[::ffff:5db8:d822]"),
        ("http://[64:ff9b::5db8:d822]/", "[64:ff9b::5db8:d822]"),
        ("http://[2002:5db8:d822::1]/", "[2002:5db8:d822::1]"),
        ("https://docs.rs/x", "docs.rs"),
        ("https://example.com:8443/a?b#c", "example.com"),
        ("HTTPS://Example.COM./", "example.com."),
        ("https://user:pw@example.com/", "example.com"),
        ("http://example.com/@127.0.0.1/", "example.com"),
        ("http://b\u{fc}cher.de/", "xn--bcher-kva.de"),
        ("http://_dmarc.example.com/", "_dmarc.example.com"),
        ("http://localhost.example.com/", "localhost.example.com"),
        ("http://mylocal/", "mylocal"),
        ("http://172.32.0.1/", "172.32.0.1"),
        ("http://172.15.255.255/", "172.15.255.255"),
        ("http://100.128.0.1/", "100.128.0.1"),
        ("http://100.63.255.255/", "100.63.255.255"),
        ("http://11.0.0.1/", "11.0.0.1"),
        ("http://192.169.0.1/", "192.169.0.1"),
        ("http://1.1.1.1/", "1.1.1.1"),
        ("http://223.255.255.255/", "223.255.255.255"),
    ] {
        let url = vet_url(raw, false).unwrap_or_else(|e| panic!("{raw}: {e}"));
        assert_eq!(url.host_str(), Some(host), "{raw}");
    }
    assert_eq!(
        vet_url("https://example.com:8443/a?b#c", false).unwrap().as_str(),
        "https://example.com:8443/a?b#c"
    );
}

#[test]
fn allow_private_opens_private_ranges_only() {
    for raw in [
        "http://127.0.0.1/",
        "http://10.0.0.1/",
        "http://[::1]/",
        "http://localhost/",
        "http://localhost.:8080/",
        "http://printer.local/",
        "http://[fd00::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://169.254.169.254/",
    ] {
        assert!(vet_url(raw, true).is_ok(), "{raw}: {:?}", vet_url(raw, true));
        assert!(is_blocked(&vet_url(raw, false)), "{raw}");
    }
    for raw in [
        "http://0.0.0.0/",
        "http://0/",
        "http://[::]/",
        "http://224.0.0.1/",
        "http://255.255.255.255/",
        "http://240.0.0.1/",
        "http://[ff02::1]/",
        "http://[::ffff:0.0.0.0]/",
        "http://[::ffff:224.0.0.1]/",
        "http://[64:ff9b::e000:1]/",
        "http://[2002:e000:1::]/",
        "http://[::e000:1]/",
        "http://[::ffff:0:e000:1]/",
        "http://[64:ff9b:1::e000:1]/",
        "http://[::2]/",
    ] {
        assert!(is_blocked(&vet_url(raw, true)), "{raw}: {:?}", vet_url(raw, true));
    }
    for raw in ["file:///etc/passwd", "ftp://localhost/", "http:///localhost", "http://a..b/"] {
        assert!(is_invalid(&vet_url(raw, true)), "{raw}");
    }
}

#[test]
fn ipv4_range_edges() {
    let table = [
        ("0.0.0.0", true),
        ("0.255.255.255", true),
        ("1.0.0.0", false),
        ("9.255.255.255", false),
        ("10.0.0.0", true),
        ("10.255.255.255", true),
        ("11.0.0.0", false),
        ("100.63.255.255", false),
        ("100.64.0.0", true),
        ("100.127.255.255", true),
        ("100.128.0.0", false),
        ("126.255.255.255", false),
        ("127.0.0.0", true),
        ("127.255.255.255", true),
        ("128.0.0.0", false),
        ("169.253.255.255", false),
        ("169.254.0.0", true),
        ("169.254.255.255", true),
        ("169.255.0.0", false),
        ("172.15.255.255", false),
        ("172.16.0.0", true),
        ("172.31.255.255", true),
        ("172.32.0.0", false),
        ("191.255.255.255", false),
        ("192.0.0.0", true),
        ("192.0.0.255", true),
        ("192.0.1.0", false),
        ("192.0.2.0", true),
        ("192.0.2.255", true),
        ("192.0.3.0", false),
        ("192.167.255.255", false),
        ("192.168.0.0", true),
        ("192.168.255.255", true),
        ("192.169.0.0", false),
        ("198.17.255.255", false),
        ("198.18.0.0", true),
        ("198.19.255.255", true),
        ("198.20.0.0", false),
        ("198.51.99.255", false),
        ("198.51.100.0", true),
        ("198.51.100.255", true),
        ("198.51.101.0", false),
        ("203.0.112.255", false),
        ("203.0.113.0", true),
        ("203.0.113.255", true),
        ("203.0.114.0", false),
        ("223.255.255.255", false),
        ("224.0.0.0", true),
        ("239.255.255.255", true),
        ("240.0.0.0", true),
        ("255.255.255.254", true),
        ("255.255.255.255", true),
        ("8.8.8.8", false),
        ("93.184.216.34", false),
    ];
    for (addr, blocked) in table {
        assert_eq!(is_blocked_ip(v4(addr)), blocked, "{addr}");
    }
}

#[test]
fn ipv6_ranges() {
    let table = [
        ("::", true),
        ("::1", true),
        ("::2", true),
        ("::808:808", true),            // IPv4-compatible: blocked even when public
        ("::ffff:808:808", false),      // IPv4-mapped public
        ("::ffff:7f00:1", true),        // IPv4-mapped loopback
        ("::ffff:a9fe:a9fe", true),     // IPv4-mapped link-local (metadata)
        ("::ffff:0:808:808", true),     // IPv4-translated
        ("64:ff9b::808:808", false),    // NAT64 to public
        ("64:ff9b::a00:1", true),       // NAT64 to private
        ("64:ff9b::a9fe:a9fe", true),   // NAT64 to link-local
        ("64:ff9b:1::808:808", true),   // local-use NAT64
        ("64:ff9b:0:1::808:808", true), // neither NAT64 prefix: reserved
        ("2002:808:808::1", false),     // 6to4 public
        ("2002:a00:1::", true),         // 6to4 private
        ("2002:7f00:1::", true),        // 6to4 loopback
        ("2002:a9fe:a9fe::", true),     // 6to4 link-local
        ("2001::1", true),              // Teredo
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", true),
        ("2001:2::1", true), // benchmarking (2001::/23)
        ("2001:1ff:ffff::", true),
        ("2001:200::1", false),
        ("2001:db7:ffff::", false),
        ("2001:db8::", true),
        ("2001:db8:ffff:ffff::", true),
        ("2001:db9::", false),
        ("3fff::1", true),
        ("3fff:fff:ffff::", true),
        ("3fff:1000::", false),
        ("fe80::1", true),
        ("febf:ffff::", true),
        ("fec0::1", true),
        ("feff::1", true),
        ("fc00::1", true),
        ("fdff:ffff::", true),
        ("fe00::1", true),
        ("ff02::1", true),
        ("ff0e::1", true),
        ("100::1", true),
        ("100:0:0:1::", true),
        ("1::1", true),
        ("1fff:ffff::", true),
        ("4000::1", true),
        ("2000::1", false),
        ("2606:4700::1111", false),
        ("2a00:1450:4001:80b::200e", false),
        ("3ffe::1", false),
    ];
    for (addr, blocked) in table {
        assert_eq!(is_blocked_ip(ip(addr)), blocked, "{addr}");
    }
}

#[test]
fn vet_resolved_checks_every_address() {
    let good = [v4("93.184.216.34"), ip("2606:2800:220:1:248:1893:25c8:1946"), v4("8.8.8.8")];
    assert_eq!(vet_resolved("example.com", &good, false), Ok(()));

    let mixed = [v4("93.184.216.34"), v4("8.8.8.8"), v4("10.1.2.3"), ip("::1")];
    let err = vet_resolved("evil.example", &mixed, false).unwrap_err();
    assert!(matches!(&err, VetError::Blocked(m) if m.contains("10.1.2.3") && m.contains("evil.example")));
    assert!(!err.to_string().contains("::1"), "names the first bad address only: {err}");

    let last_bad = [v4("8.8.8.8"), ip("::ffff:127.0.0.1")];
    let err = vet_resolved("rebind.example", &last_bad, false).unwrap_err();
    assert!(err.to_string().contains("::ffff:127.0.0.1"), "{err}");

    let err = vet_resolved("nothing.example", &[], false).unwrap_err();
    assert!(matches!(&err, VetError::Blocked(m) if m.contains("no address")), "{err}");
    assert!(vet_resolved("nothing.example", &[], true).is_err());

    let private = [v4("127.0.0.1"), ip("fd00::1"), v4("8.8.8.8")];
    assert!(vet_resolved("dev.local", &private, false).is_err());
    assert_eq!(vet_resolved("dev.local", &private, true), Ok(()));
    for never in ["0.0.0.0", "::", "224.0.0.251", "ff02::fb", "255.255.255.255"] {
        let err = vet_resolved("x", &[v4("127.0.0.1"), ip(never)], true).unwrap_err();
        assert!(err.to_string().contains(never), "{err}");
    }
}

#[test]
fn error_codes_and_messages() {
    let blocked = vet_url("http://user:s3cret@127.0.0.1/", false).unwrap_err();
    assert_eq!(blocked.code(), "blocked_url");
    assert!(blocked.to_string().starts_with("blocked_url: "), "{blocked}");
    assert!(blocked.to_string().contains("127.0.0.1") && blocked.to_string().contains("loopback"));
    assert!(!blocked.to_string().contains("s3cret"), "{blocked}");
    let local = vet_url("http://admin:s3cret@printer.local/", false).unwrap_err();
    assert!(!local.to_string().contains("s3cret") && local.to_string().contains("printer.local"));

    let invalid = vet_url("gopher://example.com/", false).unwrap_err();
    assert_eq!(invalid.code(), "invalid_url");
    assert!(invalid.to_string().starts_with("invalid_url: "), "{invalid}");
    assert!(invalid.to_string().contains("gopher"), "names the scheme: {invalid}");
    assert!(vet_url("file:///etc/passwd", false).unwrap_err().to_string().contains("`file`"));
    assert!(vet_url("http://[fe80::1]/", false).unwrap_err().to_string().contains("link-local"));
}

#[test]
fn refusals_name_the_range() {
    for (raw, reason) in [
        ("http://0.0.0.0/", "unspecified"),
        ("http://10.0.0.1/", "private"),
        ("http://100.64.0.1/", "CGNAT"),
        ("http://127.0.0.1/", "loopback"),
        ("http://169.254.169.254/", "link-local"),
        ("http://192.0.0.8/", "IETF"),
        ("http://192.0.2.1/", "documentation"),
        ("http://198.18.0.1/", "benchmarking"),
        ("http://224.0.0.1/", "multicast"),
        ("http://240.0.0.1/", "reserved"),
        ("http://255.255.255.255/", "broadcast"),
        ("http://[::]/", "unspecified"),
        ("http://[::1]/", "loopback"),
        ("http://[::808:808]/", "IPv4-compatible"),
        ("http://[::ffff:0:808:808]/", "IPv4-translated"),
        ("http://[::ffff:a00:1]/", "private"),
        ("http://[64:ff9b::7f00:1]/", "loopback"),
        ("http://[64:ff9b:1::808:808]/", "local-use NAT64"),
        ("http://[2002:a9fe:a9fe::]/", "link-local"),
        ("http://[2001::1]/", "Teredo"),
        ("http://[2001:2::1]/", "IETF"),
        ("http://[2001:db8::1]/", "documentation"),
        ("http://[3fff::1]/", "documentation"),
        ("http://[fe80::1]/", "link-local"),
        ("http://[fec0::1]/", "site-local"),
        ("http://[fd00::1]/", "unique-local"),
        ("http://[100::1]/", "discard"),
        ("http://[4000::1]/", "not global unicast"),
        ("http://[ff02::1]/", "multicast"),
        ("http://foo.localhost/", "local name"),
    ] {
        let err = vet_url(raw, false).unwrap_err().to_string();
        assert!(err.contains(reason), "{raw}: {err}");
    }
}

#[test]
fn host_patterns_match() {
    let p = |s: &str| HostPattern::parse(s).unwrap_or_else(|e| panic!("{e}"));

    let exact = p("docs.rs");
    assert_eq!(exact.as_str(), "docs.rs");
    for host in ["docs.rs", "DOCS.RS", "docs.rs.", "Docs.Rs."] {
        assert!(exact.matches(host), "{host}");
    }
    for host in ["www.docs.rs", "docs.rs.evil.com", "xdocs.rs", "docs.r", "", "."] {
        assert!(!exact.matches(host), "{host}");
    }

    let wild = p("*.Example.COM.");
    assert_eq!(wild.as_str(), "*.example.com");
    for host in ["sub.example.com", "a.b.example.com", "SUB.EXAMPLE.COM", "sub.example.com."] {
        assert!(wild.matches(host), "{host}");
    }
    for host in
        ["example.com", "example.com.", "badexample.com", ".example.com", "..example.com", "sub.example.co"]
    {
        assert!(!wild.matches(host), "{host}");
    }
    // The cut between head and suffix falls inside a multi-byte character: no panic, no match.
    assert!(!wild.matches("a\u{20ac}\u{20ac}\u{20ac}\u{20ac}\u{20ac}"));
    assert!(!p("*.com").matches("\u{e9}"));

    let any = p("*");
    assert_eq!(any.as_str(), "*");
    assert!(any.matches("docs.rs") && any.matches("127.0.0.1") && any.matches("[::1]"));

    assert_eq!(p("b\u{fc}cher.de").as_str(), "xn--bcher-kva.de");
    assert!(p("b\u{fc}cher.de").matches("xn--bcher-kva.de"));
    assert_eq!(p("93.184.216.34").as_str(), "93.184.216.34");
    assert_eq!(p("[2001:DB8:0::1]").as_str(), "[2001:db8::1]");
    assert!(p("[2001:db8::1]").matches("[2001:db8::1]"));

    let list = [p("docs.rs"), p("*.github.io")];
    assert!(host_allowed(&list, "docs.rs"));
    assert!(host_allowed(&list, "rust-lang.github.io"));
    assert!(!host_allowed(&list, "github.io"));
    assert!(!host_allowed(&list, "crates.io"));
    assert!(!host_allowed(&[], "docs.rs"));
}

#[test]
fn host_pattern_parse_errors() {
    for bad in [
        "",
        " ",
        "docs.rs ",
        " docs.rs",
        "do cs.rs",
        "**",
        "*.",
        "*.*.com",
        "foo.*.com",
        "*foo.com",
        "foo*",
        "*.example.*",
        "https://docs.rs",
        "docs.rs/path",
        "http:",
        "docs.rs:443",
        "user@docs.rs",
        "docs.rs?q",
        "a..b.com",
        "docs.rs..",
        ".docs.rs",
        "ex!ample.com",
        "*.1.2.3",
        "*.[::1]",
        "[::1]:80",
        "[::1",
    ] {
        let err = HostPattern::parse(bad).expect_err(bad);
        assert!(err.contains("invalid host pattern"), "{err}");
    }
    for (bad, why) in [
        ("https://docs.rs", "bare host"),
        ("docs.rs:443", "bare host"),
        ("user@docs.rs", "bare host"),
        ("docs.rs?q", "bare host"),
        ("*.*.com", "only allowed alone"),
        ("foo.*.com", "only allowed alone"),
        ("*.1.2.3", "followed by a domain"),
    ] {
        let err = HostPattern::parse(bad).expect_err(bad);
        assert!(err.contains(why), "{bad}: {err}");
    }
}

#[test]
fn methods() {
    for (input, want) in [
        ("GET", "GET"),
        ("get", "GET"),
        ("HEAD", "HEAD"),
        ("head", "HEAD"),
        ("POST", "POST"),
        ("Post", "POST"),
        ("PUT", "PUT"),
        ("put", "PUT"),
        ("PATCH", "PATCH"),
        ("patch", "PATCH"),
        ("DELETE", "DELETE"),
        ("delete", "DELETE"),
        ("OPTIONS", "OPTIONS"),
        ("options", "OPTIONS"),
    ] {
        assert_eq!(vet_method(input), Ok(want), "{input}");
    }
    for bad in ["CONNECT", "connect", "TRACE", "TRACK", "", "G ET", "GET ", "PROPFIND", "GETX", "\u{130}"] {
        let err = vet_method(bad).expect_err(bad);
        assert!(err.contains("not allowed"), "{err}");
    }
}
