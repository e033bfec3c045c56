//! Statuses beyond the document's examples (`active`, `disabled`), on every backend: a key
//! object another program wrote with its own status (`suspended`), through the store's
//! plain collection operations in the document's layout, reads without error, keeps its
//! bytes, is never handed out, and survives a rebuild and a repair as it is.

use keyplane_core::keyspace::TypedStore;
use keyplane_core::{CollectionOp, CollectionResult, Store};
use keyplane_schemas::balancer::*;
use std::sync::Arc;

/// The status the other program writes.
const SUSPENDED: &str = "suspended";

/// Writes `{root}:key:{id}` HASH `{api_key, status}` and `{root}:key:{id}:groups` as the
/// other program does, with no list write.
async fn write_raw(store: &dyn Store, root: &str, id: u64, status: &str, groups: &[u64]) {
    let object = format!("{root}:key:{id}").into_bytes();
    for (field, value) in [
        ("api_key", format!("sk-{id}")),
        ("status", status.to_owned()),
    ] {
        store
            .collection(CollectionOp::MapPut {
                key: object.clone(),
                field: field.as_bytes().to_vec(),
                value: value.into_bytes(),
            })
            .await
            .unwrap();
    }
    for group in groups {
        store
            .collection(CollectionOp::SetAdd {
                key: format!("{root}:key:{id}:groups").into_bytes(),
                member: group.to_string().into_bytes(),
            })
            .await
            .unwrap();
    }
}

/// The raw fields of `{root}:key:{id}`, sorted.
async fn raw_fields(store: &dyn Store, root: &str, id: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    let all = CollectionOp::MapGetAll {
        key: format!("{root}:key:{id}").into_bytes(),
    };
    match store.collection(all).await.unwrap() {
        CollectionResult::Fields(mut fields) => {
            fields.sort();
            fields
        }
        other => panic!("fields expected: {other:?}"),
    }
}

async fn unknown_statuses_are_kept_and_never_picked(store: Arc<dyn Store>) {
    let root = format!("bal{}", uuid::Uuid::new_v4().simple());
    let cache = Balancer::with_root(
        &TypedStore::new(store.clone()),
        BalancerRoot::new(root.clone()).unwrap(),
    )
    .unwrap();
    let active = ApiKeyRecord {
        api_key: "sk-1".into(),
        status: KeyStatus::Active,
    };
    cache.put_key(1, &active).await.unwrap();
    cache.link(1, 10).await.unwrap();
    write_raw(store.as_ref(), &root, 5, SUSPENDED, &[10]).await;
    let written = raw_fields(store.as_ref(), &root, 5).await;
    assert!(
        written.contains(&(b"status".to_vec(), SUSPENDED.as_bytes().to_vec())),
        "{written:?}"
    );

    // Read as it is.
    let suspended = KeyStatus::Other(SUSPENDED.to_owned());
    let record = cache.key(5).await.unwrap().expect("the key is cached");
    assert_eq!(record.status, suspended);
    assert_eq!(record.api_key, "sk-5");
    // Never handed out, and a link does not list it.
    for _ in 0..3 {
        assert_eq!(cache.pick(10).await.unwrap(), Some(1));
    }
    assert!(cache.link(5, 20).await.unwrap());
    assert_eq!(cache.active_keys(20).await.unwrap(), Vec::<u64>::new());
    assert_eq!(cache.pick(20).await.unwrap(), None);
    assert_eq!(cache.groups_of(5).await.unwrap(), [10, 20]);
    // Written back by the library, it keeps its bytes.
    cache.put_key(5, &record).await.unwrap();
    cache.set_status(5, suspended.clone()).await.unwrap();
    assert_eq!(raw_fields(store.as_ref(), &root, 5).await, written);
    // A repair finds nothing to fix; a rebuild from what is cached changes nothing.
    assert!(cache.repair().await.unwrap().clean());
    let cached = [
        LoadedKey {
            id: 1,
            record: active,
            groups: vec![10],
        },
        LoadedKey {
            id: 5,
            record: record.clone(),
            groups: vec![10, 20],
        },
    ];
    assert!(cache.rebuild(&cached).await.unwrap().unchanged());
    assert_eq!(raw_fields(store.as_ref(), &root, 5).await, written);
    // It joins rotation when made active, and leaves it for its own status again.
    cache.set_status(5, KeyStatus::Active).await.unwrap();
    assert_eq!(cache.active_keys(20).await.unwrap(), [5]);
    cache.set_status(5, suspended).await.unwrap();
    assert_eq!(cache.active_keys(10).await.unwrap(), [1]);
    assert_eq!(cache.active_keys(20).await.unwrap(), Vec::<u64>::new());
    assert_eq!(raw_fields(store.as_ref(), &root, 5).await, written);
    // Loaded by the library with such a status, a key is cached but not listed.
    let loaded = LoadedKey {
        id: 6,
        record: ApiKeyRecord {
            api_key: "sk-6".into(),
            status: KeyStatus::Other("rate-limited".into()),
        },
        groups: vec![10],
    };
    cache
        .load_keys(std::slice::from_ref(&loaded))
        .await
        .unwrap();
    assert_eq!(cache.key(6).await.unwrap(), Some(loaded.record));
    assert_eq!(cache.active_keys(10).await.unwrap(), [1]);
}

keyplane_tests::on_every_backend!(unknown_statuses_are_kept_and_never_picked);
