//! Behaviour of `#[derive(Key)]` and `#[derive(Prefix)]`: the seed layouts build and parse
//! back, parsing is strict, prefixes isolate their directory.

use keyplane_core::keyspace::{HostPort, Json, Key, KeyErrorReason, Prefix, Separator, Text};
use std::net::Ipv4Addr;

keyplane_core::text_segment!(
    /// A service code such as `mysql-main`.
    pub Code, charset = "[a-z0-9_-]", max_len = 63, policy = Reject
);
keyplane_core::text_segment!(
    /// A free-form name, percent-escaped.
    pub Label, max_len = 128, policy = Escape
);

#[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
struct DatabaseConfig {
    host: String,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id}/database/{service}", value = Json<DatabaseConfig>)]
struct TenantDatabaseKey {
    id: u64,
    service: Code,
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
#[kv(template = "nxc:map:{realm}:{provider}", value = Text)]
struct MapKey {
    realm: Code,
    provider: Code,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "nxc:pool:{realm}:{provider}", value = Text, hash_tag = "realm")]
struct PoolKey {
    realm: Code,
    provider: Code,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "cfg/{{raw}}/v{version}.json", value = Text)]
struct VersionedKey {
    version: u32,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "/nodes/{label}@{addr}", value = Text)]
struct NodeKey {
    label: Label,
    addr: HostPort,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "{name}", value = Text)]
struct BareKey {
    name: Code,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "/pair/{left}@{right}", value = Text)]
struct PairKey {
    left: Label,
    right: Label,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id}/meta", value = Json<DatabaseConfig>)]
struct TenantMetaKey {
    id: u64,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id}", value = Text, directory_of(TenantMetaKey))]
struct TenantMarkerKey {
    id: u64,
}

#[derive(Prefix, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id}/", key = TenantMetaKey)]
struct TenantDir {
    id: u64,
}

#[derive(Prefix, Debug, Clone, PartialEq)]
#[kv(template = "nxc:pool:{realm}:", key = PoolKey, hash_tag = "realm")]
struct PoolRealm {
    realm: Code,
}

fn code(s: &str) -> Code {
    Code::new(s).unwrap()
}

#[test]
fn tenant_database_key_round_trips() {
    let key = TenantDatabaseKey {
        id: 42,
        service: code("mysql-main"),
    };
    assert_eq!(key.encode(), "jxt/tenants/42/database/mysql-main");
    assert_eq!(TenantDatabaseKey::parse(&key.encode()), Ok(key.clone()));
    assert_eq!(
        key.fields(),
        vec![
            ("id", "42".to_string()),
            ("service", "mysql-main".to_string())
        ]
    );
    let mut buf = String::from("stale");
    buf.clear();
    key.write(&mut buf);
    key.write(&mut buf);
    assert_eq!(
        buf,
        "jxt/tenants/42/database/mysql-mainjxt/tenants/42/database/mysql-main"
    );
}

#[test]
fn parse_is_strict() {
    let cases = [
        "jxt/tenants/042/database/mysql", // not canonical
        "jxt/tenants/42/database/",       // empty variable
        "jxt/tenants/42/databases/mysql", // literal differs
        "jxt/tenants/42/database",        // too short
        "jxt/tenants/42/database/a/b",    // too deep
        "/jxt/tenants/42/database/mysql", // leading separator
        "jxt/tenants/42/database/My",     // outside the charset
        "jxt/tenants/-1/database/mysql",  // sign on an unsigned
        "",
    ];
    for raw in cases {
        assert!(TenantDatabaseKey::parse(raw).is_err(), "{raw:?} parsed");
    }
    let err = TenantDatabaseKey::parse("jxt/tenants/42/databases/mysql").unwrap_err();
    assert_eq!(err.position(), 3);
    assert!(
        matches!(err.reason(), KeyErrorReason::Literal { expected, found }
        if expected == "database" && found == "databases")
    );
    let err = TenantDatabaseKey::parse("jxt/tenants/x/database/mysql").unwrap_err();
    assert!(matches!(err.reason(), KeyErrorReason::Field { name, .. } if name == "id"));
    assert_eq!(err.position(), 2);
    let err = TenantDatabaseKey::parse("jxt/tenants/1/database/a/b").unwrap_err();
    assert_eq!(
        err.reason(),
        &KeyErrorReason::Depth {
            expected: 5,
            found: 6
        }
    );
}

#[test]
fn registry_key_has_two_variables_in_one_segment() {
    let key = InstanceStatusKey {
        group: code("default"),
        service: code("billing"),
        ip: Ipv4Addr::new(10, 0, 0, 7),
        port: 8080,
    };
    let raw = key.encode();
    assert_eq!(raw, "/registry/default/billing/10.0.0.7:8080/status");
    assert_eq!(InstanceStatusKey::parse(&raw), Ok(key));
    for bad in [
        "registry/default/billing/10.0.0.7:8080/status",
        "/registry/default/billing/10.0.0.7/status",
        "/registry/default/billing/10.0.0.7:8080:1/status",
        "/registry/default/billing/10.0.0.7:08080/status",
        "/registry/default/billing/:8080/status",
    ] {
        assert!(InstanceStatusKey::parse(bad).is_err(), "{bad:?} parsed");
    }
    let err =
        InstanceStatusKey::parse("/registry/default/billing/10.0.0.300:80/status").unwrap_err();
    assert!(matches!(err.reason(), KeyErrorReason::Field { name, .. } if name == "ip"));
    let err =
        InstanceStatusKey::parse("/registry/default/billing/10.0.0.3:99999/status").unwrap_err();
    assert!(matches!(err.reason(), KeyErrorReason::Field { name, .. } if name == "port"));
}

