//! The [`Driver`] impl of [`SledStore`] (a [`Store`](keyplane_contract::Store) through the
//! contract's front, which checks every request): every method is one call into an operation
//! file.

use crate::SledStore;
use crate::error::map_error;
use crate::{lease, range, txn, watch};
use keyplane_contract::driver::{Checked, Driver};
use keyplane_contract::raw::async_trait;
use keyplane_contract::{
    Capabilities, Entry, LeaseGrant, LeaseId, LeaseInfo, RangeOptions, RangeResult, Result,
    ServerStatus, Txn, TxnResponse, WatchOptions, WatchStream,
};
use std::time::Duration;

#[async_trait]
impl Driver for SledStore {
    fn capabilities(&self) -> &Capabilities {
        &self.inner.caps
    }

    // Reads answer only with what a crash cannot take back (`Core::settle`).
    async fn revision(&self) -> Result<i64> {
        let revision = self.inner.revision();
        self.inner.settle().await?;
        Ok(revision)
    }

    async fn range(&self, opts: Checked<RangeOptions>) -> Result<RangeResult> {
        let page = range::range(&self.inner, &opts)?;
        self.inner.settle().await?;
        Ok(page)
    }

    async fn get(&self, key: Checked<&[u8]>) -> Result<Option<Entry>> {
        let entry = range::get(&self.inner, key.into_inner())?;
        self.inner.settle().await?;
        Ok(entry)
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
        let info = lease::time_to_live(&self.inner, id)?;
        self.inner.settle().await?;
        Ok(info)
    }

    async fn lease_list(&self) -> Result<Vec<LeaseId>> {
        let ids = lease::list(&self.inner)?;
        self.inner.settle().await?;
        Ok(ids)
    }

    /// No server: no version and no members; the size is the database's on disk.
    async fn server_status(&self) -> Result<ServerStatus> {
        let mut status = ServerStatus::default();
        let size = self.inner.db.size_on_disk();
        status.db_size = Some(size.map_err(|e| map_error("server_status", e))?);
        Ok(status)
    }

    async fn watch(&self, opts: Checked<WatchOptions>) -> Result<WatchStream> {
        watch::watch(&self.inner, opts.into_inner())
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        watch::compact(&self.inner, revision).await
    }
}

#[cfg(test)]
mod tests {
    use crate::SledStore;
    use keyplane_contract::{Compare, CompareOp, PutOptions, Store, Txn, TxnOp};
    use std::sync::atomic::Ordering;

    /// Sections that commit nothing (the open, a transaction whose compare fails, a read)
    /// leave no writer counted as unflushed: a count below zero would wrap, and every read
    /// under flush-on-commit would then flush.
    #[tokio::test]
    async fn sections_without_commits_leave_nothing_counted() {
        let store = SledStore::temporary().await.unwrap();
        let unflushed = || store.inner.unflushed.load(Ordering::SeqCst);
        assert_eq!(unflushed(), 0, "after the open");
        store.put(b"k", b"1", PutOptions::default()).await.unwrap();
        assert_eq!(unflushed(), 0, "after a put");
        let resp = store
            .txn(
                Txn::new()
                    .when([Compare::value("k", CompareOp::Equal, "2")])
                    .and_then([TxnOp::put("k", "3")]),
            )
            .await
            .unwrap();
        assert!(!resp.succeeded);
        assert_eq!(unflushed(), 0, "after a transaction that wrote nothing");
        store.get(b"k").await.unwrap();
        assert_eq!(unflushed(), 0, "after a read");
    }
}
