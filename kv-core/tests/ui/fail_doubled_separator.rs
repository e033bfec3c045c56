use keyplane_core::keyspace::Key;

// The legacy layout of the seed documents had `jxt//tenants/...`.
#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt//tenants/{id}/meta", value = keyplane_core::keyspace::Text)]
struct LegacyMetaKey {
    id: u64,
}

fn main() {}
