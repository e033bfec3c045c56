use keyplane_core::keyspace::{Key, Keyspace, Text};

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "a/{x}", value = Text)]
struct AnyKey {
    x: u64,
}

#[derive(Keyspace, Debug, Clone, PartialEq)]
#[kv(allow_dir(Any, Child))]
enum Schema {
    Any(AnyKey),
}

#[derive(Keyspace, Debug, Clone, PartialEq)]
#[kv(naming = "[z-a]")]
enum Misnamed {
    Any(AnyKey),
}

fn main() {}
