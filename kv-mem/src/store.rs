//! The [`Driver`] impl of [`MemStore`] (a [`Store`](keyplane_contract::Store) through the
//! contract's front, which checks every request): every method is one call into an operation
//! file.

use crate::MemStore;
use crate::{lease, range, txn, watch};
use keyplane_contract::driver::{Checked, Driver};
use keyplane_contract::raw::async_trait;
use keyplane_contract::{
    Capabilities, Entry, LeaseGrant, LeaseId, LeaseInfo, RangeOptions, RangeResult, Result,
    ServerStatus, Txn, TxnResponse, WatchOptions, WatchStream,
};
use std::time::Duration;

#[async_trait]
impl Driver for MemStore {
    fn capabilities(&self) -> &Capabilities {
        &self.shared.caps
    }

    async fn revision(&self) -> Result<i64> {
        range::revision(&self.shared)
    }

    async fn range(&self, opts: Checked<RangeOptions>) -> Result<RangeResult> {
        range::range(&self.shared, &opts)
    }

    async fn get(&self, key: Checked<&[u8]>) -> Result<Option<Entry>> {
        range::get(&self.shared, key)
    }

    async fn txn(&self, txn: Checked<Txn>) -> Result<TxnResponse> {
        txn::txn(&self.shared, &txn)
    }

    async fn lease_grant(&self, ttl: Duration) -> Result<LeaseGrant> {
        lease::grant(&self.shared, ttl)
    }

    async fn lease_keep_alive(&self, id: LeaseId) -> Result<Duration> {
        lease::keep_alive(&self.shared, id)
    }

    async fn lease_revoke(&self, id: LeaseId) -> Result<()> {
        lease::revoke(&self.shared, id)
    }

    async fn lease_time_to_live(&self, id: LeaseId) -> Result<LeaseInfo> {
        lease::time_to_live(&self.shared, id)
    }

    async fn lease_list(&self) -> Result<Vec<LeaseId>> {
        lease::list(&self.shared)
    }

    /// No server: no version, no members, no size to report.
    async fn server_status(&self) -> Result<ServerStatus> {
        Ok(ServerStatus::default())
    }

    async fn watch(&self, opts: Checked<WatchOptions>) -> Result<WatchStream> {
        watch::watch(&self.shared, opts)
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        watch::compact(&self.shared, revision)
    }
}
