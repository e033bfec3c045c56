//! Leases: grant, keep-alive, revoke, time-to-live and expiry, with the deletes watchers see.

use super::support::{expect_kind, key, names, next_batch, put, root, snapshot};
use keyplane_core::{ErrorKind, Event, LeaseId, PutOptions, Store, WatchOptions, WatchStream};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

async fn put_leased(store: &dyn Store, key: &[u8], lease: LeaseId) -> i64 {
    store
        .put(key, b"leased", PutOptions::default().lease(lease))
        .await
        .unwrap()
        .revision
}

/// Reads batches until every key of `keys` has been deleted; fails on any other event.
async fn await_deletes(stream: &mut WatchStream, keys: &[Vec<u8>]) {
    let mut pending: BTreeSet<Vec<u8>> = keys.iter().cloned().collect();
    while !pending.is_empty() {
        for event in next_batch(stream).await.events {
            match event {
                Event::Delete { key, .. } => assert!(pending.remove(&key), "unexpected delete"),
                other => panic!("expected deletes only, got {other:?}"),
            }
        }
    }
}

/// A grant's TTL is the request rounded up to the granularity (one and a half granules make
/// two); time-to-live reports it.
pub async fn lease_grant_rounds_ttl_up(store: Arc<dyn Store>) {
    let caps = store.capabilities().clone();
    let granule = caps.ttl_granularity;
    // Two granules may be as short as 2 ms: this lease is left to expire, never read back.
    let short = store.lease_grant(granule * 3 / 2).await.unwrap();
    assert_eq!(short.ttl, granule * 2, "granularity {granule:?}");
    let asked = Duration::from_millis(1500);
    let grant = store.lease_grant(asked).await.unwrap();
    assert_eq!(grant.ttl, caps.round_ttl(asked).unwrap());
    assert!(grant.ttl >= asked);
    let info = store.lease_time_to_live(grant.id).await.unwrap();
    assert_eq!((info.id, info.granted_ttl), (grant.id, grant.ttl));
    assert!(info.remaining <= grant.ttl);
    assert!(info.keys.is_empty());
    let other = store.lease_grant(asked).await.unwrap();
    assert_ne!(other.id, grant.id, "every grant is a new lease");
    store.lease_revoke(grant.id).await.unwrap();
    store.lease_revoke(other.id).await.unwrap();
}

/// Keep-alive returns the granted TTL, and keeps attached keys alive past their first TTL.
pub async fn lease_keep_alive_renews(store: Arc<dyn Store>) {
    let root = root();
    let grant = store.lease_grant(Duration::from_secs(1)).await.unwrap();
    let k = key(&root, "kept");
    put_leased(&*store, &k, grant.id).await;
    // Renew every third of the TTL for three TTLs: the key must outlive its first TTL.
    let mut ticks = tokio::time::interval(grant.ttl / 3);
    for _ in 0..9 {
        ticks.tick().await;
        assert_eq!(store.lease_keep_alive(grant.id).await.unwrap(), grant.ttl);
    }
    let info = store.lease_time_to_live(grant.id).await.unwrap();
    assert!(info.remaining <= grant.ttl);
    assert_eq!(info.keys, std::slice::from_ref(&k));
    assert!(
        store.get(&k).await.unwrap().is_some(),
        "a kept-alive lease keeps its keys"
    );
    store.lease_revoke(grant.id).await.unwrap();
}

/// Revoking a lease deletes its keys (and no others); watchers see the deletes.
pub async fn lease_revoke_deletes_keys_and_watchers_see_it(store: Arc<dyn Store>) {
    let root = root();
    let grant = store.lease_grant(Duration::from_secs(60)).await.unwrap();
    let leased = [key(&root, "a"), key(&root, "b")];
    for k in &leased {
        put_leased(&*store, k, grant.id).await;
    }
    put(&*store, &key(&root, "plain"), "v").await;
    let mut watch = store.watch(WatchOptions::prefix(&root)).await.unwrap();
    store.lease_revoke(grant.id).await.unwrap();
    await_deletes(&mut watch, &leased).await;
    assert_eq!(names(&root, &snapshot(&*store, &root).await), ["plain"]);
    expect_kind(
        store.lease_time_to_live(grant.id).await,
        ErrorKind::LeaseNotFound,
    );
}

