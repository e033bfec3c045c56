//! The hand-written example schema: building, strict parsing, keyspace dispatch with reasons,
//! a clean schema check, and (feature `proptest`) the invariant harness.

mod keyspace_example;

use keyplane_core::keyspace::{
    HostPort, Key, KeyErrorReason, Keyspace, Padded, Prefix, check_keyspace,
};
use keyplane_core::raw::redis_key_slot;
use keyspace_example::*;
use uuid::Uuid;

fn service(name: &str) -> ServiceName {
    ServiceName::new(name).unwrap()
}

#[test]
fn keys_build_as_the_seed_documents_write_them() {
    let db = TenantDatabaseKey {
        id: 42,
        service: service("默认租户"),
    };
    assert_eq!(
        db.encode(),
        "jxt/tenants/42/database/%E9%BB%98%E8%AE%A4%E7%A7%9F%E6%88%B7"
    );
    let status = InstanceStatusKey {
        group: GroupName::new("prod-east").unwrap(),
        service: service("billing api"),
        addr: HostPort::parse("[2001:db8::1]:8080").unwrap(),
    };
    assert_eq!(
        status.encode(),
        "/registry/prod-east/billing%20api/[2001:db8::1]:8080/status"
    );
    let map = ProviderMapKey {
        realm: Realm::new("prod").unwrap(),
        provider: Provider::new("openai").unwrap(),
    };
    assert_eq!(map.encode(), "nxc:map:{prod}:openai");
    let run = JobRunKey {
        job: Uuid::nil(),
        seq: Padded::new(7).unwrap(),
    };
    assert_eq!(
        run.encode(),
        "cronix/jobs/00000000-0000-0000-0000-000000000000/runs/0000000007"
    );
    assert_eq!(
        TenantDatabasesPrefix { id: 42 }.encode(),
        "jxt/tenants/42/database/"
    );
}

#[test]
fn write_appends_to_a_reused_buffer() {
    let mut buffer = String::with_capacity(64);
    for id in [1u64, 10, 11] {
        buffer.clear();
        TenantMetaKey { id }.write(&mut buffer);
        assert_eq!(buffer, format!("jxt/tenants/{id}/meta"));
    }
}

#[test]
fn parsing_is_strict_and_says_why() {
    let ok = TenantDatabaseKey::parse("jxt/tenants/7/database/mysql").unwrap();
    assert_eq!(
        ok,
        TenantDatabaseKey {
            id: 7,
            service: service("mysql")
        }
    );
    for bad in [
        "jxt/tenants/07/database/mysql",   // leading zero
        "jxt/tenants/7/database/my%2fsql", // lowercase escape
        "jxt/tenants/7/database/my sql",   // unescaped space
        "jxt/tenants/7/database/",         // empty segment
        "jxt/tenants/7/database/mysql/",   // trailing separator
        "jxt/tenants/7//database/mysql",   // doubled separator
        "/jxt/tenants/7/database/mysql",   // leading separator
        "jxt/tenants/7/database/..",       // dot-dot
        "jxt/tenants/7/databases/mysql",   // literal
    ] {
        assert!(TenantDatabaseKey::parse(bad).is_err(), "{bad}");
    }
    let err = TenantDatabaseKey::parse("jxt/tenants/x/database/mysql").unwrap_err();
    assert_eq!(err.position(), 2);
    assert!(matches!(err.reason(), KeyErrorReason::Field { name, .. } if name == "id"));
    let err = TenantDatabaseKey::parse("jxt/tenants/1").unwrap_err();
    assert!(matches!(
        err.reason(),
        KeyErrorReason::Depth {
            expected: 5,
            found: 3
        }
    ));
    let err: keyplane_core::Error = err.into();
    assert_eq!(err.kind(), keyplane_core::ErrorKind::InvalidKey);

    assert!(
        ProviderMapKey::parse("nxc:map:prod:openai").is_err(),
        "missing hash tag"
    );
    assert!(
        ProviderMapKey::parse("nxc:map:{Prod}:openai").is_err(),
        "charset"
    );
    assert!(
        InstanceStatusKey::parse("/registry/g/s/10.0.0.1:0/status").is_err(),
        "port 0"
    );
    assert!(JobRunKey::parse("cronix/jobs/00000000-0000-0000-0000-000000000000/runs/7").is_err());
}

