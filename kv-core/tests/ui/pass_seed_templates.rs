use keyplane_core::keyspace::{HostPort, Json, Key, Keyspace, Prefix, Text};
use std::net::Ipv4Addr;

keyplane_core::text_segment!(pub Code, charset = "[a-z0-9_-]", max_len = 63, policy = Reject);

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id}/database/{service}", value = Json<serde_json::Value>)]
struct TenantDatabaseKey {
    id: u64,
    service: Code,
}

#[derive(Prefix, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id}/", key = TenantDatabaseKey)]
struct TenantDir {
    id: u64,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "/registry/{group}/{service}/{ip}:{port}/status", value = Text)]
struct InstanceStatusKey {
    group: Code,
    service: Code,
    ip: Ipv4Addr,
    port: u16,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "/registry/{group}/{service}/{addr}/config", value = Text)]
struct InstanceConfigKey {
    group: Code,
    service: Code,
    addr: HostPort,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "nxc:map:{realm}:{provider}", value = Text, hash_tag = "realm")]
struct MapKey {
    realm: Code,
    provider: Code,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "nxc:{realm}:{provider}:default", value = Text)]
struct DefaultKey {
    realm: Code,
    provider: Code,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "cfg/{{literal}}/v{n}.json", value = Text)]
struct BracesKey {
    n: u32,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "a/{x}", value = Text, directory_of(UnderKey))]
struct ParentKey {
    x: u64,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "a/{x}/c", value = Text)]
struct UnderKey {
    x: u64,
}

#[derive(Keyspace, Debug, Clone, PartialEq)]
#[kv(naming = "[a-z0-9_-]", allow_dir(Parent, Under))]
enum Schema {
    Parent(ParentKey),
    Under(UnderKey),
}

fn main() {
    let key = TenantDatabaseKey {
        id: 1,
        service: Code::new("pg").unwrap(),
    };
    assert!(TenantDir { id: 1 }.contains(&key.encode()));
    assert_eq!(Schema::parse("a/1/c"), Ok(Schema::Under(UnderKey { x: 1 })));
}
