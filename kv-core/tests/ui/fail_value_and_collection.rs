use keyplane_core::keyspace::{Key, Text};

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "nxc:map:{realm}", value = Text, set = Text)]
struct ProfileMapKey {
    realm: u64,
}

fn main() {}
