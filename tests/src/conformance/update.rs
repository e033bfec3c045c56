//! [`TypedStore::update`](keyplane_core::keyspace::TypedStore::update): optimistic
//! read-change-write that never loses a concurrent writer's change.

use super::mirror::Root;
use super::support::root;
use keyplane_core::keyspace::{Json, Key, TypedStore};
use keyplane_core::{Error, ErrorKind, Store};
use std::sync::Arc;
use std::time::Duration;

/// A counter: `{root}/counters/{name}`.
#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "{root}/counters/{name}", value = Json<u64>)]
pub struct CounterKey {
    root: Root,
    name: u32,
}

/// Concurrent updates of one key lose nothing; an update creates an absent key, `None`
/// deletes it, an error from the change writes nothing, and the key keeps its lease.
pub async fn update_loses_no_concurrent_change(store: Arc<dyn Store>) {
    let raw = String::from_utf8(root()).unwrap();
    let root = Root::new(raw.trim_end_matches('/')).unwrap();
    let typed = TypedStore::new(store.clone());
    let counter = |name| CounterKey {
        root: root.clone(),
        name,
    };

    let mut tasks = Vec::new();
    for _ in 0..6 {
        let (typed, key) = (typed.clone(), counter(1));
        tasks.push(tokio::spawn(async move {
            for _ in 0..5 {
                typed
                    .update(&key, |n| Ok(Some(n.copied().unwrap_or(0) + 1)))
                    .await
                    .unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(typed.get(&counter(1)).await.unwrap(), Some(30));

    // An error from the change: nothing written.
    let before = typed.get_versioned(&counter(1)).await.unwrap().unwrap();
    let err = typed
        .update(&counter(1), |_| Err(Error::invalid_argument("no")))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let after = typed.get_versioned(&counter(1)).await.unwrap().unwrap();
    assert_eq!(after.mod_revision, before.mod_revision);

    // The same value: nothing written either.
    typed.update(&counter(1), |n| Ok(n.copied())).await.unwrap();
    let same = typed.get_versioned(&counter(1)).await.unwrap().unwrap();
    assert_eq!(same.mod_revision, before.mod_revision);

    // A leased key keeps its lease; `None` deletes.
    let lease = store.lease_grant(Duration::from_secs(60)).await.unwrap().id;
    typed.put_leased(&counter(2), &1, lease).await.unwrap();
    typed
        .update(&counter(2), |n| Ok(n.map(|n| n + 1)))
        .await
        .unwrap();
    let leased = typed.get_versioned(&counter(2)).await.unwrap().unwrap();
    assert_eq!((leased.value, leased.lease), (2, Some(lease)));
    typed.update(&counter(2), |_| Ok(None)).await.unwrap();
    assert_eq!(typed.get(&counter(2)).await.unwrap(), None);
    store.lease_revoke(lease).await.unwrap();
}
