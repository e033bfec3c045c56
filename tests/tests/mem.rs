//! The conformance suite and the model-based property test on `MemStore`.

use kv_core::Store;
use std::sync::Arc;

async fn mem_store() -> Option<Arc<dyn Store>> {
    Some(Arc::new(kv_mem::MemStore::new()))
}

kv_tests::conformance_suite!(mem_store);

#[test]
fn model_sequences_match_the_reference_model() {
    kv_tests::model::check(mem_store, 256);
}
