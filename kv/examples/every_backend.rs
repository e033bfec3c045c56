//! One check, every backend: code written against `Arc<dyn Store>` runs unchanged on memory,
//! redb, etcd and Redis. Memory and a redb store in a temporary directory always run; etcd
//! and Redis run when their URLs are given (and the `etcd` / `redis` features are on).
//!
//! ```sh
//! cargo run -p keyplane --example every_backend
//! KEYPLANE_ETCD_URL=etcd://127.0.0.1:2379 KEYPLANE_REDIS_URL=redis://127.0.0.1:6379/0 \
//!     cargo run -p keyplane --features etcd,redis --example every_backend
//! ```
//!
//! In a test suite, `keyplane_tests::on_every_backend!` does the same with servers it starts
//! itself on free loopback ports (see the README's "Test against every backend").

use keyplane::{Compare, PutOptions, Store, Txn, TxnOp};
use std::sync::Arc;

/// The check: a put, a compare-and-set that holds and one that fails, a prefix listing and
/// a delete, under a root of its own.
async fn publish_then_retire(store: Arc<dyn Store>) -> keyplane::Result<()> {
    let root = format!("example/{}/", std::process::id());
    let key = format!("{root}feature");
    let first = store
        .put(key.as_bytes(), b"off", PutOptions::default())
        .await?;
    let swap = |expected: i64, value: &'static str| {
        Txn::new()
            .when([Compare::mod_revision(
                key.clone(),
                keyplane::CompareOp::Equal,
                expected,
            )])
            .and_then([TxnOp::put(key.clone(), value)])
    };
    assert!(store.txn(swap(first.revision, "on")).await?.succeeded);
    // The same compare again: the key has moved on, nothing is written.
    assert!(!store.txn(swap(first.revision, "lost")).await?.succeeded);
    let entry = store.get(key.as_bytes()).await?.expect("the key");
    assert_eq!(entry.value, b"on");
    let listed = store
        .range(keyplane::RangeOptions::prefix(root.as_bytes()))
        .await?;
    assert_eq!(listed.entries.len(), 1);
    store.delete_prefix(root.as_bytes()).await?;
    assert!(store.get(key.as_bytes()).await?.is_none());
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut urls = vec![
        "mem://".to_string(),
        format!("redb://{}", dir.path().join("store.redb").display()),
    ];
    for var in ["KEYPLANE_ETCD_URL", "KEYPLANE_REDIS_URL"] {
        match std::env::var(var) {
            Ok(url) => urls.push(url),
            Err(_) => println!("{var} not set: skipped"),
        }
    }
    for url in urls {
        let store = keyplane::open(&url).await?;
        let backend = store.capabilities().backend;
        publish_then_retire(store).await?;
        println!("{backend}: ok ({})", keyplane::raw::redact_url(&url));
    }
    Ok(())
}