#[test]
fn keyspace_dispatches_and_explains_misses() {
    let parsed = ExampleKey::parse("jxt/tenants/3/meta").unwrap();
    assert_eq!(parsed, ExampleKey::Meta(TenantMetaKey { id: 3 }));
    assert_eq!(parsed.template_source(), "jxt/tenants/{id}/meta");
    assert_eq!(parsed.fields(), vec![("id", "3".to_owned())]);
    assert!(matches!(
        ExampleKey::parse("nxc:map:{eu}:azure.east"),
        Ok(ExampleKey::ProviderMap(_))
    ));

    let miss = ExampleKey::parse("jxt/tenants/3/metadata").unwrap_err();
    let closest = miss.closest().unwrap();
    assert_eq!(closest.template(), "jxt/tenants/{id}/meta");
    assert_eq!(closest.position(), 3);
    assert!(miss.to_string().contains("jxt/tenants/{id}/meta"), "{miss}");

    let miss = ExampleKey::parse("jxt/tenants/-1/meta").unwrap_err();
    assert!(matches!(
        miss.closest().unwrap().reason(),
        KeyErrorReason::Field { name, .. } if name == "id"
    ));
    assert!(ExampleKey::parse("").is_err());
}

#[test]
fn prefixes_isolate_their_directory() {
    let one = TenantDatabasesPrefix { id: 1 };
    assert!(one.contains("jxt/tenants/1/database/mysql"));
    assert!(!one.contains("jxt/tenants/10/database/mysql"));
    assert!(!one.contains("jxt/tenants/1/database/"));
    assert_eq!(
        TenantDatabasesPrefix::parse("jxt/tenants/1/database/"),
        Ok(one)
    );
    assert!(TenantDatabasesPrefix::parse("jxt/tenants/1/database").is_err());
}

#[test]
fn hash_tag_colocates_a_realm() {
    let key = |realm: &str, provider: &str| {
        ProviderMapKey {
            realm: Realm::new(realm).unwrap(),
            provider: Provider::new(provider).unwrap(),
        }
        .encode()
    };
    let slot = redis_key_slot(key("prod", "openai").as_bytes());
    assert_eq!(slot, redis_key_slot(key("prod", "azure").as_bytes()));
    assert_eq!(slot, redis_key_slot(b"prod"));
}

#[test]
fn example_schema_passes_the_checker() {
    let findings = check_keyspace::<ExampleKey>();
    assert!(findings.is_empty(), "{findings:?}");
    let infos = ExampleKey::templates();
    assert_eq!(infos.len(), 5);
    let status = &infos[2];
    assert_eq!(status.fields.len(), 3);
    assert!(status.field("addr").unwrap().rule.contains("host:port"));
    assert!(status.value_type.contains("Text"));
}

#[cfg(feature = "proptest")]
mod harness {
    use super::*;
    use keyplane_core::keyspace::{
        assert_key_invariants, assert_keyspace_invariants, assert_prefix_invariants,
        verify_key_order,
    };

    #[test]
    fn every_key_passes_the_invariants() {
        assert_key_invariants::<TenantMetaKey>();
        assert_key_invariants::<TenantDatabaseKey>();
        assert_key_invariants::<InstanceStatusKey>();
        assert_key_invariants::<ProviderMapKey>();
        assert_key_invariants::<JobRunKey>();
    }

    #[test]
    fn the_prefix_passes_the_invariants() {
        assert_prefix_invariants::<TenantDatabasesPrefix>();
    }

    #[test]
    fn the_keyspace_passes_the_invariants() {
        assert_keyspace_invariants::<ExampleKey>();
    }

    #[test]
    fn ordered_keys_sort_like_their_values() {
        verify_key_order::<JobRunKey>().unwrap();
    }
}
