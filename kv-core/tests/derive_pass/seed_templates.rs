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

pub fn check() {
    let key = TenantDatabaseKey {
        id: 1,
        service: Code::new("pg").unwrap(),
    };
    assert!(TenantDir { id: 1 }.contains(&key.encode()));
    assert_eq!(Schema::parse("a/1/c"), Ok(Schema::Under(UnderKey { x: 1 })));
    // Each seed key reads back from its layout and writes the same bytes.
    let status = InstanceStatusKey::parse("/registry/g/s/10.0.0.1:80/status").unwrap();
    assert_eq!((status.ip, status.port), (Ipv4Addr::new(10, 0, 0, 1), 80));
    assert_eq!(status.encode(), "/registry/g/s/10.0.0.1:80/status");
    let config = InstanceConfigKey::parse("/registry/g/s/[::1]:80/config").unwrap();
    assert_eq!(config.encode(), "/registry/g/s/[::1]:80/config");
    let map = MapKey::parse("nxc:map:{r}:p").unwrap();
    assert_eq!(map.encode(), "nxc:map:{r}:p");
    let default = DefaultKey::parse("nxc:r:p:default").unwrap();
    assert_eq!(default.encode(), "nxc:r:p:default");
    assert_eq!(BracesKey { n: 2 }.encode(), "cfg/{literal}/v2.json");
    assert_eq!(
        BracesKey::parse("cfg/{literal}/v2.json"),
        Ok(BracesKey { n: 2 })
    );
}
