//! The [`Driver`] impl of [`RedbStore`] (a [`Store`](keyplane_contract::Store) through the
//! contract's front, which checks every request): every method is one call into an operation
//! file.

use crate::RedbStore;
use crate::{lease, range, txn, watch};
use keyplane_contract::driver::{Checked, Driver};
use keyplane_contract::raw::async_trait;
use keyplane_contract::{
    Capabilities, Entry, LeaseGrant, LeaseId, LeaseInfo, RangeOptions, RangeResult, Result,
    ServerStatus, Txn, TxnResponse, WatchOptions, WatchStream,
};
use std::time::Duration;

#[async_trait]
impl Driver for RedbStore {
    fn capabilities(&self) -> &Capabilities {
        &self.inner.shared.caps
    }

    async fn revision(&self) -> Result<i64> {
        Ok(self.inner.shared.revision())
    }

    async fn range(&self, opts: Checked<RangeOptions>) -> Result<RangeResult> {
        range::range(&self.inner.shared, &opts)
    }

    async fn get(&self, key: Checked<&[u8]>) -> Result<Option<Entry>> {
        range::get(&self.inner.shared, key.into_inner())
    }

    async fn txn(&self, txn: Checked<Txn>) -> Result<TxnResponse> {
        txn::txn(&self.inner, txn.into_inner()).await
    }

    async fn lease_grant(&self, ttl: Duration) -> Result<LeaseGrant> {
        lease::grant(&self.inner, ttl).await
    }

    async fn lease_keep_alive(&self, id: LeaseId) -> Result<Duration> {
        lease::keep_alive(&self.inner, id).await
    }

    async fn lease_revoke(&self, id: LeaseId) -> Result<()> {
        lease::revoke(&self.inner, id).await
    }

    async fn lease_time_to_live(&self, id: LeaseId) -> Result<LeaseInfo> {
        lease::time_to_live(&self.inner.shared, id)
    }

    async fn lease_list(&self) -> Result<Vec<LeaseId>> {
        lease::list(&self.inner.shared)
    }

    /// No server: no version and no members; the size is the database file's.
    async fn server_status(&self) -> Result<ServerStatus> {
        let mut status = ServerStatus::default();
        let size = std::fs::metadata(&self.inner.shared.config.path).map_err(|e| {
            keyplane_contract::Error::new(
                keyplane_contract::ErrorKind::Backend,
                "redb: reading the database file's size failed",
            )
            .with_source(e)
        })?;
        status.db_size = Some(size.len());
        Ok(status)
    }

    async fn watch(&self, opts: Checked<WatchOptions>) -> Result<WatchStream> {
        watch::watch(&self.inner.shared, opts.into_inner())
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        watch::compact(&self.inner, revision).await
    }
}

#[cfg(test)]
mod tests {
    use crate::RedbStore;
    use crate::core::tables::LOG;
    use keyplane_contract::{PutOptions, Store};
    use redb::ReadableTable;

    /// The revisions of the log table, in order.
    fn logged(store: &RedbStore) -> Vec<i64> {
        let txn = store.inner.shared.read("test").unwrap();
        let log = txn.open_table(LOG).unwrap();
        log.iter()
            .unwrap()
            .map(|kv| kv.unwrap().0.value())
            .collect()
    }

    /// A compaction removes the log records below it with its own transaction; retention
    /// removes them once a batch has accumulated.
    #[tokio::test]
    async fn compaction_and_retention_prune_the_log_table() {
        let store = RedbStore::temporary().await.unwrap();
        for i in 0..20 {
            store
                .put(b"k", i.to_string().as_bytes(), PutOptions::default())
                .await
                .unwrap();
        }
        assert_eq!(logged(&store), (1..=20).collect::<Vec<_>>());
        store.compact(18).await.unwrap();
        assert_eq!(logged(&store), [18, 19, 20]);
        store.check_consistency().unwrap();

        let dir = tempfile::tempdir().unwrap();
        let config = crate::RedbConfig::new(dir.path().join("s.redb")).history_retention(10);
        let store = RedbStore::open(config).await.unwrap();
        for i in 0..300 {
            store
                .put(b"k", i.to_string().as_bytes(), PutOptions::default())
                .await
                .unwrap();
        }
        let log = logged(&store);
        // Retained from 291; the records below went when 256 had accumulated (at 266).
        assert_eq!(log.first(), Some(&257));
        assert_eq!(log.last(), Some(&300));
        store.check_consistency().unwrap();
    }
}
