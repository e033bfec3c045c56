//! The [`Store`] impl of [`EtcdStore`]: every method is one call into an operation file.

use crate::EtcdStore;
use keyplane_contract::{
    Capabilities, Entry, LeaseGrant, LeaseId, LeaseInfo, PutOptions, PutResult, RangeOptions,
    RangeResult, Result, ServerStatus, Store, Txn, TxnResponse, WatchOptions, WatchStream,
};
use std::time::Duration;

#[keyplane_contract::raw::async_trait]
impl Store for EtcdStore {
    fn capabilities(&self) -> &Capabilities {
        &self.core.caps
    }

    async fn revision(&self) -> Result<i64> {
        crate::range::revision(&self.core).await
    }

    async fn range(&self, opts: RangeOptions) -> Result<RangeResult> {
        crate::range::range(&self.core, opts).await
    }

    async fn get(&self, key: &[u8]) -> Result<Option<Entry>> {
        crate::range::get(&self.core, key).await
    }

    async fn put(&self, key: &[u8], value: &[u8], opts: PutOptions) -> Result<PutResult> {
        crate::txn::put(&self.core, key, value, opts).await
    }

    async fn txn(&self, txn: Txn) -> Result<TxnResponse> {
        crate::txn::txn(&self.core, txn).await
    }

    async fn lease_grant(&self, ttl: Duration) -> Result<LeaseGrant> {
        crate::lease::grant(&self.core, ttl).await
    }

    async fn lease_keep_alive(&self, id: LeaseId) -> Result<Duration> {
        crate::lease::keep_alive(&self.core, id).await
    }

    async fn lease_revoke(&self, id: LeaseId) -> Result<()> {
        crate::lease::revoke(&self.core, id).await
    }

    async fn lease_time_to_live(&self, id: LeaseId) -> Result<LeaseInfo> {
        crate::lease::time_to_live(&self.core, id).await
    }

    async fn lease_list(&self) -> Result<Vec<LeaseId>> {
        crate::lease::list(&self.core).await
    }

    async fn server_status(&self) -> Result<ServerStatus> {
        crate::status::server_status(&self.core).await
    }

    async fn watch(&self, opts: WatchOptions) -> Result<WatchStream> {
        crate::watch::watch(&self.core, opts).await
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        crate::watch::compact(&self.core, revision).await
    }
}
