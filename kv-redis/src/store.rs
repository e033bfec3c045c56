//! The [`Store`] impl of [`RedisStore`]: every method routes to its core (on a cluster, a
//! group's) and is one call into an operation file. The key of a single-key call is checked
//! once, here, by the router that picks its core (`Router::core_of_key`).

use crate::RedisStore;
use crate::core::route::{Router, on_cluster};
use keyplane_contract::{
    Capabilities, DeleteResult, Entry, LeaseGrant, LeaseId, LeaseInfo, PutOptions, PutResult,
    RangeOptions, RangeResult, Result, ServerStatus, Store, Txn, TxnResponse, WatchOptions,
    WatchStream,
};
use std::sync::Arc;
use std::time::Duration;

#[keyplane_contract::raw::async_trait]
impl Store for RedisStore {
    fn capabilities(&self) -> &Capabilities {
        &self.router.core.caps
    }

    async fn revision(&self) -> Result<i64> {
        crate::range::revision(&*self.router.core_of(None, "revision")?).await
    }

    async fn range(&self, opts: RangeOptions) -> Result<RangeResult> {
        let Some(groups) = &self.router.groups else {
            return crate::range::range(&self.router.core, opts).await;
        };
        opts.validate()?;
        match Router::group_of_range(&opts.range)?.map(<[u8]>::to_vec) {
            Some(tag) => {
                let mut page = crate::range::range(&groups.core(&tag), opts).await?;
                page.groups = Some([(tag, page.revision)].into());
                Ok(page)
            }
            None => crate::range::span::range(groups, opts).await,
        }
    }

    async fn get(&self, key: &[u8]) -> Result<Option<Entry>> {
        crate::range::get(&*self.router.core_of_key(key)?, key).await
    }

    async fn put(&self, key: &[u8], value: &[u8], opts: PutOptions) -> Result<PutResult> {
        if opts.lease.is_some() && self.router.groups.is_some() {
            return Err(on_cluster("put with a lease"));
        }
        crate::txn::put(&*self.router.core_of_key(key)?, key, value, opts).await
    }

    async fn delete(&self, key: &[u8]) -> Result<DeleteResult> {
        crate::txn::delete(&*self.router.core_of_key(key)?, key).await
    }

    async fn txn(&self, txn: Txn) -> Result<TxnResponse> {
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

    async fn watch(&self, opts: WatchOptions) -> Result<WatchStream> {
        let Some(groups) = &self.router.groups else {
            opts.check_starts(false)?;
            return crate::watch::watch(&self.router.core, opts).await;
        };
        opts.range.validate()?;
        opts.check_starts(true)?;
        match Router::group_of_range(&opts.range)? {
            Some(tag) => crate::watch::span::watch_group(groups, tag, &opts).await,
            None => crate::watch::span::watch(Arc::clone(groups), opts).await,
        }
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        crate::watch::compact(&*self.router.core_of(None, "compact")?, revision).await
    }
}
