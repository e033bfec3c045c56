use keyplane_core::keyspace::Key;

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "/registry/{group}/{major}.{minor}/status", value = keyplane_core::keyspace::Text)]
struct VersionKey {
    group: u64,
    major: u32,
    minor: u32,
}

fn main() {}
