//! The whole conformance suite through a stack of every layer (faults off) on each backend:
//! namespace, faults, metrics, tracing, timeout and retry over `MemStore`, `SledStore`, the
//! harness etcd and the harness Redis. A key of the namespace's name is written just outside
//! the prefix first, so that a leak would show.

use keyplane_core::Store;
use keyplane_core::layer::{
    FaultLayer, MetricsLayer, NamespaceLayer, RetryLayer, StoreExt, TimeoutLayer, TracingLayer,
};
use std::sync::Arc;
use std::time::Duration;

/// `inner` under every layer, in a namespace of its own.
async fn layered(inner: Arc<dyn Store>) -> Arc<dyn Store> {
    let prefix = keyplane_tests::backends::prefix_with_decoy(inner.as_ref(), "ly", '/').await;
    Arc::new(
        inner
            .layer(NamespaceLayer::new(prefix).unwrap())
            .layer(FaultLayer::new(0))
            .layer(MetricsLayer)
            .layer(TracingLayer)
            .layer(TimeoutLayer::new(Duration::from_secs(60)))
            .layer(RetryLayer::default()),
    )
}

macro_rules! layered_suite {
    ($($backend:ident),+) => {
        $(
            mod $backend {
                async fn layered() -> Option<std::sync::Arc<dyn keyplane_core::Store>> {
                    let inner = keyplane_tests::backends::$backend().await?;
                    Some(super::layered(inner).await)
                }

                keyplane_tests::conformance_suite!(layered);
            }
        )+
    };
}

layered_suite!(memory, sled, etcd, redis);
