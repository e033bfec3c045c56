//! The whole conformance suite through [`Namespaced`](keyplane_core::layer::Namespaced): a memory
//! store and the harness Redis seen under a prefix, with a key of the same name written
//! outside the prefix by every case's store so that a leak would show.

use keyplane_core::layer::Namespaced;
use keyplane_core::{PutOptions, Store};
use std::sync::Arc;

/// A namespace of its own on `inner`, after writing a decoy just outside it.
async fn namespaced(inner: Arc<dyn Store>) -> Arc<dyn Store> {
    let prefix = keyplane_tests::backends::prefix_with_decoy(inner.as_ref(), "ns", ':').await;
    Arc::new(Namespaced::new(inner, prefix).unwrap())
}

/// A memory store under a prefix.
async fn namespaced_memory() -> Option<Arc<dyn Store>> {
    let inner = keyplane_tests::backends::memory().await?;
    Some(namespaced(inner).await)
}

keyplane_tests::conformance_suite!(namespaced_memory);

/// The harness Redis under a prefix.
mod redis {
    async fn namespaced_redis() -> Option<std::sync::Arc<dyn keyplane_core::Store>> {
        let inner = keyplane_tests::backends::redis().await?;
        Some(super::namespaced(inner).await)
    }

    keyplane_tests::conformance_suite!(namespaced_redis);
}

#[tokio::test]
async fn nothing_outside_the_prefix_is_seen_and_bad_input_is_refused() {
    let inner: Arc<dyn Store> = Arc::new(keyplane_mem::MemStore::new());
    inner
        .put(b"a:1", b"neighbour", PutOptions::default())
        .await
        .unwrap();
    inner
        .put(b"b", b"before the prefix", PutOptions::default())
        .await
        .unwrap();
    let ns = Namespaced::new(inner.clone(), "b:").unwrap();
    ns.put(b"1", b"mine", PutOptions::default()).await.unwrap();
    let all = ns
        .range(keyplane_core::RangeOptions::prefix(""))
        .await
        .unwrap();
    let keys: Vec<&[u8]> = all.entries.iter().map(|e| e.key.as_slice()).collect();
    assert_eq!(keys, [b"1".as_slice()]);
    let interval = ns
        .range(keyplane_core::RangeOptions::new(
            keyplane_core::KeyRange::Interval {
                start: Vec::new(),
                end: None,
            },
        ))
        .await
        .unwrap();
    assert_eq!(interval.entries.len(), 1);
    for bad in [&b""[..], b"x\0y"] {
        assert_eq!(
            ns.get(bad).await.unwrap_err().kind(),
            keyplane_core::ErrorKind::InvalidKey
        );
    }
    assert_eq!(
        ns.delete_prefix(b"").await.unwrap_err().kind(),
        keyplane_core::ErrorKind::InvalidKey
    );
    assert!(Namespaced::new(inner.clone(), "").is_err());
    assert_eq!(inner.get(b"b:1").await.unwrap().unwrap().value, b"mine");
    assert_eq!(
        inner.get(b"a:1").await.unwrap().unwrap().value,
        b"neighbour"
    );
}
