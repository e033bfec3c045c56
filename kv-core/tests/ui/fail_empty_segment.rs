use keyplane_core::keyspace::Key;

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "/", value = keyplane_core::keyspace::Text)]
struct RootKey {}

fn main() {}
