use keyplane_core::keyspace::Key;

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id/meta", value = keyplane_core::keyspace::Text)]
struct TenantMetaKey {
    id: u64,
}

fn main() {}
