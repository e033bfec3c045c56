use kv_core::keyspace::Key;

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id}/", value = kv_core::keyspace::Text)]
struct TenantKey {
    id: u64,
}

fn main() {}