/// Time-to-live lists the attached keys, ascending; a delete or a put without the lease
/// detaches a key.
pub async fn lease_time_to_live_lists_keys(store: Arc<dyn Store>) {
    let root = root();
    let grant = store.lease_grant(Duration::from_secs(60)).await.unwrap();
    let keys = [key(&root, "c"), key(&root, "a"), key(&root, "b")];
    for k in &keys {
        put_leased(&*store, k, grant.id).await;
    }
    let info = store.lease_time_to_live(grant.id).await.unwrap();
    assert_eq!(
        info.keys,
        [key(&root, "a"), key(&root, "b"), key(&root, "c")]
    );
    store.delete(&key(&root, "a")).await.unwrap();
    put(&*store, &key(&root, "b"), "detached").await;
    let info = store.lease_time_to_live(grant.id).await.unwrap();
    assert_eq!(info.keys, [key(&root, "c")]);
    store.lease_revoke(grant.id).await.unwrap();
    assert_eq!(names(&root, &snapshot(&*store, &root).await), ["b"]);
}

/// An expired lease deletes its keys and a watcher sees the deletes; the lease is then gone:
/// keep-alive and a put attached to it are `LeaseNotFound`.
pub async fn lease_expiry_deletes_keys_and_watchers_see_it(store: Arc<dyn Store>) {
    let root = root();
    let grant = store.lease_grant(Duration::from_secs(1)).await.unwrap();
    let leased = [key(&root, "x"), key(&root, "y")];
    for k in &leased {
        put_leased(&*store, k, grant.id).await;
    }
    let written = put(&*store, &key(&root, "plain"), "v").await;
    // From the revision after the writes, so that an expiry before the watch starts is seen.
    let from = WatchOptions::prefix(&root).from_revision(written + 1);
    let mut watch = store.watch(from).await.unwrap();
    await_deletes(&mut watch, &leased).await;
    assert_eq!(names(&root, &snapshot(&*store, &root).await), ["plain"]);
    expect_kind(
        store.lease_keep_alive(grant.id).await,
        ErrorKind::LeaseNotFound,
    );
    expect_kind(
        store
            .put(
                &key(&root, "late"),
                b"v",
                PutOptions::default().lease(grant.id),
            )
            .await,
        ErrorKind::LeaseNotFound,
    );
    assert_eq!(names(&root, &snapshot(&*store, &root).await), ["plain"]);
}

/// A put with a lease attaches the key (its entry names the lease); a later put without one
/// detaches it, as in etcd.
pub async fn put_with_lease_attaches_it(store: Arc<dyn Store>) {
    let root = root();
    let grant = store.lease_grant(Duration::from_secs(60)).await.unwrap();
    let k = key(&root, "k");
    put_leased(&*store, &k, grant.id).await;
    assert_eq!(store.get(&k).await.unwrap().unwrap().lease, Some(grant.id));
    put(&*store, &k, "plain now").await;
    let e = store.get(&k).await.unwrap().unwrap();
    assert_eq!((e.lease, e.version), (None, 2));
    store.lease_revoke(grant.id).await.unwrap();
    assert!(
        store.get(&k).await.unwrap().is_some(),
        "a detached key outlives the lease"
    );
}

