//! The registry keyspace: byte-identical to the document's layout, judged by the schema
//! checker and the invariant harness, with rule 4 (no file and directory of one name)
//! enforced by the service name.

use keyplane_core::keyspace::{
    Key, Keyspace, Prefix, assert_key_invariants, assert_keyspace_invariants,
    assert_prefix_invariants, check_keyspace,
};
use keyplane_schemas::registry::*;

fn service() -> ServiceId {
    ServiceId::new(
        GroupName::new("Common").unwrap(),
        ServiceName::new("VerifyCodeService").unwrap(),
    )
}

#[test]
fn keys_are_the_documents_layout() {
    let s = service();
    let i = s.instance("192.168.0.1:11080".parse().unwrap());
    let group = GroupInfoKey {
        group: s.group.clone(),
    };
    assert_eq!(group.encode(), "/registry/Common/info");
    assert_eq!(
        s.info_key().encode(),
        "/registry/Common/VerifyCodeService/info"
    );
    assert_eq!(
        i.data_key().encode(),
        "/registry/Common/VerifyCodeService/192.168.0.1:11080/data"
    );
    assert_eq!(
        i.status_key().encode(),
        "/registry/Common/VerifyCodeService/192.168.0.1:11080/status"
    );
    assert_eq!(
        i.config_key().encode(),
        "/registry/Common/VerifyCodeService/192.168.0.1:11080/config"
    );
    assert_eq!(RegistryRoot {}.encode(), "/registry/");
    assert_eq!(
        GroupDir {
            group: s.group.clone()
        }
        .encode(),
        "/registry/Common/"
    );
    assert_eq!(s.dir().encode(), "/registry/Common/VerifyCodeService/");
    assert_eq!(
        i.dir().encode(),
        "/registry/Common/VerifyCodeService/192.168.0.1:11080/"
    );

    let parsed =
        RegistryKeyspace::parse("/registry/Common/VerifyCodeService/192.168.0.2:21080/status")
            .unwrap();
    assert_eq!(
        parsed.template_source(),
        "/registry/{group}/{service}/{addr}/status"
    );
    assert_eq!(
        parsed.instance().unwrap().addr.to_string(),
        "192.168.0.2:21080"
    );
    assert_eq!(RegistryKeyspace::templates().len(), 5);
    for addr in ["[2001:db8::1]:11080", "api.internal:11080"] {
        let key = format!("/registry/Common/VerifyCodeService/{addr}/data");
        let parsed = RegistryKeyspace::parse(&key).unwrap();
        assert_eq!(parsed.instance().unwrap().addr.to_string(), addr);
        assert_eq!(parsed.encode(), key);
    }
}

#[test]
fn segments_follow_the_rules() {
    for bad in [
        "registry/Common/info",                         // rule 1: leading `/`
        "/registry/Common/info/",                       // rule 3: a file has no trailing `/`
        "/registry/Common/info/info",                   // rule 4: a service named `info`
        "/registry/Common/S/192.168.0.1:0/data",        // port 0
        "/registry/Common/S/192.168.0.1:011080/data",   // not canonical
        "/registry/Common/S/192.168.000.1:11080/data",  // not canonical
        "/registry/Common/S/[0:0::1]:11080/data",       // IPv6 not in RFC 5952 form
        "/registry/Common/S/[2001:DB8::1]:11080/data",  // IPv6 in uppercase
        "/registry/Common/S/Api.internal:11080/data",   // DNS name not lowercase
        "/registry/Common/S/192.168.0.1/data",          // no port
        "/registry/Com mon/info",                       // outside the charset
        "/registry//info",                              // empty segment
        "/registry/../info",                            // dot segment
        "/registry/Common/S/192.168.0.1:11080/metrics", // not a file of the document
        "/Registry/Common/info",                        // rule 5: the root is `/registry/`
    ] {
        assert!(RegistryKeyspace::parse(bad).is_err(), "{bad:?} parsed");
    }
    let err = ServiceName::new("info").unwrap_err();
    assert!(err.reason().contains("info"), "{err}");
}

#[test]
fn the_checker_finds_nothing_and_no_exception_is_declared() {
    let findings = check_keyspace::<RegistryKeyspace>();
    assert!(findings.is_empty(), "{findings:#?}");
    for template in RegistryKeyspace::templates() {
        assert!(
            template.directory_of.is_empty(),
            "{}",
            template.template.source()
        );
    }
    assert_eq!(RegistryKeyspace::naming_rule().unwrap().describe(), "[a-z]");
}

#[test]
fn the_invariant_harness_passes() {
    assert_keyspace_invariants::<RegistryKeyspace>();
    assert_key_invariants::<GroupInfoKey>();
    assert_key_invariants::<ServiceInfoKey>();
    assert_key_invariants::<InstanceDataKey>();
    assert_key_invariants::<InstanceStatusKey>();
    assert_key_invariants::<InstanceConfigKey>();
    assert_prefix_invariants::<RegistryRoot>();
    assert_prefix_invariants::<GroupDir>();
    assert_prefix_invariants::<ServiceDir>();
    assert_prefix_invariants::<InstanceDir>();
}

#[test]
fn the_catalog_lists_and_parses_the_registry() {
    let schema = keyplane_schemas::find("registry").expect("in the catalog");
    assert_eq!(schema.store, "etcd");
    assert_eq!(schema.templates().len(), 5);
    let parsed = schema
        .parse("/registry/Common/VerifyCodeService/info")
        .unwrap();
    assert_eq!(parsed.template, "/registry/{group}/{service}/info");
    assert_eq!(
        parsed.fields,
        vec![
            ("group", "Common".to_string()),
            ("service", "VerifyCodeService".to_string())
        ]
    );
}
