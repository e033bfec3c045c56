//! Built-in segments: strictness examples, and (feature `proptest`) the segment invariants
//! for every built-in.

use keyplane_core::keyspace::{Host, HostPort, Segment, Separator, TextSegment};
use std::net::Ipv4Addr;

keyplane_core::text_segment!(
    /// A tenant code.
    pub TenantCode, charset = "[a-zA-Z0-9_]", max_len = 64, policy = Reject
);
keyplane_core::text_segment!(
    /// Permissive verbatim text: the charset allows what keys cannot hold, the policy still
    /// refuses it.
    pub Verbatim, charset = "[^\n]", max_len = 16, policy = Reject
);
keyplane_core::text_segment!(
    /// Escaped text.
    pub Label, max_len = 32, policy = Escape
);

const S: Separator = Separator::Slash;
const C: Separator = Separator::Colon;

#[test]
fn host_port_forms() {
    for ok in [
        "10.0.0.1:8080",
        "[::1]:80",
        "[2001:db8::1]:65535",
        "api.example.com:443",
        "a:1",
    ] {
        let hp = HostPort::decode(ok, S).unwrap();
        assert_eq!(hp.to_segment_string(S), ok);
        let colon = hp.to_segment_string(C);
        assert!(!colon.contains(':'), "{colon}");
        assert_eq!(HostPort::decode(&colon, C), Ok(hp));
    }
    for bad in [
        "10.0.0.1",             // no port
        "10.0.0.1:0",           // port 0
        "10.0.0.1:65536",       // port too large
        "10.0.0.1:080",         // leading zero
        "010.0.0.1:80",         // non-canonical IPv4
        "::1:80",               // unbracketed IPv6
        "[0:0:0:0:0:0:0:1]:80", // not RFC 5952
        "[::1%eth0]:80",        // zone
        "API.example.com:443",  // uppercase
        "-a.com:1",             // label starts with `-`
        "a..b:1",               // empty label
        "1.2.3:80",             // numeric last label
        "a.com:+1",
    ] {
        assert!(HostPort::decode(bad, S).is_err(), "{bad}");
    }
    assert!(
        HostPort::decode("10.0.0.1:80", C).is_err(),
        "raw `:` in a `:` key"
    );
    assert!(
        HostPort::decode("10.0.0.1%3a80", C).is_err(),
        "lowercase escape"
    );
    assert!(HostPort::new(Host::Ipv4(Ipv4Addr::LOCALHOST), 0).is_err());
    assert_eq!(Ipv4Addr::decode("127.0.0.1", S), Ok(Ipv4Addr::LOCALHOST));
    assert!(Ipv4Addr::decode("127.000.0.1", S).is_err());
}

#[test]
fn reject_text_never_holds_what_keys_cannot() {
    assert!(TenantCode::new("acme_01").is_ok());
    for bad in ["", ".", "..", "a-b", "a/b", "默认", &"x".repeat(65)] {
        assert!(TenantCode::new(bad).is_err(), "{bad:?}");
    }
    assert!(Verbatim::new("a b.c").is_ok());
    for bad in ["a/b", "a:b", "{x}", "50%", "a\0b", "a\tb", ".", ".."] {
        assert!(Verbatim::new(bad).is_err(), "{bad:?}");
    }
    assert!(Verbatim::decode("a:b", S).is_err());
    assert!(TenantCode::rule().describe().contains("[a-zA-Z0-9_]"));
    assert!(
        Label::decode("a%3Ab", S).is_err(),
        "`:` is not escaped in `/` keys"
    );
    assert_eq!(Label::decode("a%3Ab", C).unwrap().as_str(), "a:b");
}

#[cfg(feature = "proptest")]
mod harness {
    use super::*;
    use keyplane_core::keyspace::{Padded, assert_segment_invariants, verify_segment_order};

    #[test]
    fn every_built_in_passes_the_segment_invariants() {
        assert_segment_invariants::<u8>();
        assert_segment_invariants::<u64>();
        assert_segment_invariants::<i32>();
        assert_segment_invariants::<i64>();
        assert_segment_invariants::<u128>();
        assert_segment_invariants::<Padded<3, u8>>();
        assert_segment_invariants::<Padded<20, u64>>();
        assert_segment_invariants::<uuid::Uuid>();
        assert_segment_invariants::<Ipv4Addr>();
        assert_segment_invariants::<HostPort>();
        assert_segment_invariants::<TenantCode>();
        assert_segment_invariants::<Verbatim>();
        assert_segment_invariants::<Label>();
    }

    #[test]
    fn ordered_built_ins_sort_like_their_values() {
        verify_segment_order::<Padded<3, u8>>().unwrap();
        verify_segment_order::<Padded<20, u64>>().unwrap();
        verify_segment_order::<uuid::Uuid>().unwrap();
    }
}
