//! Locks ([`keyplane_core::recipes::Lock`]): mutual exclusion, hand-over, release on lease loss, fencing.

use super::support::{EVENT_TIMEOUT, key, root};
use keyplane_core::recipes::{LeaseKeeper, Lock, LockGuard};
use keyplane_core::{Compare, CompareOp, LeaseId, Store, Txn, TxnOp};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

pub(super) async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(EVENT_TIMEOUT, f)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen within {EVENT_TIMEOUT:?}"))
}

pub(super) async fn keeper(store: &Arc<dyn Store>) -> LeaseKeeper {
    LeaseKeeper::grant(store.clone(), Duration::from_secs(10))
        .await
        .unwrap()
}

pub(super) async fn lease(store: &Arc<dyn Store>, ttl: Duration) -> LeaseId {
    store.lease_grant(ttl).await.unwrap().id
}

fn fenced_put(guard: &LockGuard, key: &[u8], value: &str) -> Txn {
    Txn::new()
        .when([Compare::create_revision(
            guard.key(),
            CompareOp::Equal,
            guard.fencing_token(),
        )])
        .and_then([TxnOp::put(key, value)])
}

/// Two contenders taking the lock in turns are never inside the critical section together.
pub async fn lock_mutual_exclusion(store: Arc<dyn Store>) {
    let root = root();
    let name = key(&root, "lock");
    let inside = Arc::new(AtomicBool::new(false));
    let entries = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for who in 0..2 {
        let (store, name, inside, entries) =
            (store.clone(), name.clone(), inside.clone(), entries.clone());
        let marker = key(&root, "holder");
        tasks.push(tokio::spawn(async move {
            let keeper = keeper(&store).await;
            let lock = Lock::new(store.clone(), &name).unwrap();
            for round in 0..5 {
                let guard = lock.lock(keeper.id()).await.unwrap();
                assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                // A store round trip inside the section gives the other contender time to run.
                let claim = Txn::new()
                    .when([Compare::absent(&marker)])
                    .and_then([TxnOp::put(&marker, format!("{who}/{round}"))]);
                assert!(
                    store.txn(claim).await.unwrap().succeeded,
                    "the marker was left set"
                );
                store.delete(&marker).await.unwrap();
                entries.fetch_add(1, Ordering::SeqCst);
                inside.store(false, Ordering::SeqCst);
                guard.unlock().await.unwrap();
            }
            keeper.revoke().await.unwrap();
        }));
    }
    for t in tasks {
        within("both contenders finishing", t).await.unwrap();
    }
    assert_eq!(entries.load(Ordering::SeqCst), 10);
}

/// A waiter is queued while the lock is held (`try_lock` fails) and acquires it on unlock.
pub async fn lock_waiter_acquires_after_unlock(store: Arc<dyn Store>) {
    let root = root();
    let lock = Lock::new(store.clone(), key(&root, "lock")).unwrap();
    let (a, b, c) = (
        keeper(&store).await,
        keeper(&store).await,
        keeper(&store).await,
    );
    let first = lock.lock(a.id()).await.unwrap();
    assert!(first.key().starts_with(&key(&root, "lock/")));
    let waiter = {
        let (lock, id) = (lock.clone(), b.id());
        tokio::spawn(async move { lock.lock(id).await })
    };
    assert!(
        lock.try_lock(c.id()).await.unwrap().is_none(),
        "the lock is held"
    );
    assert!(
        !waiter.is_finished(),
        "the waiter got the lock while it was held"
    );
    let first_token = first.fencing_token();
    first.unlock().await.unwrap();
    let second = within("the waiter acquiring", waiter)
        .await
        .unwrap()
        .unwrap();
    assert!(second.fencing_token() > first_token);
    assert_eq!(second.lease(), b.id());
    second.unlock().await.unwrap();
    let third = lock.try_lock(c.id()).await.unwrap().expect("a free lock");
    third.unlock().await.unwrap();
}

/// Revoking the holder's lease releases the lock: the holder's `lost()` fires and the waiter
/// acquires it.
pub async fn lock_released_when_lease_revoked(store: Arc<dyn Store>) {
    let root = root();
    let lock = Lock::new(store.clone(), key(&root, "lock")).unwrap();
    let holder_lease = lease(&store, Duration::from_secs(60)).await;
    let waiter_keeper = keeper(&store).await;
    let holder = lock.lock(holder_lease).await.unwrap();
    let waiter = {
        let (lock, id) = (lock.clone(), waiter_keeper.id());
        tokio::spawn(async move { lock.lock(id).await })
    };
    assert!(!holder.is_lost());
    store.lease_revoke(holder_lease).await.unwrap();
    let err = within("lost() after the revoke", holder.lost()).await;
    assert_eq!(err.kind(), keyplane_core::ErrorKind::LockLost);
    assert!(holder.is_lost());
    let next = within("the waiter acquiring", waiter)
        .await
        .unwrap()
        .unwrap();
    assert!(next.fencing_token() > holder.fencing_token());
    assert!(
        holder.unlock().await.is_err(),
        "unlocking a lost lock fails"
    );
    next.unlock().await.unwrap();
}

/// A holder whose lease expires (no keep-alive: a crashed process) loses the lock to the
/// waiter.
pub async fn lock_released_when_lease_expires(store: Arc<dyn Store>) {
    let root = root();
    let lock = Lock::new(store.clone(), key(&root, "lock")).unwrap();
    let crashed = lease(&store, Duration::from_secs(1)).await;
    let holder = lock.lock(crashed).await.unwrap();
    let waiter_keeper = keeper(&store).await;
    let next = within("the waiter acquiring", lock.lock(waiter_keeper.id()))
        .await
        .unwrap();
    within("lost() after the expiry", holder.lost()).await;
    assert!(next.fencing_token() > holder.fencing_token());
    assert!(!next.is_lost());
    next.unlock().await.unwrap();
}

