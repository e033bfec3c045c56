//! Layers over every backend: a watch resumed through dropped connections delivers every
//! change once, in order; refused writes are retried and applied once; a lost answer is not
//! repeated; injected compare failures run the failure branch.

use futures::StreamExt;
use keyplane_core::layer::{Call, Fault, FaultLayer, RetryLayer, StoreExt};
use keyplane_core::retry::Backoff;
use keyplane_core::{
    Compare, ErrorKind, PutOptions, RangeOptions, Store, Txn, TxnOp, WatchOptions,
};
use keyplane_tests::harness::key_root;
use std::sync::Arc;
use std::time::Duration;

fn fast() -> Backoff {
    Backoff::default()
        .initial(Duration::from_millis(1))
        .max_delay(Duration::from_millis(20))
        .max_attempts(100)
}

/// A watch whose connection drops at random (a quarter of the batches) under the retry
/// layer: the consumer sees each of 30 changes once, in order, from a past revision and from
/// "now".
async fn watches_resume_through_dropped_connections(store: Arc<dyn Store>) {
    let root = key_root("resume");
    let pattern = format!("{root}*");
    let store = store
        .layer(FaultLayer::new(9).with(Fault::watch_disconnect().probability(0.25).keys(&pattern)))
        .layer(RetryLayer::new(fast()));
    let from_now = store.watch(WatchOptions::prefix(&root)).await.unwrap();
    let mut first = None;
    for i in 0..30 {
        let key = format!("{root}{i:02}");
        let rev = store
            .put(key.as_bytes(), b"v", PutOptions::default())
            .await
            .unwrap()
            .revision;
        first.get_or_insert(rev);
    }
    let replay = store
        .watch(WatchOptions::prefix(&root).from_revision(first.unwrap()))
        .await
        .unwrap();
    let expected: Vec<String> = (0..30).map(|i| format!("{root}{i:02}")).collect();
    for watch in [from_now, replay] {
        let keys: Vec<String> = tokio::time::timeout(
            Duration::from_secs(60),
            watch
                .take(30)
                .map(|b| {
                    let b = b.expect("a resumed watch never fails");
                    assert_eq!(b.events.len(), 1, "{b:?}");
                    String::from_utf8(b.events[0].key().to_vec()).unwrap()
                })
                .collect::<Vec<_>>(),
        )
        .await
        .expect("every change arrives");
        assert_eq!(keys, expected);
    }
    assert!(store.inner().injected() > 3, "{}", store.inner().injected());
}

/// Writes refused before the backend are retried and land once; a write whose answer is
/// lost is not repeated; an injected compare failure runs the failure branch.
async fn retried_writes_apply_once(store: Arc<dyn Store>) {
    let root = key_root("once");
    let pattern = format!("{root}*");
    let store = store
        .layer(
            FaultLayer::new(4)
                .with(Fault::unavailable().probability(0.4).keys(&pattern))
                .with(Fault::timeout().on([Call::Delete]).keys(&pattern))
                .with(Fault::compare_failure().keys(&pattern)),
        )
        .layer(RetryLayer::new(fast()));
    for i in 0..20 {
        let key = format!("{root}{i:02}");
        store
            .put(key.as_bytes(), b"v", PutOptions::default())
            .await
            .unwrap();
    }
    let all = store
        .inner()
        .inner()
        .range(RangeOptions::prefix(&root))
        .await
        .unwrap();
    assert_eq!(all.entries.len(), 20);
    assert!(all.entries.iter().all(|e| e.version == 1), "{all:?}");
    // The delete's answer is lost: reported as a timeout, applied, not repeated.
    let key = format!("{root}00");
    // (A refusal before the backend is retried first; the lost answer ends the call.)
    let err = store.delete(key.as_bytes()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(!err.is_unapplied());
    assert!(
        store
            .inner()
            .inner()
            .get(key.as_bytes())
            .await
            .unwrap()
            .is_none()
    );
    // A compare that holds is made to fail: the failure branch runs, nothing is written.
    let key = format!("{root}01");
    let resp = store
        .txn(
            Txn::new()
                .when([Compare::exists(&key)])
                .and_then([TxnOp::delete(&key)])
                .or_else([TxnOp::get(&key)]),
        )
        .await
        .unwrap();
    assert!(!resp.succeeded);
    assert!(
        store
            .inner()
            .inner()
            .get(key.as_bytes())
            .await
            .unwrap()
            .is_some()
    );
}

keyplane_tests::on_every_backend!(
    watches_resume_through_dropped_connections,
    retried_writes_apply_once
);
