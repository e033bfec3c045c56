//! The conformance suite and the model-based property test on a harness-started etcd.

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

#[test]
fn model_sequences_match_the_reference_model() {
    kv_tests::model::check(etcd_store, 64);
}
