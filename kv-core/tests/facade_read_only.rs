//! Read-only templates: an old layout's keys (doubled separators included) are parsed, read,
//! listed and watched through the typed store, and every write to them is refused with
//! `ReadOnly` before it reaches the store.

use keyplane_core::keyspace::{
    Json, Key, Keyspace, ListOptions, Prefix, Template, TemplateKind, Text, TypedStore,
    check_keyspace,
};
use keyplane_core::{ErrorKind, PutOptions, Store};
use std::sync::Arc;

keyplane_core::text_segment!(
    /// A host name of the old index.
    pub HostName, charset = "[a-z0-9.-]", max_len = 253, policy = Reject);

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt//tenants/{id}/meta", value = Json<serde_json::Value>, read_only)]
struct OldMeta {
    id: u64,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt//tenants/{id}/domain/primary", value = Text, read_only)]
struct OldPrimary {
    id: u64,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt//hosts/{host}", value = Text, read_only)]
struct OldHost {
    host: HostName,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "old::members:{id}", set = Text, read_only)]
struct OldMembers {
    id: u64,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "old::fields:{id}", hash = Text, read_only)]
struct OldFields {
    id: u64,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "old::items:{id}", list = Text, read_only)]
struct OldItems {
    id: u64,
}

#[derive(Prefix, Debug, Clone, PartialEq)]
#[kv(template = "jxt//tenants/{id}/", key = OldPrimary, read_only)]
struct OldTenantDir {
    id: u64,
}

/// The new layout the old one moves to: writable.
#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id}/meta", value = Json<serde_json::Value>)]
struct NewMeta {
    id: u64,
}

#[derive(Keyspace, Debug, Clone, PartialEq)]
#[kv(naming = "[a-z-]")]
enum OldLayout {
    Meta(OldMeta),
    Primary(OldPrimary),
    Host(OldHost),
}

/// Writes `value` under `key` as another program would: raw, through no schema.
async fn raw_put(store: &dyn Store, key: &[u8], value: &[u8]) {
    store.put(key, value, PutOptions::default()).await.unwrap();
}

fn store() -> (Arc<dyn Store>, TypedStore) {
    let store: Arc<dyn Store> = Arc::new(keyplane_mem::MemStore::new());
    (store.clone(), TypedStore::new(store))
}

#[test]
fn doubled_separators_parse_and_round_trip() {
    let key = OldMeta { id: 7 };
    assert_eq!(key.encode(), "jxt//tenants/7/meta");
    assert_eq!(OldMeta::parse("jxt//tenants/7/meta"), Ok(key));
    for wrong in [
        "jxt/tenants/7/meta",
        "jxt///tenants/7/meta",
        "jxt/x/tenants/7/meta",
        "jxt//tenants/07/meta",
    ] {
        assert!(OldMeta::parse(wrong).is_err(), "{wrong}");
    }
    assert!(OldMeta::template().is_read_only());
    assert!(!NewMeta::template().is_read_only());
    assert_eq!(
        OldMembers::parse("old::members:3"),
        Ok(OldMembers { id: 3 })
    );
    assert_eq!(OldTenantDir { id: 7 }.encode(), "jxt//tenants/7/");
    assert_eq!(
        OldLayout::parse("jxt//hosts/api.example.com").unwrap(),
        OldLayout::Host(OldHost {
            host: HostName::new("api.example.com").unwrap()
        })
    );
    // The derive's specialised code and the runtime template agree.
    let runtime = Template::read_only("jxt//tenants/{id}/meta", TemplateKind::Key, None).unwrap();
    assert_eq!(runtime.captures::<1>("jxt//tenants/7/meta").unwrap(), ["7"]);
    assert!(runtime.captures::<1>("jxt/tenants/7/meta").is_err());
}

#[test]
fn old_layouts_pass_the_checker() {
    let findings = check_keyspace::<OldLayout>();
    assert!(findings.is_empty(), "{findings:?}");
}

#[cfg(feature = "proptest")]
#[test]
fn old_layouts_keep_the_invariants() {
    use keyplane_core::keyspace::{assert_key_invariants, assert_keyspace_invariants};
    assert_key_invariants::<OldMeta>();
    assert_key_invariants::<OldHost>();
    assert_key_invariants::<OldMembers>();
    assert_keyspace_invariants::<OldLayout>();
}

