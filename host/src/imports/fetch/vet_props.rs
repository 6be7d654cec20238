//! Properties of the SSRF check over generated addresses, each written in every
//! textual form a URL may spell it: dotted decimal, one decimal or hex number
//! (`2130706433`, `0x7f000001`), short forms (`127.1`, `0x7f.1`, `127.0.1`), octal
//! and hex parts (`0177.0.0.1`, `0x7f.0.0.0x1`), IPv4-mapped (`[::ffff:127.0.0.1]`,
//! `[::ffff:7f00:1]`), IPv4-compatible (`[::127.0.0.1]`), IPv6 full or compressed,
//! upper-case, scoped (`[fe80::1%25eth0]`) and behind user info. Each form is
//! classified as a reference built on `std::net`'s own predicates says, and no
//! private or loopback form is ever vetted as public.
//!
//! 4,096 cases per property by default; `PROPTEST_CASES=100000 cargo test --release
//! -p toolhost --lib vet::props` runs a longer one.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;

use crate::test_support::proptest_config as config;

use super::{VetError, vet_resolved, vet_url};

/// The case count: `PROPTEST_CASES` when set, else `default`.
/// Whether an IPv4 address is one a fetch may reach: `std::net`'s stable
/// predicates, and the special-purpose ranges (RFC 6890) `std` only has unstable
/// predicates for (`is_shared`, `is_benchmarking`, `is_reserved`).
fn v4_public(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let std_says_special = ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation();
    let iana_special = a == 0                        // "this network"
        || (a == 100 && (64..128).contains(&b))      // shared / CGNAT
        || (a == 192 && b == 0 && c == 0)            // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19))        // benchmarking
        || a >= 240; // reserved
    !(std_says_special || iana_special)
}

/// Whether an IPv6 address is never public, by `std::net`'s stable predicates: an
/// IPv4-mapped address (`to_ipv4_mapped`) and a NAT64 one (64:ff9b::/96, RFC 6052)
/// by the IPv4 they reach, everything else outside global unicast 2000::/3 blocked.
/// A necessary condition for refusal (the host refuses more: Teredo,
/// documentation, 6to4 of a private IPv4, …).
fn v6_surely_blocked(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return !v4_public(v4);
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return !v4_public(Ipv4Addr::from((u32::from(s[6]) << 16) | u32::from(s[7])));
    }
    let global_unicast = (s[0] & 0xe000) == 0x2000;
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || ip.is_unique_local()
        || ip.is_unicast_link_local()
        || !global_unicast
}

/// The textual forms of `ip` a URL host may take (WHATWG's IPv4 parser).
fn v4_forms(ip: Ipv4Addr) -> Vec<String> {
    let n = u32::from(ip);
    let [a, b, c, d] = ip.octets();
    let low24 = n & 0xff_ffff;
    let low16 = n & 0xffff;
    vec![
        ip.to_string(),
        n.to_string(),
        format!("{n:#x}"),
        format!("{n:#X}"),
        format!("0{n:o}"),
        format!("{a}.{low24}"),
        format!("{a:#x}.{low24:#x}"),
        format!("{a}.{b}.{low16}"),
        format!("0{a:o}.0{b:o}.0{c:o}.0{d:o}"),
        format!("{a:#x}.{b}.{c}.{d:#x}"),
        format!("{ip}."),
        format!("[::ffff:{ip}]"),
        format!("[::FFFF:{:x}:{:x}]", n >> 16, n & 0xffff),
        format!("[0:0:0:0:0:ffff:{ip}]"),
    ]
}

/// The forms of an IPv6 address: compressed, full, upper-case.
fn v6_forms(ip: Ipv6Addr) -> Vec<String> {
    let s = ip.segments();
    let full = s.iter().map(|x| format!("{x:x}")).collect::<Vec<_>>().join(":");
    let padded = s.iter().map(|x| format!("{x:04x}")).collect::<Vec<_>>().join(":");
    vec![format!("[{ip}]"), format!("[{full}]"), format!("[{}]", padded.to_uppercase())]
}

fn vetted(host: &str) -> Result<(), VetError> {
    vet_url(&format!("http://{host}/x"), false).map(drop)
}

/// IPv4 addresses with the special ranges drawn often.
fn any_v4() -> impl Strategy<Value = Ipv4Addr> {
    let special = prop::sample::select(vec![0u8, 10, 100, 127, 169, 172, 192, 198, 203, 224, 240, 255]);
    prop_oneof![
        any::<u32>().prop_map(Ipv4Addr::from),
        (special, any::<[u8; 3]>()).prop_map(|(a, [b, c, d])| Ipv4Addr::new(a, b, c, d)),
    ]
}

