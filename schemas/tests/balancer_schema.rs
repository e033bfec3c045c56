//! The balancer keyspace: the document's §3 keys, byte for byte, judged by the schema checker
//! and the invariant harness, with the declared object/reverse-index nesting.

use keyplane_core::keyspace::{
    Keyspace, assert_key_invariants, assert_keyspace_invariants, check_keyspace,
};
use keyplane_schemas::balancer::*;

#[test]
fn keys_are_the_documents_layout() {
    let cases: Vec<(BalancerKeyspace, &str)> = vec![
        (KeyObjectKey { id: 42 }.into(), "key:42"),
        (ActiveKeysKey { id: 7 }.into(), "group:7:keys:active"),
        (KeyGroupsKey { id: 42 }.into(), "key:42:groups"),
    ];
    for (key, raw) in &cases {
        assert_eq!(key.encode(), *raw);
        assert_eq!(BalancerKeyspace::parse(raw).as_ref(), Ok(key));
    }
    assert_eq!(BalancerKeyspace::templates().len(), cases.len());
}

#[test]
fn segments_follow_the_rules() {
    for bad in [
        "key:042",               // ids are canonical decimals
        "key:-1",                // and unsigned
        "key:x",                 // and numbers
        "group:7:keys",          // not a key of the document
        "group:7:keys:disabled", // only the active list exists
        "key:1:groups:x",        // too deep
        "gemini:key:1",          // a root is the store's namespace, not part of the key
        ":key:1",                // nothing in front
        "KEY:1",                 // literals as written
    ] {
        assert!(BalancerKeyspace::parse(bad).is_err(), "{bad:?} parsed");
    }
    assert!(BalancerRoot::new("a:b").is_err());
    assert!(BalancerRoot::new("r".repeat(65)).is_err());
}

#[test]
fn the_reverse_index_nesting_is_declared_and_nothing_else_is_found() {
    let findings = check_keyspace::<BalancerKeyspace>();
    assert!(findings.is_empty(), "{findings:#?}");
    let templates = BalancerKeyspace::templates();
    for t in &templates {
        let expected: &[&str] = if t.template.source() == "key:{id}" {
            &["key:{id}:groups"]
        } else {
            &[]
        };
        assert_eq!(t.directory_of, expected, "{}", t.template.source());
    }
}

#[test]
fn the_invariant_harness_passes() {
    assert_keyspace_invariants::<BalancerKeyspace>();
    assert_key_invariants::<KeyObjectKey>();
    assert_key_invariants::<ActiveKeysKey>();
    assert_key_invariants::<KeyGroupsKey>();
}

#[test]
fn statuses_are_the_documents_words() {
    assert_eq!(KeyStatus::Active.as_str(), "active");
    assert_eq!(KeyStatus::Disabled.as_str(), "disabled");
    assert_eq!(KeyStatus::from("disabled"), KeyStatus::Disabled);
    assert_eq!(KeyStatus::from("active"), KeyStatus::Active);
    // Any other text is kept exactly, and is not active.
    for other in ["Active", "suspended", "", " active", "已停用"] {
        let status = KeyStatus::from(other);
        assert_eq!(status, KeyStatus::Other(other.to_owned()));
        assert_eq!(status.as_str(), other);
        assert_eq!(KeyStatus::from(other.to_owned()), status);
        assert!(!status.is_active() && !status.is_known(), "{other:?}");
    }
    assert!(KeyStatus::Active.is_active() && KeyStatus::Disabled.is_known());
    assert!(KeyStatus::Other("active".to_owned()).is_active());
}

#[test]
fn debug_output_never_shows_the_api_key() {
    let secret = "sk-Sup3rS3cretApiKey";
    let record = ApiKeyRecord {
        api_key: secret.to_owned(),
        status: KeyStatus::Other("suspended".to_owned()),
    };
    let loaded = LoadedKey {
        id: 7,
        record: record.clone(),
        groups: vec![1],
    };
    let source = BalancerSource::from_json(
        format!(r#"{{"apikeys": [{{"id": 7, "api_key": "{secret}", "status": "suspended"}}]}}"#)
            .as_bytes(),
    )
    .unwrap();
    let plan = source.plan().unwrap();
    assert_eq!(plan.keys[0].record, record);
    for shown in [
        format!("{record:?}"),
        format!("{record:#?}"),
        format!("{loaded:?}"),
        format!("{source:?}"),
        format!("{:?}", source.apikeys[0]),
        format!("{plan:?}"),
    ] {
        assert!(
            !shown.contains(secret) && !shown.contains("Sup3r"),
            "{shown}"
        );
        assert!(shown.contains("***"), "{shown}");
    }
    // What is not secret is still shown.
    assert!(format!("{loaded:?}").contains("suspended"));
    assert!(format!("{loaded:?}").contains("id: 7"));
}

#[test]
fn the_catalog_lists_and_parses_the_balancer() {
    let schema = keyplane_schemas::find("balancer").expect("in the catalog");
    assert_eq!(schema.store, "redis");
    let parsed = schema.parse("group:7:keys:active").unwrap();
    assert_eq!(parsed.template, "group:{id}:keys:active");
    assert_eq!(parsed.fields, vec![("id", "7".to_string())]);
}
