//! A prefix delete on Redis never blocks the server near its script time limit: one larger
//! than `RedisConfig::max_prefix_delete_keys` is refused with `TxnTooLarge` before anything
//! is written, and `delete_prefix_in_batches` removes it in atomic batches instead.

use keyplane_core::recipes::delete_prefix_in_batches;
use keyplane_core::{CollectionOp, ErrorKind, PutOptions, RangeOptions, Store, Txn, TxnOp};
use keyplane_redis::{RedisConfig, RedisStore};
use keyplane_tests::harness::{
    RedisServer, key_root, redis_connection, shared_redis, write_layout_before_buckets,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

async fn store_with_limit(limit: u64) -> Option<RedisStore> {
    let server = shared_redis().await?;
    let config = RedisConfig::new(server.url()).max_prefix_delete_keys(limit);
    Some(RedisStore::open(config).await.unwrap())
}

async fn put_many(store: &dyn Store, root: &str, n: usize) {
    let keys: Vec<String> = (0..n).map(|i| format!("{root}k{i:05}")).collect();
    for chunk in keys.chunks(100) {
        let ops = chunk.iter().map(|k| TxnOp::put(k.as_bytes(), b"v"));
        store.txn(Txn::new().and_then(ops)).await.unwrap();
    }
}

async fn count(store: &dyn Store, root: &str) -> u64 {
    store
        .range(RangeOptions::prefix(root).count_only().with_collections())
        .await
        .unwrap()
        .count
}

#[tokio::test]
async fn a_prefix_delete_over_the_limit_is_refused_and_writes_nothing() {
    let Some(store) = store_with_limit(100).await else {
        return;
    };
    let root = key_root("redis-limit");
    put_many(&store, &root, 99).await;
    // A collection counts as a key: 99 strings and two sets are 101 keys.
    for set in ["s1", "s2"] {
        store
            .collection(CollectionOp::SetAdd {
                key: format!("{root}{set}").into_bytes(),
                member: b"m".to_vec(),
            })
            .await
            .unwrap();
    }
    let err = store.delete_prefix(root.as_bytes()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TxnTooLarge, "{err}");
    let message = err.to_string();
    assert!(message.contains("101 keys"), "{message}");
    assert!(message.contains("max_prefix_delete_keys"), "{message}");
    assert!(message.contains("delete_prefix_in_batches"), "{message}");
    assert!(!err.is_retryable());
    assert_eq!(count(&store, &root).await, 101);

    // The same limit holds inside a transaction, whatever else it does.
    let beside = format!("{}-beside", root.trim_end_matches('/'));
    let txn = Txn::new().and_then([
        TxnOp::put(beside.as_bytes(), b"v"),
        TxnOp::delete_prefix(root.as_bytes()),
    ]);
    let err = store.txn(txn).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TxnTooLarge, "{err}");
    assert!(store.get(beside.as_bytes()).await.unwrap().is_none());
    assert_eq!(count(&store, &root).await, 101);

    // At the limit, the delete is one atomic step.
    store.delete(format!("{root}s2").as_bytes()).await.unwrap();
    let done = store.delete_prefix(root.as_bytes()).await.unwrap();
    assert_eq!(done.deleted, 100);
    assert_eq!(count(&store, &root).await, 0);
}

#[tokio::test]
async fn delete_prefix_in_batches_removes_a_prefix_over_the_limit() {
    let Some(store) = store_with_limit(100).await else {
        return;
    };
    let root = key_root("redis-batches");
    put_many(&store, &root, 450).await;
    store
        .collection(CollectionOp::ListPush {
            key: format!("{root}list").into_bytes(),
            value: b"i".to_vec(),
        })
        .await
        .unwrap();
    let outside = format!("{}-outside", root.trim_end_matches('/'));
    store
        .put(outside.as_bytes(), b"kept", PutOptions::default())
        .await
        .unwrap();
    assert_eq!(
        store
            .delete_prefix(root.as_bytes())
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::TxnTooLarge
    );
    let done = delete_prefix_in_batches(&store, root.as_bytes(), 1_000)
        .await
        .unwrap();
    assert_eq!(done.deleted, 451);
    assert!(done.revision <= store.revision().await.unwrap());
    assert_eq!(count(&store, &root).await, 0);
    assert_eq!(
        store.get(outside.as_bytes()).await.unwrap().unwrap().value,
        b"kept"
    );
    // Nothing left: nothing deleted.
    let again = delete_prefix_in_batches(&store, root.as_bytes(), 10)
        .await
        .unwrap();
    assert_eq!(again.deleted, 0);
    assert!(again.revision >= done.revision);
}

/// A million keys: the delete is refused before it starts, and no other client of the
/// server is ever answered `BUSY` (what Redis replies once a script runs past its time
/// limit) meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_million_key_prefix_delete_never_blocks_redis() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let root = "tenants/1/";
    // The layout before buckets, as a restore of an older dump: the store converts the index
    // when it opens.
    let mut con = redis_connection(&server.url()).await;
    write_layout_before_buckets(
        &mut con,
        (0..1_000_000).map(|i| format!("{root}{i:07}").into_bytes()),
        b"v",
    )
    .await;
    let store = Arc::new(RedisStore::from_url(&server.url()).await.unwrap());
    assert_eq!(
        store
            .range(RangeOptions::prefix(root).count_only())
            .await
            .unwrap()
            .count,
        1_000_000
    );

    let done = Arc::new(AtomicBool::new(false));
    let pinger = {
        let done = done.clone();
        let mut con = redis_connection(&server.url()).await;
        tokio::spawn(async move {
            let mut pings = 0u64;
            loop {
                // A BUSY reply (or any other error) ends the loop with it.
                let _: String = redis::cmd("PING").query_async(&mut con).await?;
                pings += 1;
                if done.load(Ordering::SeqCst) {
                    return Ok::<u64, redis::RedisError>(pings);
                }
            }
        })
    };
    let err = store.delete_prefix(root.as_bytes()).await.unwrap_err();
    done.store(true, Ordering::SeqCst);
    assert_eq!(err.kind(), ErrorKind::TxnTooLarge, "{err}");
    assert!(
        err.to_string()
            .contains("more than the 50000 one transaction may"),
        "{err}"
    );
    let pings = pinger.await.unwrap().expect("every PING is answered PONG");
    assert!(pings > 0);
    assert_eq!(
        store
            .range(RangeOptions::prefix(root).count_only())
            .await
            .unwrap()
            .count,
        1_000_000
    );
}
