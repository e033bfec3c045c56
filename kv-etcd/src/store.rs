//! The [`Driver`] impl of [`EtcdStore`] (a [`Store`](keyplane_contract::Store) through the
//! contract's front, which checks every request): every method is one call into an operation
//! file.

use crate::EtcdStore;
use keyplane_contract::driver::{Checked, Driver, PutRequest};
use keyplane_contract::{
    Capabilities, Entry, LeaseGrant, LeaseId, LeaseInfo, PutResult, RangeOptions, RangeResult,
    Result, ServerStatus, Txn, TxnResponse, WatchOptions, WatchStream,
};
use std::time::Duration;

#[keyplane_contract::raw::async_trait]
impl Driver for EtcdStore {
    fn capabilities(&self) -> &Capabilities {
        &self.core.caps
    }

    async fn revision(&self) -> Result<i64> {
        crate::range::revision(&self.core).await
    }

    async fn range(&self, opts: Checked<RangeOptions>) -> Result<RangeResult> {
        crate::range::range(&self.core, opts.into_inner()).await
    }

    async fn get(&self, key: Checked<&[u8]>) -> Result<Option<Entry>> {
        crate::range::get(&self.core, key.into_inner()).await
    }

    async fn put(&self, put: Checked<PutRequest<'_>>) -> Result<PutResult> {
        let PutRequest { key, value, opts } = put.into_inner();
        crate::txn::put(&self.core, key, value, opts).await
    }

    async fn txn(&self, txn: Checked<Txn>) -> Result<TxnResponse> {
        crate::txn::txn(&self.core, txn.into_inner()).await
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

    async fn watch(&self, opts: Checked<WatchOptions>) -> Result<WatchStream> {
        crate::watch::watch(&self.core, opts.into_inner()).await
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        crate::watch::compact(&self.core, revision).await
    }
}
