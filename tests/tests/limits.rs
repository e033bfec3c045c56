//! Limits under abuse: a watch whose reader stops reading does not grow memory without
//! bound (a typed `Lagged` error after the store's buffer, or the log read on demand);
//! thousands of concurrent watches on one store; a 10 MB value accepted or refused as the
//! backend's `Capabilities` say.

use futures::StreamExt;
use keyplane_core::layer::{RetryLayer, StoreExt};
use keyplane_core::retry::Backoff;
use keyplane_core::{ErrorKind, PutOptions, Store, WatchOptions};
use keyplane_mem::{MemConfig, MemStore};
use keyplane_tests::harness::key_root;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test]
async fn a_watch_that_is_not_read_ends_lagged_after_its_buffer() {
    let store = MemStore::open(MemConfig::default().watch_buffer(100))
        .await
        .unwrap();
    let mut stalled = store.watch(WatchOptions::prefix("w/")).await.unwrap();
    let first = store.revision().await.unwrap() + 1;
    for i in 0..150 {
        store
            .put(format!("w/{i:03}").as_bytes(), b"v", PutOptions::default())
            .await
            .unwrap();
    }
    // The 100 queued batches, then the typed error, then the end.
    for i in 0..100 {
        let batch = stalled.next().await.unwrap().unwrap();
        assert_eq!(batch.revision, first + i);
    }
    let err = stalled.next().await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Lagged, "{err}");
    assert!(err.is_retryable());
    assert!(
        err.to_string()
            .contains(&format!("next_revision: {}", first + 100)),
        "{err}"
    );
    assert!(stalled.next().await.is_none());
    // Resumed from the last batch read, nothing is lost: the history still holds it.
    let resumed = store
        .watch(WatchOptions::prefix("w/").from_revision(first + 100))
        .await
        .unwrap();
    let rest: Vec<_> = resumed.take(50).collect().await;
    assert_eq!(rest.len(), 50);
    assert_eq!(rest[49].as_ref().unwrap().revision, first + 149);
}

#[tokio::test]
async fn the_retry_layer_resumes_a_lagged_watch_without_loss() {
    let store = MemStore::open(MemConfig::default().watch_buffer(10))
        .await
        .unwrap()
        .layer(RetryLayer::new(
            Backoff::default().initial(Duration::from_millis(1)),
        ));
    let watch = store.watch(WatchOptions::prefix("w/")).await.unwrap();
    for i in 0..100 {
        store
            .put(format!("w/{i:03}").as_bytes(), b"v", PutOptions::default())
            .await
            .unwrap();
    }
    let keys: Vec<Vec<u8>> = watch
        .take(100)
        .map(|b| b.unwrap().events[0].key().to_vec())
        .collect()
        .await;
    let expected: Vec<Vec<u8>> = (0..100).map(|i| format!("w/{i:03}").into_bytes()).collect();
    assert_eq!(keys, expected);
}

/// Thousands of watches on one store each see a write.
async fn many_concurrent_watches(store: Arc<dyn Store>, count: usize) {
    let root = key_root("many");
    let mut watches = Vec::with_capacity(count);
    for _ in 0..count {
        watches.push(store.watch(WatchOptions::prefix(&root)).await.unwrap());
    }
    let key = format!("{root}k");
    let revision = store
        .put(key.as_bytes(), b"v", PutOptions::default())
        .await
        .unwrap()
        .revision;
    let seen = futures::future::join_all(watches.iter_mut().map(|w| async {
        let batch = tokio::time::timeout(Duration::from_secs(60), w.next())
            .await
            .expect("every watch sees the write")
            .unwrap()
            .unwrap();
        batch.revision
    }))
    .await;
    assert_eq!(seen.len(), count);
    assert!(seen.iter().all(|r| *r == revision));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_watches_on_memory() {
    many_concurrent_watches(Arc::new(MemStore::new()), 10_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_watches_on_redb() {
    let store = keyplane_tests::backends::redb().await.unwrap();
    many_concurrent_watches(store, 10_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_watches_on_sled() {
    let store = keyplane_tests::backends::sled().await.unwrap();
    many_concurrent_watches(store, 10_000).await;
}

/// A 10 MB value: accepted and read back whole where `max_value_bytes` allows it, refused
/// with `InvalidValue` and nothing written where it does not.
async fn ten_megabyte_value(store: Arc<dyn Store>) {
    let key = format!("{}big", key_root("big"));
    let value: Vec<u8> = (0..10 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    let answer = store
        .put(key.as_bytes(), &value, PutOptions::default())
        .await;
    if store.capabilities().max_value_bytes >= value.len() {
        answer.unwrap();
        assert_eq!(
            store.get(key.as_bytes()).await.unwrap().unwrap().value,
            value
        );
    } else {
        assert_eq!(answer.unwrap_err().kind(), ErrorKind::InvalidValue);
        assert!(store.get(key.as_bytes()).await.unwrap().is_none());
    }
}

keyplane_tests::on_every_backend!(ten_megabyte_value);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_watches_on_redis() {
    if let Some(store) = keyplane_tests::backends::redis().await {
        many_concurrent_watches(store, 10_000).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_watches_on_etcd() {
    if let Some(store) = keyplane_tests::backends::etcd().await {
        many_concurrent_watches(store, 10_000).await;
    }
}