/// IPv4 addresses in the ranges a fetch may not reach, drawn directly (a filter
/// over `any_v4` rejects too many for a long run's reject budget).
fn blocked_v4() -> impl Strategy<Value = Ipv4Addr> {
    let ranges = prop::sample::select(vec![
        ([0u8, 0, 0, 0], 8u32),
        ([10, 0, 0, 0], 8),
        ([100, 64, 0, 0], 10),
        ([127, 0, 0, 0], 8),
        ([169, 254, 0, 0], 16),
        ([172, 16, 0, 0], 12),
        ([192, 0, 0, 0], 24),
        ([192, 0, 2, 0], 24),
        ([192, 168, 0, 0], 16),
        ([198, 18, 0, 0], 15),
        ([198, 51, 100, 0], 24),
        ([203, 0, 113, 0], 24),
        ([224, 0, 0, 0], 4),
        ([240, 0, 0, 0], 4),
    ]);
    (ranges, any::<u32>()).prop_map(|((base, bits), host)| {
        let mask = u32::MAX >> bits;
        Ipv4Addr::from((u32::from(Ipv4Addr::from(base)) & !mask) | (host & mask))
    })
}

/// IPv6 addresses with the special prefixes drawn often.
fn any_v6() -> impl Strategy<Value = Ipv6Addr> {
    let prefix = prop::sample::select(vec![
        [0u16, 0],
        [0xfe80, 0],
        [0xfc00, 1],
        [0xfd12, 2],
        [0xff02, 0],
        [0x2001, 0xdb8],
        [0x2001, 0],
        [0x2002, 0x7f00],
        [0x64, 0xff9b],
        [0x2606, 0x4700],
    ]);
    prop_oneof![
        any::<u128>().prop_map(Ipv6Addr::from),
        (prefix, any::<[u16; 6]>())
            .prop_map(|([a, b], r)| Ipv6Addr::new(a, b, r[0], r[1], r[2], r[3], r[4], r[5])),
        (any_v4(), prop::sample::select(vec![0u16, 0xffff])).prop_map(|(v4, mark)| {
            let [hi, lo] = [(u32::from(v4) >> 16) as u16, u32::from(v4) as u16];
            Ipv6Addr::new(0, 0, 0, 0, 0, mark, hi, lo)
        }),
    ]
}

proptest! {
    #![proptest_config(config(4096))]

    /// Every spelling of an IPv4 address is vetted as the reference says, and all
    /// of them alike (user info in front changes nothing).
    #[test]
    fn every_ipv4_spelling_is_judged_like_the_reference(ip in any_v4()) {
        let public = v4_public(ip);
        for form in v4_forms(ip) {
            for host in [form.clone(), format!("example.com@{form}")] {
                match vetted(&host) {
                    Ok(()) => prop_assert!(public, "{host} ({ip}) was vetted as public"),
                    Err(VetError::Blocked(_)) => prop_assert!(!public, "{host} ({ip}) was blocked"),
                    Err(e) => prop_assert!(false, "{host}: {e}"),
                }
            }
        }
        prop_assert_eq!(vet_resolved("h", &[IpAddr::V4(ip)], false).is_ok(), public);
    }

    /// No IPv6 address the reference knows for private, loopback, link-local or
    /// not global unicast (or that maps to such an IPv4) is vetted public, in any
    /// spelling; IPv4-compatible `::a.b.c.d` is never public either.
    #[test]
    fn no_private_ipv6_spelling_is_public(ip in any_v6()) {
        let verdicts: Vec<bool> = v6_forms(ip).iter().map(|form| vetted(form).is_ok()).collect();
        prop_assert!(verdicts.iter().all(|&v| v == verdicts[0]), "{ip}: spellings disagree");
        let resolved = vet_resolved("h", &[IpAddr::V6(ip)], false).is_ok();
        prop_assert_eq!(resolved, verdicts[0], "{}: URL and resolved address disagree", ip);
        if v6_surely_blocked(ip) {
            prop_assert!(!resolved, "{} was vetted as public", ip);
        }
        let s = ip.segments();
        if s[..6] == [0; 6] {
            prop_assert!(!resolved, "IPv4-compatible {} was vetted as public", ip);
        }
    }

    /// A scoped address (a zone id) is never fetched, whatever the address.
    #[test]
    fn scoped_addresses_are_refused(ip in any_v6(), zone in "[a-z]{1,5}[0-9]{0,2}") {
        for host in [format!("[{ip}%{zone}]"), format!("[{ip}%25{zone}]")] {
            prop_assert!(vetted(&host).is_err(), "{host} was vetted");
        }
    }

    /// A mixed list of resolved addresses is refused when any one is.
    #[test]
    fn one_blocked_address_among_public_ones_refuses_the_host(
        good in prop::collection::vec(any_v4().prop_filter("public", |ip| v4_public(*ip)), 0..4),
        bad in blocked_v4(),
        at in any::<prop::sample::Index>(),
    ) {
        let mut addrs: Vec<IpAddr> = good.into_iter().map(IpAddr::V4).collect();
        let i = at.index(addrs.len() + 1);
        prop_assert!(!v4_public(bad), "{} is not a blocked address", bad);
        addrs.insert(i, IpAddr::V4(bad));
        prop_assert!(vet_resolved("h", &addrs, false).is_err());
    }
}
