//! The [`Driver`] impl of [`RedisStore`] (a [`Store`](keyplane_contract::Store) through the
//! contract's front, which checks every request, with the store's own rule for keys,
//! [`Driver::check_key`]): every method routes to its core (on a cluster, a group's) and is
//! one call into an operation file.

use crate::RedisStore;
use crate::core::route::{Router, on_cluster};
use keyplane_contract::driver::{Checked, Driver, PutRequest};
use keyplane_contract::{
    Capabilities, DeleteResult, Entry, LeaseGrant, LeaseId, LeaseInfo, PutResult, RangeOptions,
    RangeResult, Result, ServerStatus, Txn, TxnResponse, WatchOptions, WatchStream,
};
use std::sync::Arc;
use std::time::Duration;

#[keyplane_contract::raw::async_trait]
impl Driver for RedisStore {
    fn capabilities(&self) -> &Capabilities {
        &self.router.core.caps
    }

    /// Keys under the internal prefix are the store's own.
    fn check_key(&self, key: &[u8]) -> Result<()> {
        self.router.core.check_key(key)
    }

    async fn revision(&self) -> Result<i64> {
        crate::range::revision(&*self.router.core_of(None, "revision")?).await
    }

    async fn range(&self, opts: Checked<RangeOptions>) -> Result<RangeResult> {
        let opts = opts.into_inner();
        let Some(groups) = &self.router.groups else {
            return crate::range::range(&self.router.core, opts).await;
        };
        match Router::group_of_range(&opts.range)?.map(<[u8]>::to_vec) {
            Some(tag) => {
                let mut page = crate::range::range(&groups.core(&tag), opts).await?;
                page.groups = Some([(tag, page.revision)].into());
                Ok(page)
            }
            None => crate::range::span::range(groups, opts).await,
        }
    }

    async fn get(&self, key: Checked<&[u8]>) -> Result<Option<Entry>> {
        let key = key.into_inner();
        crate::range::get(&*self.router.core_of_key(key)?, key).await
    }

    async fn put(&self, put: Checked<PutRequest<'_>>) -> Result<PutResult> {
        let PutRequest { key, value, opts } = put.into_inner();
        if opts.lease.is_some() && self.router.groups.is_some() {
            return Err(on_cluster("put with a lease"));
        }
        crate::txn::put(&*self.router.core_of_key(key)?, key, value, opts).await
    }

    async fn delete(&self, key: Checked<&[u8]>) -> Result<DeleteResult> {
        let key = key.into_inner();
        crate::txn::delete(&*self.router.core_of_key(key)?, key).await
    }

    async fn txn(&self, txn: Checked<Txn>) -> Result<TxnResponse> {
        let txn = txn.into_inner();
        let core = self.router.core_of_txn(&txn)?;
        crate::txn::txn(&core, txn).await
    }

    async fn lease_grant(&self, ttl: Duration) -> Result<LeaseGrant> {
        crate::lease::grant(&*self.router.core_of(None, "lease_grant")?, ttl).await
    }

    async fn lease_keep_alive(&self, id: LeaseId) -> Result<Duration> {
        crate::lease::keep_alive(&*self.router.core_of(None, "lease_keep_alive")?, id).await
    }

    async fn lease_revoke(&self, id: LeaseId) -> Result<()> {
        crate::lease::revoke(&*self.router.core_of(None, "lease_revoke")?, id).await
    }

    async fn lease_time_to_live(&self, id: LeaseId) -> Result<LeaseInfo> {
        crate::lease::time_to_live(&*self.router.core_of(None, "lease_time_to_live")?, id).await
    }

    async fn lease_list(&self) -> Result<Vec<LeaseId>> {
        crate::lease::list(&*self.router.core_of(None, "lease_list")?).await
    }

    /// On a cluster, every node's: the status is the deployment's, not a group's.
    async fn server_status(&self) -> Result<ServerStatus> {
        crate::status::server_status(&self.router.core).await
    }

    async fn watch(&self, opts: Checked<WatchOptions>) -> Result<WatchStream> {
        let opts = opts.into_inner();
        let Some(groups) = &self.router.groups else {
            return crate::watch::watch(&self.router.core, opts).await;
        };
        match Router::group_of_range(&opts.range)? {
            Some(tag) => crate::watch::span::watch_group(groups, tag, &opts).await,
            None => crate::watch::span::watch(Arc::clone(groups), opts).await,
        }
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        crate::watch::compact(&*self.router.core_of(None, "compact")?, revision).await
    }
}
