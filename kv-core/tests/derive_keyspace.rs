//! Behaviour of `#[derive(Keyspace)]`: dispatch to the right template, a useful error when
//! none matches, and derived schemas judged by the schema checker.

mod derive_schema;

use derive_schema::*;
use keyplane_core::keyspace::{FindingKind, Key, KeyErrorReason, Keyspace, Text, check_keyspace};

#[test]
fn parses_each_template_into_its_variant() {
    let keys: Vec<TenantSchema> = vec![
        TenantMetaKey { id: 1 }.into(),
        TenantDatabaseKey {
            id: 10,
            service: code("mysql"),
        }
        .into(),
        FtpUserKey {
            id: 11,
            username: Name::new("默认租户/ftp").unwrap(),
        }
        .into(),
        HostIndexKey {
            host: Name::new("a.example.com").unwrap(),
        }
        .into(),
        PlatformConfigKey { key: code("smtp") }.into(),
    ];
    for key in keys {
        let raw = key.encode();
        assert_eq!(TenantSchema::parse(&raw), Ok(key.clone()), "{raw}");
        assert!(raw.starts_with("jxt/"));
    }
    let key = TenantSchema::parse("jxt/tenants/7/database/pg").unwrap();
    assert_eq!(key.template_source(), "jxt/tenants/{id}/database/{service}");
    assert_eq!(
        key.fields(),
        vec![("id", "7".to_string()), ("service", "pg".to_string())]
    );
    assert_eq!(TenantSchema::templates().len(), 5);
}

#[test]
fn says_why_nothing_matched() {
    let err = TenantSchema::parse("jxt/tenants/7/databse/pg").unwrap_err();
    let closest = err.closest().expect("an attempt");
    assert_eq!(closest.position(), 3);
    assert!(err.to_string().contains("databse"), "{err}");

    let err = TenantSchema::parse("jxt/tenants/7/database/PG").unwrap_err();
    let closest = err.closest().unwrap();
    assert_eq!(closest.template(), "jxt/tenants/{id}/database/{service}");
    assert!(matches!(closest.reason(), KeyErrorReason::Field { name, .. } if name == "service"));

    for raw in ["", "other/1", "jxt", "jxt/tenants/7", "/jxt/tenants/7/meta"] {
        let err = TenantSchema::parse(raw).unwrap_err();
        assert_eq!(err.raw(), raw);
        assert!(err.closest().is_some());
    }
}

#[test]
fn the_example_schemas_pass_the_checker() {
    for findings in [
        check_keyspace::<TenantSchema>(),
        check_keyspace::<RegistrySchema>(),
        check_keyspace::<NxcSchema>(),
    ] {
        assert!(findings.is_empty(), "{findings:#?}");
    }
    assert_eq!(
        TenantSchema::naming_rule().unwrap().describe(),
        "[a-z0-9_-]"
    );
}

// Planted faults: the checker must reject each derived schema below.

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "a/{x}", value = Text)]
struct AnyA {
    x: Code,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "a/b", value = Text)]
struct FixedB {}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "a/{x}/c", value = Text)]
struct UnderA {
    x: Code,
}

#[derive(Keyspace, Debug, Clone, PartialEq)]
enum Overlapping {
    Any(AnyA),
    Fixed(FixedB),
}

#[derive(Keyspace, Debug, Clone, PartialEq)]
enum Nested {
    Parent(AnyA),
    Child(UnderA),
}

#[derive(Keyspace, Debug, Clone, PartialEq)]
#[kv(allow_dir(Parent, Child))]
enum NestedDeclared {
    Parent(AnyA),
    Child(UnderA),
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt/Configs/{key}", value = Text)]
struct BadLiteral {
    key: Code,
}

#[derive(Keyspace, Debug, Clone, PartialEq)]
#[kv(naming = "[a-z0-9_-]")]
enum Misnamed {
    Bad(BadLiteral),
}

#[test]
fn the_checker_rejects_planted_faults_in_derived_schemas() {
    let findings = check_keyspace::<Overlapping>();
    assert!(
        findings.iter().any(|f| f.kind == FindingKind::Overlap
            && f.template == "a/{x}"
            && f.other.as_deref() == Some("a/b")),
        "{findings:#?}"
    );
    // Both parse, each into its own variant: the literal is tried like any template.
    assert!(matches!(
        Overlapping::parse("a/b"),
        Ok(Overlapping::Any(_) | Overlapping::Fixed(_))
    ));

    let findings = check_keyspace::<Nested>();
    assert!(
        findings.iter().any(|f| f.kind == FindingKind::Nesting),
        "{findings:#?}"
    );
    let findings = check_keyspace::<NestedDeclared>();
    assert!(findings.is_empty(), "{findings:#?}");
    let parent = &NestedDeclared::templates()[0];
    assert_eq!(parent.directory_of, &["a/{x}/c"]);

    let findings = check_keyspace::<Misnamed>();
    assert!(
        findings.iter().any(|f| f.kind == FindingKind::Naming),
        "{findings:#?}"
    );
}
