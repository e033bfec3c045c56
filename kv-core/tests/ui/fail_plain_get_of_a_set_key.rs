use keyplane_core::keyspace::{Key, Text, TypedStore};

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "nxc:map:{realm}", set = Text)]
struct ProfileMapKey {
    realm: u64,
}

async fn read(typed: &TypedStore) {
    // A set key has members, not a value: the facade offers `set_at`, not `get`.
    let _ = typed.get(&ProfileMapKey { realm: 1 }).await;
}

fn main() {
    let _ = read;
}
