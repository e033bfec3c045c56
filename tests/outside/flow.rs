//! What every outside crate does with the library: derive a key, a prefix and a keyspace, then a
//! typed put, list, transaction and mirror on `keyplane::open("mem://")`.
//!
//! Each crate includes this file as a module; the derives find `keyplane-core` the way that
//! crate names it (the facade, or a renamed dependency).

use keyplane::keyspace::{Json, Key, Keyspace, ListOptions, Prefix, Text, TypedStore};
use serde::{Deserialize, Serialize};

keyplane::text_segment!(pub Service, charset = "[a-z0-9-]", max_len = 63, policy = Reject);

/// A tenant's metadata, as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub code: String,
}

/// `jxt/tenants/{id}/meta`.
#[derive(Key, Debug, Clone, PartialEq, Eq)]
#[kv(template = "jxt/tenants/{id}/meta", value = Json<Meta>)]
pub struct MetaKey {
    pub id: u64,
}

/// `jxt/tenants/{id}/database/{service}`.
#[derive(Key, Debug, Clone, PartialEq, Eq)]
#[kv(template = "jxt/tenants/{id}/database/{service}", value = Text)]
pub struct DatabaseKey {
    pub id: u64,
    pub service: Service,
}

/// `jxt/tenants/{id}/database/`: one tenant's databases.
#[derive(Prefix, Debug, Clone, PartialEq, Eq)]
#[kv(template = "jxt/tenants/{id}/database/", key = DatabaseKey)]
pub struct DatabaseDir {
    pub id: u64,
}

/// `jxt/tenants/`: every tenant's metadata.
#[derive(Prefix, Debug, Clone, PartialEq, Eq)]
#[kv(template = "jxt/tenants/", key = MetaKey)]
pub struct TenantsDir {}

/// The schema: both templates.
#[derive(Keyspace, Debug, Clone, PartialEq)]
pub enum Tenants {
    Meta(MetaKey),
    Database(DatabaseKey),
}

fn service(name: &str) -> Service {
    Service::new(name).expect("a valid service name")
}

/// Runs the typed operations and checks each answer.
pub async fn run() -> keyplane::Result<()> {
    let findings = keyplane::keyspace::check_keyspace::<Tenants>();
    assert!(findings.is_empty(), "an ambiguous keyspace: {findings:?}");
    let store = TypedStore::new(keyplane::open("mem://").await?);

    // Typed put and get.
    store
        .put(
            &MetaKey { id: 1 },
            &Meta {
                code: "default".into(),
            },
        )
        .await?;
    store
        .put(
            &MetaKey { id: 10 },
            &Meta {
                code: "sales".into(),
            },
        )
        .await?;
    let meta = store.get(&MetaKey { id: 1 }).await?;
    assert_eq!(meta.map(|m| m.code).as_deref(), Some("default"));

    // A typed listing: tenant 1's directory never holds tenant 10's keys.
    for (id, name) in [
        (1, "evidence-query"),
        (1, "file-storage"),
        (10, "evidence-query"),
    ] {
        let key = DatabaseKey {
            id,
            service: service(name),
        };
        store.put(&key, &format!("mysql://db-{id}/{name}")).await?;
    }
    let page = store
        .list(&DatabaseDir { id: 1 }, ListOptions::limit(100))
        .await?;
    let listed: Vec<String> = page
        .items
        .iter()
        .map(|(k, _)| k.service.to_string())
        .collect();
    assert_eq!(listed, ["evidence-query", "file-storage"]);
    assert_eq!(DatabaseDir { id: 1 }.encode(), "jxt/tenants/1/database/");

    // A transaction: create-if-absent succeeds once, then finds the key.
    let created = store
        .txn()
        .create(&MetaKey { id: 2 }, &Meta { code: "new".into() })
        .commit()
        .await?;
    assert!(created.succeeded);
    let again = store
        .txn()
        .create(
            &MetaKey { id: 2 },
            &Meta {
                code: "other".into(),
            },
        )
        .commit()
        .await?;
    assert!(!again.succeeded);

    // Parsing a raw key into the keyspace.
    match Tenants::parse("jxt/tenants/10/database/evidence-query") {
        Ok(Tenants::Database(key)) => assert_eq!(key.id, 10),
        other => panic!("jxt/tenants/10/database/evidence-query parsed as {other:?}"),
    }

    // A mirror of every tenant's metadata follows a later write.
    let mirror = store.mirror(&TenantsDir {})?.start().await?;
    assert_eq!(mirror.snapshot().len(), 3);
    let written = store
        .put(
            &MetaKey { id: 3 },
            &Meta {
                code: "late".into(),
            },
        )
        .await?;
    let view = mirror.wait_for(written).await?;
    assert_eq!(view.len(), 4);
    assert_eq!(
        view.get(&MetaKey { id: 3 }).map(|v| v.value.code.as_str()),
        Some("late")
    );
    Ok(())
}
