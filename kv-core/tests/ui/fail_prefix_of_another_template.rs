use keyplane_core::keyspace::{Key, Prefix, Text};

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id}/meta", value = Text)]
struct TenantMetaKey {
    id: u64,
}

#[derive(Prefix, Debug, Clone, PartialEq)]
#[kv(template = "jxt/hosts/{id}/", key = TenantMetaKey)]
struct HostDir {
    id: u64,
}

fn main() {}