#[test]
fn a_variable_ends_at_the_first_occurrence_of_its_delimiter() {
    // The address after `@` may hold `:`, brackets and dots: it is the last variable.
    let key = NodeKey {
        label: Label::new("edge 1").unwrap(),
        addr: HostPort::parse("[2001:db8::1]:443").unwrap(),
    };
    let raw = key.encode();
    assert_eq!(raw, "/nodes/edge%201@[2001:db8::1]:443");
    assert_eq!(NodeKey::parse(&raw), Ok(key));
    assert!(NodeKey::parse("/nodes/edge").is_err());

    // A label holding `@` (Go's PathEscape leaves it) does not round-trip: the key is split
    // at its first `@`, as `Template::captures` does, and the invariant harness reports such
    // a schema.
    let pair = PairKey::parse("/pair/x@y@z").unwrap();
    assert_eq!((pair.left.as_str(), pair.right.as_str()), ("x", "y@z"));
    let odd = PairKey {
        left: Label::new("x@y").unwrap(),
        right: Label::new("z").unwrap(),
    };
    assert_eq!(odd.encode(), "/pair/x@y@z");
    assert_ne!(PairKey::parse(&odd.encode()), Ok(odd));
    let err = NodeKey::parse("/nodes/a@b@[::1]:80").unwrap_err();
    assert!(matches!(err.reason(), KeyErrorReason::Field { name, .. } if name == "addr"));
}

#[test]
fn colon_keys_and_hash_tags() {
    let map = MapKey {
        realm: code("prod"),
        provider: code("openai"),
    };
    assert_eq!(map.encode(), "nxc:map:prod:openai");
    assert_eq!(MapKey::parse("nxc:map:prod:openai"), Ok(map));
    assert_eq!(MapKey::template().separator(), Separator::Colon);
    assert!(MapKey::parse("nxc:map:prod:openai:x").is_err());

    let pool = PoolKey {
        realm: code("prod"),
        provider: code("openai"),
    };
    assert_eq!(PoolKey::HASH_TAG, Some("realm"));
    assert_eq!(pool.encode(), "nxc:pool:{prod}:openai");
    assert_eq!(PoolKey::parse("nxc:pool:{prod}:openai"), Ok(pool.clone()));
    assert!(PoolKey::parse("nxc:pool:prod:openai").is_err());
    let dir = PoolRealm {
        realm: code("prod"),
    };
    assert_eq!(dir.encode(), "nxc:pool:{prod}:");
    assert!(dir.contains(&pool.encode()));
    assert_eq!(PoolRealm::parse("nxc:pool:{prod}:"), Ok(dir));
}

#[test]
fn a_single_variable_template() {
    let key = BareKey { name: code("acme") };
    assert_eq!(key.encode(), "acme");
    assert_eq!(BareKey::template().separator(), Separator::Slash);
    assert_eq!(BareKey::parse("acme"), Ok(key));
    for bad in ["", "/acme", "acme/", "a/b", "a:b"] {
        assert!(BareKey::parse(bad).is_err(), "{bad:?} parsed");
    }
}

#[test]
fn literal_braces_and_affixes() {
    let key = VersionedKey { version: 3 };
    assert_eq!(key.encode(), "cfg/{raw}/v3.json");
    assert_eq!(VersionedKey::parse("cfg/{raw}/v3.json"), Ok(key));
    for bad in [
        "cfg/{raw}/v03.json",
        "cfg/{raw}/3.json",
        "cfg/{raw}/v3.js",
        "cfg/raw/v3.json",
    ] {
        assert!(VersionedKey::parse(bad).is_err(), "{bad:?} parsed");
    }
}

#[test]
fn prefix_isolates_its_directory() {
    let one = TenantDir { id: 1 };
    assert_eq!(one.encode(), "jxt/tenants/1/");
    assert!(one.contains(&TenantMetaKey { id: 1 }.encode()));
    assert!(!one.contains(&TenantMetaKey { id: 10 }.encode()));
    assert!(!one.contains("jxt/tenants/1"));
    assert!(!TenantDir { id: 10 }.contains(&TenantMetaKey { id: 1 }.encode()));
    assert_eq!(TenantDir::parse("jxt/tenants/1/"), Ok(one));
    assert!(TenantDir::parse("jxt/tenants/1").is_err());
    assert!(TenantDir::parse("jxt/tenants/01/").is_err());
    assert!(TenantDir::parse("jxt/tenants/1//").is_err());
}

#[test]
fn template_metadata() {
    let info = TenantDatabaseKey::info();
    assert_eq!(
        info.template.source(),
        "jxt/tenants/{id}/database/{service}"
    );
    let names: Vec<_> = info.fields.iter().map(|f| f.name).collect();
    assert_eq!(names, ["id", "service"]);
    assert!(
        info.fields[1].rule.contains("63"),
        "{}",
        info.fields[1].rule
    );
    assert!(info.value_type.contains("DatabaseConfig"));
    assert_eq!(TenantMetaKey::DIRECTORY_OF, &[] as &[&str]);
    assert_eq!(TenantMarkerKey::DIRECTORY_OF, &["jxt/tenants/{id}/meta"]);
    assert_eq!(
        TenantMarkerKey::info().directory_of,
        &["jxt/tenants/{id}/meta"]
    );
    assert_eq!(
        InstanceStatusKey::template().vars().collect::<Vec<_>>(),
        ["group", "service", "ip", "port"]
    );
}
