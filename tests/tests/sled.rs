//! The conformance suite and the model-based property test on `SledStore`, each store in its
//! own temporary directory.

use kv_core::{
    Capabilities, CollectionOp, CollectionResult, Entry, LeaseGrant, LeaseId, LeaseInfo,
    PutOptions, PutResult, RangeOptions, RangeResult, Result, Store, Txn, TxnResponse,
    WatchOptions, WatchStream, async_trait,
};
use kv_mem::{SledConfig, SledStore};
use std::sync::Arc;
use std::time::Duration;
use tempfile::TempDir;

/// A `SledStore` that owns its temporary directory: the store closes first, then the
/// directory is removed.
struct TempSled {
    store: SledStore,
    _dir: TempDir,
}

async fn sled_store() -> Option<Arc<dyn Store>> {
    let dir = TempDir::new().expect("create a temporary directory");
    let store = SledStore::open(SledConfig::new(dir.path())).expect("open the sled store");
    Some(Arc::new(TempSled { store, _dir: dir }))
}

kv_tests::conformance_suite!(sled_store);

#[async_trait]
impl Store for TempSled {
    fn capabilities(&self) -> &Capabilities {
        self.store.capabilities()
    }
    async fn revision(&self) -> Result<i64> {
        self.store.revision().await
    }
    async fn range(&self, opts: RangeOptions) -> Result<RangeResult> {
        self.store.range(opts).await
    }
    async fn txn(&self, txn: Txn) -> Result<TxnResponse> {
        self.store.txn(txn).await
    }
    async fn lease_grant(&self, ttl: Duration) -> Result<LeaseGrant> {
        self.store.lease_grant(ttl).await
    }
    async fn lease_keep_alive(&self, id: LeaseId) -> Result<Duration> {
        self.store.lease_keep_alive(id).await
    }
    async fn lease_revoke(&self, id: LeaseId) -> Result<()> {
        self.store.lease_revoke(id).await
    }
    async fn lease_time_to_live(&self, id: LeaseId) -> Result<LeaseInfo> {
        self.store.lease_time_to_live(id).await
    }
    async fn watch(&self, opts: WatchOptions) -> Result<WatchStream> {
        self.store.watch(opts).await
    }
    async fn compact(&self, revision: i64) -> Result<()> {
        self.store.compact(revision).await
    }
    async fn get(&self, key: &[u8]) -> Result<Option<Entry>> {
        self.store.get(key).await
    }
    async fn put(&self, key: &[u8], value: &[u8], opts: PutOptions) -> Result<PutResult> {
        self.store.put(key, value, opts).await
    }
    async fn delete(&self, key: &[u8]) -> Result<Option<Entry>> {
        self.store.delete(key).await
    }
    async fn delete_prefix(&self, prefix: &[u8]) -> Result<u64> {
        self.store.delete_prefix(prefix).await
    }
    async fn collection(&self, op: CollectionOp) -> Result<CollectionResult> {
        self.store.collection(op).await
    }
}

#[test]
fn model_sequences_match_the_reference_model() {
    kv_tests::model::check(sled_store, 256);
}
