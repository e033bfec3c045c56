use kv_core::keyspace::Key;

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "/", value = kv_core::keyspace::Text)]
struct RootKey {}

fn main() {}
