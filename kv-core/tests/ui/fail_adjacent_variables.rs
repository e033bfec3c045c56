use keyplane_core::keyspace::Key;
use std::net::Ipv4Addr;

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "/registry/{group}/{ip}{port}/status", value = keyplane_core::keyspace::Text)]
struct InstanceKey {
    group: u64,
    ip: Ipv4Addr,
    port: u16,
}

fn main() {}
