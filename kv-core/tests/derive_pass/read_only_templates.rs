use keyplane_core::keyspace::{Json, Key, Prefix};

// The old layout of the tenant document: a doubled separator after the namespace.
#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt//tenants/{id}/meta", value = Json<serde_json::Value>, read_only)]
struct LegacyMetaKey {
    id: u64,
}

#[derive(Prefix, Debug, Clone, PartialEq)]
#[kv(template = "jxt//tenants/{id}/", key = LegacyMetaKey, read_only)]
struct LegacyTenantDir {
    id: u64,
}

pub fn check() {
    assert_eq!(LegacyMetaKey { id: 1 }.encode(), "jxt//tenants/1/meta");
    assert_eq!(LegacyTenantDir { id: 1 }.encode(), "jxt//tenants/1/");
    assert!(<LegacyMetaKey as Key>::template().is_read_only());
}
