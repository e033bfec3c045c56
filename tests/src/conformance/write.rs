//! Writes: `put` with a previous value, `delete` and `delete_prefix`.

use super::support::{key, names, next_batch, put, root, snapshot};
use keyplane_core::{PutOptions, Store, WatchOptions};
use std::sync::Arc;

/// `put` with `prev` returns the previous entry (none for a new key); without it, none.
pub async fn put_returns_prev(store: Arc<dyn Store>) {
    let root = root();
    let k = key(&root, "k");
    let first = store
        .put(&k, b"one", PutOptions::default().with_prev())
        .await
        .unwrap();
    assert_eq!(first.prev, None, "a new key has no previous entry");
    let second = store
        .put(&k, b"two", PutOptions::default().with_prev())
        .await
        .unwrap();
    assert!(second.revision > first.revision);
    let prev = second.prev.expect("the previous entry");
    assert_eq!(prev.value, b"one");
    assert_eq!(prev.mod_revision, first.revision);
    assert_eq!(prev.version, 1);
    let third = store
        .put(&k, b"three", PutOptions::default())
        .await
        .unwrap();
    assert_eq!(third.prev, None, "prev only when asked for");
    let now = store.get(&k).await.unwrap().unwrap();
    assert_eq!((now.value.as_slice(), now.version), (&b"three"[..], 3));
    assert_eq!(now.create_revision, first.revision);
    assert_eq!(now.mod_revision, third.revision);
}

/// `delete` returns the previous entry (`None` for a missing key) and the revision of the
/// delete, the one its watchers see.
pub async fn delete_returns_prev(store: Arc<dyn Store>) {
    let root = root();
    let k = key(&root, "k");
    assert_eq!(store.delete(&k).await.unwrap().prev, None);
    let created = put(&*store, &k, "u").await;
    let rev = put(&*store, &k, "v").await;
    let mut watch = store
        .watch(WatchOptions::key(&k).from_revision(rev + 1))
        .await
        .unwrap();
    let deleted = store.delete(&k).await.unwrap();
    assert_eq!(next_batch(&mut watch).await.revision, deleted.revision);
    let prev = deleted.prev.expect("the deleted entry");
    assert_eq!(
        (
            prev.value.as_slice(),
            prev.create_revision,
            prev.mod_revision,
            prev.version
        ),
        (&b"v"[..], created, rev, 2)
    );
    assert_eq!(store.get(&k).await.unwrap(), None);
    assert_eq!(store.delete(&k).await.unwrap().prev, None, "deleting twice");
    // A recreated key starts over: version 1, a new create revision.
    let again = put(&*store, &k, "w").await;
    let e = store.get(&k).await.unwrap().unwrap();
    assert_eq!((e.version, e.create_revision), (1, again));
}

/// How many keys `delete_prefix` says it deleted.
async fn deleted(store: &dyn Store, prefix: &[u8]) -> u64 {
    store.delete_prefix(prefix).await.unwrap().deleted
}

/// `delete_prefix` deletes exactly the keys under the prefix and says how many.
pub async fn delete_prefix_counts_and_isolates(store: Arc<dyn Store>) {
    let root = root();
    for k in ["a/1", "a/1/x", "a/1/y", "a/10/x", "a/11", "b"] {
        put(&*store, &key(&root, k), "v").await;
    }
    assert_eq!(deleted(&*store, &key(&root, "a/1/")).await, 2);
    assert_eq!(
        names(&root, &snapshot(&*store, &root).await),
        ["a/1", "a/10/x", "a/11", "b"]
    );
    assert_eq!(deleted(&*store, &key(&root, "a/1/")).await, 0);
    assert_eq!(deleted(&*store, &key(&root, "a/1")).await, 3);
    assert_eq!(names(&root, &snapshot(&*store, &root).await), ["b"]);
    assert_eq!(deleted(&*store, &key(&root, "zzz")).await, 0);
    let mut watch = store.watch(WatchOptions::prefix(&root)).await.unwrap();
    let last = store.delete_prefix(&root).await.unwrap();
    assert_eq!(last.deleted, 1);
    assert_eq!(next_batch(&mut watch).await.revision, last.revision);
    assert!(snapshot(&*store, &root).await.is_empty());
}
