//! A manifest says everything a derived schema does: loaded back, it parses the same keys
//! into the same templates and fields, and refuses the same malformed ones; bad manifests are
//! refused with a reason.

use super::*;
use keyplane::keyspace::{KeyspaceStrategy, mutations};
use keyplane_schemas::{balancer, cronix, nxc, registry, tenant};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::cell::Cell;

/// The manifest of `schema`, loaded back under the name `<name>-copy`.
fn loaded_copy(schema: Schema) -> Listed {
    let mut doc = write(schema, &crate::catalog::entries(schema));
    doc["name"] = Value::from(format!("{}-copy", schema.name));
    parse(&doc.to_string()).unwrap_or_else(|why| panic!("{}: {why}", schema.name))
}

/// Keys of `K` and mutations of them parse alike by the derived schema and its manifest.
fn parses_alike<K: KeyspaceStrategy>(typed: Schema) {
    let loaded = loaded_copy(typed).schema;
    assert_eq!(loaded.templates().len(), typed.templates().len());
    let raws = K::strategy().prop_flat_map(|key| {
        let raw = key.encode();
        prop_oneof![Just(raw.clone()), mutations(raw)]
    });
    let mut runner = TestRunner::new(Config {
        cases: 400,
        ..Config::default()
    });
    let matched = Cell::new(0);
    runner
        .run(&raws, |raw| {
            match (typed.parse(&raw), loaded.parse(&raw)) {
                (Ok(a), Ok(b)) => {
                    prop_assert_eq!(a.template, b.template, "{:?}", raw);
                    prop_assert_eq!(a.fields, b.fields, "{:?}", raw);
                    prop_assert_eq!(a.read_only, b.read_only);
                    matched.set(matched.get() + 1);
                }
                (Err(_), Err(_)) => {}
                (a, b) => prop_assert!(
                    false,
                    "{}: {raw:?}: derived {a:?}, manifest {b:?}",
                    typed.name
                ),
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{}: {e}", typed.name));
    let matched = matched.get();
    assert!(matched > 100, "{}: {matched} keys matched", typed.name);
}

#[test]
fn every_bundled_schema_parses_alike_from_its_manifest() {
    parses_alike::<tenant::TenantKeyspace>(tenant::schema());
    parses_alike::<tenant::TenantLegacyKeyspace>(tenant::legacy_schema());
    parses_alike::<registry::RegistryKeyspace>(registry::schema());
    parses_alike::<cronix::CronixKeyspace>(cronix::schema());
    parses_alike::<nxc::NxcKeyspace>(nxc::schema());
    parses_alike::<nxc::NxcClusterKeyspace>(nxc::cluster_schema());
    parses_alike::<nxc::NxcLegacyKeyspace>(nxc::legacy_schema());
    parses_alike::<balancer::BalancerKeyspace>(balancer::schema());
}

#[test]
fn a_manifest_round_trips() {
    for schema in keyplane_schemas::every() {
        let first = write(schema, &crate::catalog::entries(schema));
        let listed = parse(&first.to_string()).unwrap_or_else(|why| panic!("{why}"));
        let names = listed.names.clone().expect("names");
        let entries: Vec<Entry> = listed
            .schema
            .templates()
            .into_iter()
            .zip(names.iter())
            .map(|(info, name)| Entry {
                schema: listed.schema,
                name: name.clone(),
                info,
            })
            .collect();
        let second = write(listed.schema, &entries);
        assert_eq!(first, second, "{}", schema.name);
    }
}

/// A small hand-written manifest, with `edit` applied to it.
fn hand_written(edit: impl FnOnce(&mut Value)) -> Result<Listed, String> {
    let mut doc = serde_json::json!({
        "format": "keyplane-schema/1",
        "name": "acme",
        "templates": [{
            "name": "service",
            "template": "acme/apps/{app}/services/{name}",
            "fields": [
                {"name": "app", "segment": {"kind": "int", "signed": false, "bits": 64}},
                {"name": "name", "segment": {"kind": "text", "charset": "[a-z0-9-]", "max_len": 63, "policy": "reject"}}
            ],
            "value": {"format": "json", "schema": {
                "type": "object",
                "properties": {"image": {"type": "string"}, "replicas": {"type": "integer", "minimum": 0}},
                "required": ["image"]
            }}
        }]
    });
    edit(&mut doc);
    parse(&doc.to_string())
}

#[test]
fn a_hand_written_manifest_checks_keys_and_values() {
    let listed = hand_written(|_| {}).expect("loads");
    let schema = listed.schema;
    let parsed = schema.parse("acme/apps/1/services/api").expect("parses");
    assert_eq!(
        parsed.fields,
        [("app", "1".to_owned()), ("name", "api".to_owned())]
    );
    for bad in [
        "acme/apps/01/services/api",
        "acme/apps/1/services/API",
        "acme/apps/1/services/",
    ] {
        assert!(schema.parse(bad).is_err(), "{bad}");
    }
    let info = &schema.templates()[0];
    let key = "acme/apps/1/services/api";
    assert!(
        info.value
            .check(key, br#"{"image":"nginx","replicas":2}"#)
            .is_ok()
    );
    for bad in [
        &br#"{"replicas":2}"#[..],
        br#"{"image":1}"#,
        br#"{"image":"x","replicas":-1}"#,
        b"nginx",
    ] {
        let err = info.value.check(key, bad).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Codec, "{err}");
    }
}

/// A change that breaks the hand-written manifest.
type Edit = Box<dyn FnOnce(&mut Value)>;

#[test]
fn bad_manifests_are_refused_with_a_reason() {
    let cases: Vec<(&str, Edit)> = vec![
        (
            "keyplane-schema/2",
            Box::new(|d| d["format"] = "keyplane-schema/2".into()),
        ),
        ("schema name", Box::new(|d| d["name"] = "a.b".into())),
        ("unknown field", Box::new(|d| d["colour"] = "blue".into())),
        (
            "no field",
            Box::new(|d| {
                d["templates"][0]["fields"]
                    .as_array_mut()
                    .expect("fields")
                    .pop();
            }),
        ),
        (
            "not a variable",
            Box::new(|d| d["templates"][0]["fields"][0]["name"] = "nope".into()),
        ),
        (
            "width 7",
            Box::new(|d| d["templates"][0]["fields"][0]["segment"]["bits"] = 7.into()),
        ),
        (
            "charset",
            Box::new(|d| d["templates"][0]["fields"][1]["segment"]["charset"] = "[z-a".into()),
        ),
        (
            "JSON Schema",
            Box::new(|d| d["templates"][0]["value"]["schema"]["type"] = 12.into()),
        ),
        (
            "only `json`",
            Box::new(|d| d["templates"][0]["value"]["format"] = "text".into()),
        ),
        (
            "separator",
            Box::new(|d| d["templates"][0]["separator"] = "|".into()),
        ),
        (
            "template",
            Box::new(|d| d["templates"][0]["template"] = "acme//{app}".into()),
        ),
        (
            "Overlap",
            Box::new(|d| {
                // `{name}` can be `api`: both templates would hold `acme/apps/1/services/api`.
                let mut twin = d["templates"][0].clone();
                twin["name"] = "twin".into();
                twin["template"] = "acme/apps/{app}/services/api".into();
                twin["fields"].as_array_mut().expect("fields").pop();
                d["templates"].as_array_mut().expect("templates").push(twin);
            }),
        ),
        (
            "template name",
            Box::new(|d| {
                let mut twin = d["templates"][0].clone();
                twin["template"] = "acme/other/{app}/services/{name}".into();
                d["templates"].as_array_mut().expect("templates").push(twin);
            }),
        ),
    ];
    for (expected, edit) in cases {
        let err = hand_written(edit)
            .err()
            .unwrap_or_else(|| panic!("{expected}: loaded"));
        assert!(err.contains(expected), "{expected}: {err}");
    }
}
