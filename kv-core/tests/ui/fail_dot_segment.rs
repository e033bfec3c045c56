use keyplane_core::keyspace::Key;

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/../{id}", value = keyplane_core::keyspace::Text)]
struct EscapingKey {
    id: u64,
}

fn main() {}
