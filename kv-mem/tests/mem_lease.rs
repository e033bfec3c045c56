//! MemStore leases on tokio time: exact expiry and keep-alive under `tokio::time::pause()`.

use futures::StreamExt;
use keyplane_contract::{ErrorKind, Event, LeaseId, PutOptions, Store, WatchOptions};
use keyplane_mem::MemStore;
use std::time::Duration;

fn leased(lease: LeaseId) -> PutOptions {
    PutOptions::default().lease(lease)
}

/// A lease expires exactly at its TTL on tokio time, by itself: its keys go in one revision
/// that watchers see, and the lease is then unknown.
#[tokio::test(start_paused = true)]
async fn expiry_deletes_attached_keys_in_one_revision_and_watchers_see_it() {
    let store = MemStore::new();
    let lease = store.lease_grant(Duration::from_secs(5)).await.unwrap();
    assert_eq!(lease.ttl, Duration::from_secs(5));
    store.put(b"svc/a", b"1", leased(lease.id)).await.unwrap();
    store.put(b"svc/b", b"2", leased(lease.id)).await.unwrap();
    store
        .put(b"svc/c", b"3", PutOptions::default())
        .await
        .unwrap();
    let before = store.revision().await.unwrap();
    let mut watch = store.watch(WatchOptions::prefix("svc/")).await.unwrap();

    tokio::time::advance(Duration::from_millis(4999)).await;
    assert!(store.get(b"svc/a").await.unwrap().is_some());
    let info = store.lease_time_to_live(lease.id).await.unwrap();
    assert_eq!(info.remaining, Duration::from_millis(1));
    assert_eq!(info.keys, vec![b"svc/a".to_vec(), b"svc/b".to_vec()]);

    tokio::time::advance(Duration::from_millis(1)).await;
    // The background task expires the lease without any other call on the store.
    let batch = watch.next().await.unwrap().unwrap();
    assert_eq!(batch.revision, before + 1);
    let keys: Vec<_> = batch.events.iter().map(|e| e.key().to_vec()).collect();
    assert_eq!(keys, vec![b"svc/a".to_vec(), b"svc/b".to_vec()]);
    assert!(
        batch
            .events
            .iter()
            .all(|e| matches!(e, Event::Delete { .. }))
    );
    assert_eq!(store.get(b"svc/a").await.unwrap(), None);
    assert!(store.get(b"svc/c").await.unwrap().is_some());
    let err = store.lease_time_to_live(lease.id).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LeaseNotFound);
}

/// Once the TTL has passed, reads and puts see the lease as gone even before the expiry task
/// has run.
#[tokio::test(start_paused = true)]
async fn every_operation_sees_an_expired_lease_as_gone() {
    let store = MemStore::new();
    let lease = store.lease_grant(Duration::from_millis(10)).await.unwrap();
    store.put(b"k", b"v", leased(lease.id)).await.unwrap();
    tokio::time::advance(Duration::from_millis(10)).await;
    // Whether or not the expiry task has run yet, the key is gone and the lease unknown.
    assert_eq!(store.get(b"k").await.unwrap(), None);
    let err = store.put(b"k2", b"v", leased(lease.id)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LeaseNotFound);
}

/// Keep-alive renews to exactly the granted TTL, and the keys go one TTL after the last
/// renewal.
#[tokio::test(start_paused = true)]
async fn keep_alive_renews_to_the_granted_ttl() {
    let store = MemStore::new();
    let lease = store.lease_grant(Duration::from_secs(2)).await.unwrap();
    store.put(b"k", b"v", leased(lease.id)).await.unwrap();
    for _ in 0..5 {
        tokio::time::advance(Duration::from_millis(1500)).await;
        let ttl = store.lease_keep_alive(lease.id).await.unwrap();
        assert_eq!(ttl, Duration::from_secs(2));
    }
    assert!(store.get(b"k").await.unwrap().is_some());
    let info = store.lease_time_to_live(lease.id).await.unwrap();
    assert_eq!(info.remaining, Duration::from_secs(2));
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(store.get(b"k").await.unwrap(), None);
}
