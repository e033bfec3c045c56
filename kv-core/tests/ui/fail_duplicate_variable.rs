use keyplane_core::keyspace::Key;

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id}/mirror/{id}", value = keyplane_core::keyspace::Text)]
struct MirrorKey {
    id: u64,
}

fn main() {}
