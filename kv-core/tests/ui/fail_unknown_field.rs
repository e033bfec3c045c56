use kv_core::keyspace::Key;

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id}/database/{service}", value = kv_core::keyspace::Text)]
struct TenantDatabaseKey {
    id: u64,
}

fn main() {}
