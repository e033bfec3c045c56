use keyplane_core::keyspace::Key;

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id}/database/{service}", value = keyplane_core::keyspace::Text)]
struct TenantDatabaseKey {
    id: u64,
}

fn main() {}
