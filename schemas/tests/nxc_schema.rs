//! The nxc keyspace: byte-identical to the document's §4.1, judged by the schema checker and
//! the invariant harness, with the declared map/default nesting.

use keyplane_core::keyspace::{
    Codec, Encrypted, EncryptionKey, Keyring, Keyspace, Text, assert_key_invariants,
    assert_keyspace_invariants, check_keyspace,
};
use keyplane_schemas::nxc::*;
use std::sync::Arc;

fn realm() -> RealmId {
    RealmId::new("test_realm").unwrap()
}
fn provider() -> ProviderName {
    ProviderName::new("Alipay").unwrap()
}
fn profile() -> ProfileId {
    ProfileId::new("app_001").unwrap()
}

#[test]
fn keys_are_the_documents_layout() {
    let map = ProfileMapKey::new(&realm(), &provider());
    let cases: Vec<(NxcKeyspace, &str)> = vec![
        (map.clone().into(), "nxc:map:test_realm:Alipay"),
        (
            map.default_marker().into(),
            "nxc:map:test_realm:Alipay:default",
        ),
        (
            map.instance(&profile()).into(),
            "nxc:inst:test_realm:Alipay:app_001",
        ),
        (
            PoolKey {
                provider: provider(),
                profile: profile(),
            }
            .into(),
            "nxc:pool:Alipay:app_001",
        ),
    ];
    for (key, raw) in &cases {
        assert_eq!(key.encode(), *raw);
        assert_eq!(NxcKeyspace::parse(raw).as_ref(), Ok(key));
    }
    assert_eq!(NxcKeyspace::templates().len(), cases.len());
}

#[test]
fn segments_follow_the_rules() {
    for bad in [
        "nxc:map:test_realm",                   // too short
        "nxc:map:test_realm:Alipay:other",      // only `default` extends a map
        "nxc:map:test:realm:Alipay",            // `:` cannot be inside a segment
        "nxc:map::Alipay",                      // empty segment
        "nxc:inst:r:p:a b",                     // space
        "nxc:inst:r:p:..",                      // dot segment
        "nxc:pool:Alipay:app_001:x",            // too long
        "nexus:config:group:Alipay:test_realm", // the legacy layout is not nxc
        "NXC:map:a:b",                          // literals as written
    ] {
        assert!(NxcKeyspace::parse(bad).is_err(), "{bad:?} parsed");
    }
    assert!(RealmId::new("a".repeat(65)).is_err());
    assert!(ProfileId::new("a:b").is_err());
    assert!(ProviderName::new("").is_err());
    assert!(ProfileId::new("2021000123456789").is_ok());
}

#[test]
fn the_marker_nesting_is_declared_and_nothing_else_is_found() {
    let findings = check_keyspace::<NxcKeyspace>();
    assert!(findings.is_empty(), "{findings:#?}");
    let templates = NxcKeyspace::templates();
    let map = templates
        .iter()
        .find(|t| t.template.source() == "nxc:map:{realm}:{provider}")
        .unwrap();
    assert_eq!(map.directory_of, &["nxc:map:{realm}:{provider}:default"]);
    for other in templates.iter().filter(|t| !std::ptr::eq(*t, map)) {
        assert!(other.directory_of.is_empty());
    }
}

#[test]
fn the_invariant_harness_passes() {
    assert_keyspace_invariants::<NxcKeyspace>();
    assert_key_invariants::<ProfileMapKey>();
    assert_key_invariants::<DefaultProfileKey>();
    assert_key_invariants::<InstanceKey>();
    assert_key_invariants::<PoolKey>();
}

#[test]
fn pool_values_are_encrypted_strings() {
    let ring = Arc::new(Keyring::new("pool-1", EncryptionKey::generate()).unwrap());
    let codec = Encrypted::new(ring.clone(), Text);
    let pem = "-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\n".to_string();
    let stored = codec.encode(&pem).unwrap();
    assert!(!stored.windows(3).any(|w| w == b"abc"));
    assert_eq!(Keyring::envelope_key_id(&stored).unwrap(), "pool-1");
    assert_eq!(codec.decode(&stored).unwrap(), pem);
    let other = Encrypted::new(
        Arc::new(Keyring::new("pool-1", EncryptionKey::generate()).unwrap()),
        Text,
    );
    assert!(other.decode(&stored).is_err());
}

#[test]
fn instance_field_names_are_checked() {
    let ok: InstanceParams = [("sub_mchid".to_string(), "1".to_string())].into();
    assert!(validate_params(&ok).is_ok());
    for bad in ["", "a b", "a:b", &"f".repeat(MAX_FIELD_LEN + 1)] {
        let params: InstanceParams = [(bad.to_string(), "v".to_string())].into();
        let err = validate_params(&params).unwrap_err();
        assert_eq!(err.kind(), keyplane_core::ErrorKind::InvalidArgument);
    }
}

#[test]
fn the_catalog_lists_and_parses_nxc() {
    let schema = keyplane_schemas::find("nxc").expect("in the catalog");
    assert_eq!(schema.store, "redis");
    let parsed = schema.parse("nxc:inst:test_realm:Alipay:app_001").unwrap();
    assert_eq!(parsed.template, "nxc:inst:{realm}:{provider}:{profile}");
    assert_eq!(
        parsed.fields,
        vec![
            ("realm", "test_realm".to_string()),
            ("provider", "Alipay".to_string()),
            ("profile", "app_001".to_string()),
        ]
    );
}

#[test]
fn the_legacy_layout_is_the_documents_and_disjoint() {
    let provider = LegacyProvider::new(provider()).unwrap();
    let cases: Vec<(NxcLegacyKeyspace, &str)> = vec![
        (
            LegacyGroupKey {
                provider: provider.clone(),
                realm: realm(),
            }
            .into(),
            "nexus:config:group:Alipay:test_realm",
        ),
        (
            LegacyIndexKey {
                provider: provider.clone(),
                realm: realm(),
            }
            .into(),
            "nexus:config:index:Alipay:test_realm",
        ),
        (
            LegacyConfigKey {
                provider,
                realm: realm(),
                profile: profile(),
            }
            .into(),
            "nexus:config:Alipay:test_realm:app_001",
        ),
    ];
    for (key, raw) in &cases {
        assert_eq!(key.encode(), *raw);
        assert_eq!(NxcLegacyKeyspace::parse(raw).as_ref(), Ok(key));
    }
    // `group` and `index` are the layout's literals, never a provider: one key, one parse.
    for literal in ["group", "index"] {
        assert!(LegacyProvider::new(ProviderName::new(literal).unwrap()).is_err());
    }
    assert!(matches!(
        NxcLegacyKeyspace::parse("nexus:config:group:a:b"),
        Ok(NxcLegacyKeyspace::Group(_))
    ));
    let findings = check_keyspace::<NxcLegacyKeyspace>();
    assert!(findings.is_empty(), "{findings:#?}");
    assert_keyspace_invariants::<NxcLegacyKeyspace>();
    assert_key_invariants::<LegacyGroupKey>();
    assert_key_invariants::<LegacyIndexKey>();
    assert_key_invariants::<LegacyConfigKey>();
}
