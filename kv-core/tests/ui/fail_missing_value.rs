use keyplane_core::keyspace::Key;

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id}/meta")]
struct TenantMetaKey {
    id: u64,
}

fn main() {}