/// [`LeaseKeeper`](keyplane_core::recipes::LeaseKeeper) keeps a lease alive past its TTL, reports the loss
/// when the lease is revoked behind its back, and `revoke()` deletes the attached keys.
pub async fn lease_keeper_renews_and_reports_loss(store: Arc<dyn Store>) {
    let root = root();
    // 2 s leaves a renewal (every TTL/3) room to be late on a loaded machine.
    let keeper = keyplane_core::recipes::LeaseKeeper::grant(store.clone(), Duration::from_secs(2))
        .await
        .unwrap();
    let granted = tokio::time::Instant::now();
    let k = key(&root, "kept");
    let written = put_leased(&*store, &k, keeper.id()).await;
    // Renewals come every third of the TTL: after four, more than a TTL has passed, and only
    // the renewals kept the key.
    tokio::time::timeout(super::support::EVENT_TIMEOUT, keeper.renewed(4))
        .await
        .expect("the keeper renews")
        .unwrap_or_else(|e| panic!("the kept lease was lost: {e}"));
    assert!(granted.elapsed() > keeper.ttl());
    let kept = store
        .get(&k)
        .await
        .unwrap()
        .expect("the kept lease expired");
    assert_eq!(kept.mod_revision, written, "the key was never deleted");
    assert!(!keeper.is_lost());
    store.lease_revoke(keeper.id()).await.unwrap();
    let lost = tokio::time::timeout(super::support::EVENT_TIMEOUT, keeper.lost())
        .await
        .expect("the keeper notices the revoke");
    assert_eq!(lost.kind(), ErrorKind::LeaseNotFound);
    assert!(keeper.is_lost());

    let second = keyplane_core::recipes::LeaseKeeper::grant(store.clone(), Duration::from_secs(30))
        .await
        .unwrap();
    let other = key(&root, "other");
    put_leased(&*store, &other, second.id()).await;
    let mut watch = store.watch(WatchOptions::key(&other)).await.unwrap();
    second.revoke().await.unwrap();
    await_deletes(&mut watch, std::slice::from_ref(&other)).await;
}

/// Waits until time-to-live says `id` is gone, sleeping for the time it says is left (at
/// least a tenth of the granularity, as etcd rounds the last second down to 0).
async fn await_expiry(store: &dyn Store, id: LeaseId) {
    let least = (store.capabilities().ttl_granularity / 10).max(Duration::from_millis(1));
    loop {
        match store.lease_time_to_live(id).await {
            Ok(info) => tokio::time::sleep(info.remaining.max(least)).await,
            Err(e) if e.kind() == ErrorKind::LeaseNotFound => return,
            Err(e) => panic!("time-to-live of a granted lease failed: {e}"),
        }
    }
}

/// The lease list holds every live lease, ascending, and neither a revoked one nor one that
/// expired (listed as soon as time-to-live says it is gone, before a sweeper may have run).
/// Other cases grant leases on the same server meanwhile, so only this case's are checked.
pub async fn lease_list_shows_only_live_leases(store: Arc<dyn Store>) {
    let kept = store.lease_grant(Duration::from_secs(60)).await.unwrap();
    let revoked = store.lease_grant(Duration::from_secs(60)).await.unwrap();
    let expiring = store.lease_grant(Duration::from_secs(1)).await.unwrap();
    let listed = store.lease_list().await.unwrap();
    assert!(
        listed.windows(2).all(|w| w[0] < w[1]),
        "ascending: {listed:?}"
    );
    for grant in [&kept, &revoked] {
        assert!(
            listed.contains(&grant.id),
            "{:?} not in {listed:?}",
            grant.id
        );
    }
    store.lease_revoke(revoked.id).await.unwrap();
    await_expiry(&*store, expiring.id).await;
    let listed = store.lease_list().await.unwrap();
    assert!(listed.contains(&kept.id), "{:?} not in {listed:?}", kept.id);
    assert!(
        !listed.contains(&revoked.id),
        "revoked {:?} listed",
        revoked.id
    );
    assert!(
        !listed.contains(&expiring.id),
        "expired {:?} listed",
        expiring.id
    );
    store.lease_revoke(kept.id).await.unwrap();
    assert!(!store.lease_list().await.unwrap().contains(&kept.id));
}
