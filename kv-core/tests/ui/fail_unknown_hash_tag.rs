use keyplane_core::keyspace::Key;

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "nxc:pool:{realm}:{provider}", value = keyplane_core::keyspace::Text, hash_tag = "tenant")]
struct PoolKey {
    realm: u64,
    provider: u64,
}

fn main() {}
