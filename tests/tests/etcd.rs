//! The conformance suite on a harness-started etcd.

use kv_core::Store;
use kv_etcd::{EtcdConfig, EtcdStore};
use std::sync::Arc;

async fn etcd_store() -> Option<Arc<dyn Store>> {
    let server = kv_tests::harness::shared_etcd().await?;
    let store = EtcdStore::connect(EtcdConfig::new([server.endpoint()]))
        .await
        .expect("connect to the harness etcd");
    Some(Arc::new(store))
}

kv_tests::conformance_suite!(etcd_store);
