use keyplane_core::keyspace::Key;

// An old layout describes keys another program wrote: it has no hash tag to declare.
#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "nexus:config:{realm}", value = keyplane_core::keyspace::Text, read_only, hash_tag = "realm")]
struct LegacyKey {
    realm: u64,
}

fn main() {}