/// Successive holders get strictly increasing fencing tokens.
pub async fn lock_fencing_token_increases(store: Arc<dyn Store>) {
    let root = root();
    let lock = Lock::new(store.clone(), key(&root, "lock")).unwrap();
    let keepers = [keeper(&store).await, keeper(&store).await];
    let mut last = 0;
    for round in 0..4 {
        let guard = lock.lock(keepers[round % 2].id()).await.unwrap();
        assert!(
            guard.fencing_token() > last,
            "token {} after {last}",
            guard.fencing_token()
        );
        last = guard.fencing_token();
        guard.unlock().await.unwrap();
    }
}

/// A write fenced on the holder's token succeeds while it holds the lock and fails once the
/// lock has passed to another holder.
pub async fn lock_fencing_token_guards_txn(store: Arc<dyn Store>) {
    let root = root();
    let lock = Lock::new(store.clone(), key(&root, "lock")).unwrap();
    let data = key(&root, "data");
    let old_lease = lease(&store, Duration::from_secs(60)).await;
    let old = lock.lock(old_lease).await.unwrap();
    assert!(
        store
            .txn(fenced_put(&old, &data, "old"))
            .await
            .unwrap()
            .succeeded
    );
    store.lease_revoke(old_lease).await.unwrap();
    let new_keeper = keeper(&store).await;
    let new = lock.lock(new_keeper.id()).await.unwrap();
    assert!(
        !store
            .txn(fenced_put(&old, &data, "stale"))
            .await
            .unwrap()
            .succeeded
    );
    assert!(
        store
            .txn(fenced_put(&new, &data, "new"))
            .await
            .unwrap()
            .succeeded
    );
    assert_eq!(store.get(&data).await.unwrap().unwrap().value, b"new");
    new.unlock().await.unwrap();
}

/// Locking with a revoked lease is `LeaseNotFound`; locking twice with one lease is
/// `AlreadyExists`; neither leaves a key behind.
pub async fn lock_rejects_bad_leases(store: Arc<dyn Store>) {
    let root = root();
    let name = key(&root, "lock");
    let lock = Lock::new(store.clone(), &name).unwrap();
    let revoked = lease(&store, Duration::from_secs(30)).await;
    store.lease_revoke(revoked).await.unwrap();
    let err = lock.lock(revoked).await.unwrap_err();
    assert_eq!(err.kind(), keyplane_core::ErrorKind::LeaseNotFound, "{err}");
    let held = keeper(&store).await;
    let guard = lock.lock(held.id()).await.unwrap();
    let err = lock.try_lock(held.id()).await.unwrap_err();
    assert_eq!(err.kind(), keyplane_core::ErrorKind::AlreadyExists, "{err}");
    let keys = super::support::snapshot(&*store, &root).await;
    assert_eq!(
        super::support::names(&root, &keys).len(),
        1,
        "only the holder's key"
    );
    assert!(
        !guard.is_lost(),
        "a refused second lock leaves the first one held"
    );
    guard.unlock().await.unwrap();
    assert!(super::support::snapshot(&*store, &root).await.is_empty());
    assert_eq!(
        Lock::new(store.clone(), "").unwrap_err().kind(),
        keyplane_core::ErrorKind::InvalidKey
    );
}

/// Waiters are served in the order they queued: each watches only the contender just before
/// it, so an unlock wakes exactly the next one.
pub async fn lock_waiters_acquire_in_order(store: Arc<dyn Store>) {
    let root = root();
    let name = key(&root, "lock");
    let lock = Lock::new(store.clone(), &name).unwrap();
    let holder_keeper = keeper(&store).await;
    let holder = lock.lock(holder_keeper.id()).await.unwrap();
    let mut queued = store
        .watch(keyplane_core::WatchOptions::prefix(key(&root, "lock/")))
        .await
        .unwrap();
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut keepers = Vec::new();
    for who in 0..3 {
        let k = keeper(&store).await;
        let (lock, id, order, done) = (lock.clone(), k.id(), order.clone(), done_tx.clone());
        keepers.push(k);
        tokio::spawn(async move {
            let guard = lock.lock(id).await.unwrap();
            order.lock().unwrap().push(who);
            done.send(guard).unwrap();
        });
        // Wait until this waiter's key is in the queue before starting the next one.
        let batch = super::support::next_batch(&mut queued).await;
        assert!(matches!(
            batch.events[..],
            [keyplane_core::Event::Put { .. }]
        ));
    }
    holder.unlock().await.unwrap();
    for (expected, waiter) in keepers.iter().enumerate() {
        let guard = within("the next waiter acquiring", done_rx.recv())
            .await
            .unwrap();
        assert_eq!(order.lock().unwrap().last(), Some(&expected));
        assert_eq!(guard.lease(), waiter.id());
        assert!(done_rx.try_recv().is_err(), "two waiters hold the lock");
        guard.unlock().await.unwrap();
    }
}

/// Locks whose names share a prefix (`lock` and `lock/sub`) are independent.
pub async fn lock_names_sharing_a_prefix_are_independent(store: Arc<dyn Store>) {
    let root = root();
    let outer = Lock::new(store.clone(), key(&root, "lock")).unwrap();
    let inner = Lock::new(store.clone(), key(&root, "lock/sub")).unwrap();
    let (a, b) = (keeper(&store).await, keeper(&store).await);
    let inner_guard = inner.lock(a.id()).await.unwrap();
    let outer_guard = within("the outer lock", outer.lock(b.id())).await.unwrap();
    assert!(inner.try_lock(b.id()).await.unwrap().is_none());
    outer_guard.unlock().await.unwrap();
    inner_guard.unlock().await.unwrap();
}
