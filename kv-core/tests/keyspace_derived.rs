//! A schema declared with the derives passes the invariant harness: keys with escaped text,
//! mixed `{ip}:{port}` segments, hash tags, ordered segments, a prefix and a declared
//! directory. The derives also generate the proptest strategies the harness draws from.
#![cfg(feature = "proptest")]

use keyplane_core::keyspace::{
    Empty, Key, Keyspace, Padded, Prefix, Text, assert_key_invariants, assert_keyspace_invariants,
    assert_prefix_invariants, check_keyspace, verify_key_order,
};
use std::net::Ipv4Addr;

keyplane_core::text_segment!(
    /// A code such as `mysql-main`.
    pub Code, charset = "[a-z0-9_-]", max_len = 32, policy = Reject
);
keyplane_core::text_segment!(
    /// Free text, percent-escaped like Go's `url.PathEscape`.
    pub Label, max_len = 64, policy = Escape
);

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id}", value = Text, directory_of(TenantServiceKey))]
struct TenantKey {
    id: u64,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id}/services/{name}", value = Text)]
struct TenantServiceKey {
    id: u64,
    name: Label,
}

#[derive(Prefix, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id}/services/", key = TenantServiceKey)]
struct TenantServicesPrefix {
    id: u64,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "/registry/{group}/{ip}:{port}/status", value = Text)]
struct EndpointKey {
    group: Code,
    ip: Ipv4Addr,
    port: u16,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "nxc:inst:{realm}:{provider}", value = Empty, hash_tag = "realm")]
struct InstanceKey {
    realm: Code,
    provider: Label,
}

#[derive(Key, Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
#[kv(template = "cronix/runs/{day}/{seq}", value = Text)]
struct RunKey {
    day: Padded<8, u32>,
    seq: Padded<6, u32>,
}

#[derive(Keyspace, Debug, Clone, PartialEq)]
#[kv(naming = "[a-z0-9_]", allow_dir(Tenant, Service))]
enum DerivedSchema {
    Tenant(TenantKey),
    Service(TenantServiceKey),
    Endpoint(EndpointKey),
    Instance(InstanceKey),
    Run(RunKey),
}

#[test]
fn derived_keys_encode_as_declared() {
    let key = EndpointKey {
        group: Code::new("prod").unwrap(),
        ip: Ipv4Addr::new(10, 0, 0, 1),
        port: 8080,
    };
    assert_eq!(key.encode(), "/registry/prod/10.0.0.1:8080/status");
    let key = InstanceKey {
        realm: Code::new("eu").unwrap(),
        provider: Label::new("azure:east").unwrap(),
    };
    assert_eq!(key.encode(), "nxc:inst:{eu}:azure%3Aeast");
    assert_eq!(
        TenantServicesPrefix { id: 1 }.encode(),
        "jxt/tenants/1/services/"
    );
    assert!(check_keyspace::<DerivedSchema>().is_empty());
    assert!(matches!(
        DerivedSchema::parse("jxt/tenants/5"),
        Ok(DerivedSchema::Tenant(_))
    ));
}

#[test]
fn derived_keys_pass_the_invariants() {
    assert_key_invariants::<TenantKey>();
    assert_key_invariants::<TenantServiceKey>();
    assert_key_invariants::<EndpointKey>();
    assert_key_invariants::<InstanceKey>();
    assert_key_invariants::<RunKey>();
    verify_key_order::<RunKey>().unwrap();
}

#[test]
fn derived_prefix_passes_the_invariants() {
    assert_prefix_invariants::<TenantServicesPrefix>();
}

#[test]
fn derived_keyspace_passes_the_invariants() {
    assert_keyspace_invariants::<DerivedSchema>();
}
