use keyplane_core::keyspace::Key;

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "nxc:map/{realm}", value = keyplane_core::keyspace::Text)]
struct MapKey {
    realm: u64,
}

fn main() {}