#[tokio::test]
async fn reads_work_on_data_another_program_wrote() {
    let (store, typed) = store();
    raw_put(&*store, b"jxt//tenants/7/meta", br#"{"id":7}"#).await;
    raw_put(&*store, b"jxt//tenants/7/domain/primary", b"a.example.com").await;
    raw_put(&*store, b"jxt//tenants/70/domain/primary", b"b.example.com").await;
    assert_eq!(
        typed.get(&OldMeta { id: 7 }).await.unwrap(),
        Some(serde_json::json!({"id": 7}))
    );
    let listed = typed
        .list(&OldTenantDir { id: 7 }, ListOptions::limit(100))
        .await
        .unwrap();
    let keys: Vec<OldPrimary> = listed.items.into_iter().map(|(key, _)| key).collect();
    assert_eq!(
        keys,
        [OldPrimary { id: 7 }],
        "tenant 70 is not under tenant 7"
    );
}

#[tokio::test]
async fn every_write_to_a_read_only_key_is_refused_and_nothing_is_written() {
    let (store, typed) = store();
    raw_put(&*store, b"jxt//tenants/7/meta", br#"{"id":7}"#).await;
    let before = store.revision().await.unwrap();
    let key = OldMeta { id: 7 };
    let value = serde_json::json!({"id": 8});

    let refused = |result: keyplane_core::Result<_>, what: &str| {
        let err = result
            .err()
            .unwrap_or_else(|| panic!("{what} was not refused"));
        assert_eq!(err.kind(), ErrorKind::ReadOnly, "{what}: {err}");
        assert!(
            err.to_string().contains("read-only template"),
            "{what}: {err}"
        );
    };
    refused(typed.put(&key, &value).await.map(drop), "put");
    refused(typed.delete(&key).await.map(drop), "delete");
    refused(
        typed
            .update(&key, |_| Ok(Some(serde_json::json!({"id": 9}))))
            .await
            .map(drop),
        "update",
    );
    refused(
        typed.delete_prefix(&OldTenantDir { id: 7 }).await.map(drop),
        "delete_prefix",
    );
    let lease = store
        .lease_grant(std::time::Duration::from_secs(30))
        .await
        .unwrap();
    refused(
        typed.put_leased(&key, &value, lease.id).await.map(drop),
        "put_leased",
    );

    // A transaction with one read-only write is not sent, its other writes included.
    let mut txn = typed.txn();
    txn.put(&NewMeta { id: 7 }, &value).put(&key, &value);
    refused(txn.commit().await.map(drop), "txn put");
    let mut txn = typed.txn();
    txn.put(&NewMeta { id: 7 }, &value).delete(&key);
    refused(txn.commit().await.map(drop), "txn delete");
    let mut txn = typed.txn();
    txn.put(&NewMeta { id: 7 }, &value).create(&key, &value);
    refused(txn.commit().await.map(drop), "txn create");
    let mut txn = typed.txn();
    txn.put(&NewMeta { id: 7 }, &value)
        .delete_prefix(&OldTenantDir { id: 7 });
    refused(txn.commit().await.map(drop), "txn delete_prefix");

    // Collections: every write through a handle or a transaction.
    let set = typed.set_at(&OldMembers { id: 7 });
    let map = typed.map_at(&OldFields { id: 7 });
    let list = typed.list_at(&OldItems { id: 7 });
    let text = "x".to_string();
    let err = set.add(&text).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ReadOnly, "{err}");
    assert!(err.to_string().contains("old::members:7"), "{err}");
    assert_eq!(
        set.remove(&text).await.unwrap_err().kind(),
        ErrorKind::ReadOnly
    );
    assert_eq!(
        map.put(&text, &text).await.unwrap_err().kind(),
        ErrorKind::ReadOnly
    );
    assert_eq!(
        map.remove(&text).await.unwrap_err().kind(),
        ErrorKind::ReadOnly
    );
    assert_eq!(
        list.push(&text).await.unwrap_err().kind(),
        ErrorKind::ReadOnly
    );
    assert_eq!(
        list.push_front(&text).await.unwrap_err().kind(),
        ErrorKind::ReadOnly
    );
    for build in [
        |t: &mut keyplane_core::keyspace::TypedTxn, s: &_, _: &_, _: &_| {
            t.set_add(s, &"x".to_string());
        },
        |t: &mut keyplane_core::keyspace::TypedTxn, s: &_, _: &_, _: &_| {
            t.set_remove(s, &"x".to_string());
        },
        |t: &mut keyplane_core::keyspace::TypedTxn, _: &_, m: &_, _: &_| {
            t.map_put(m, &"f".to_string(), &"v".to_string());
        },
        |t: &mut keyplane_core::keyspace::TypedTxn, _: &_, m: &_, _: &_| {
            t.map_delete(m, &"f".to_string());
        },
        |t: &mut keyplane_core::keyspace::TypedTxn, _: &_, _: &_, l: &_| {
            t.list_push(l, &"i".to_string());
        },
        |t: &mut keyplane_core::keyspace::TypedTxn, _: &_, _: &_, l: &_| {
            t.list_push_front(l, &"i".to_string());
        },
    ] {
        let mut txn = typed.txn();
        txn.put(&NewMeta { id: 7 }, &value);
        build(&mut txn, &set, &map, &list);
        refused(txn.commit().await.map(drop), "txn collection write");
    }

    assert_eq!(
        store.revision().await.unwrap(),
        before,
        "nothing was written"
    );
    assert_eq!(
        typed.get(&key).await.unwrap(),
        Some(serde_json::json!({"id": 7}))
    );
    assert_eq!(typed.get(&NewMeta { id: 7 }).await.unwrap(), None);

    // Compares and reads on a read-only key are fine: the migration's own guards use them.
    let mut txn = typed.txn();
    txn.when_exists(&key).put(&NewMeta { id: 7 }, &value);
    assert!(txn.commit().await.unwrap().succeeded);
    assert!(set.members().await.unwrap().is_empty());
}
