//! Transactions as one etcd Txn, and the native single-key `put`.
//!
//! Plain ops map one to one onto etcd ops, except that deletes also remove the collections
//! at the key (or under the prefix). The store sends transactions with collection ops or
//! compares down the optimistic path of `core/collections.rs` instead. Both build their etcd
//! requests with [`plan`](crate::core::plan).

use crate::core::collections;
use crate::core::plan::{Branch, UserTxn};
use crate::core::{Core, header_revision};
use etcd_client::PutOptions as EtcdPutOptions;
use keyplane_contract::{PutOptions, PutResult, Result, Txn, TxnResponse};

/// One put (checked by the contract's front) as etcd's own `Put`.
pub(crate) async fn put(
    core: &Core,
    key: &[u8],
    value: &[u8],
    opts: PutOptions,
) -> Result<PutResult> {
    let physical = core.ns.key(key);
    let mut put = EtcdPutOptions::new();
    if let Some(lease) = opts.lease {
        put = put.with_lease(lease.0);
    }
    if opts.prev {
        put = put.with_prev_key();
    }
    let resp = core
        .call("put", false, || {
            let (key, value, put) = (physical.clone(), value.to_vec(), put.clone());
            let mut kv = core.kv.clone();
            async move { kv.put(key, value, Some(put)).await }
        })
        .await?;
    Ok(PutResult {
        revision: header_revision(resp.header())?,
        prev: resp.prev_key().and_then(|kv| core.ns.entry(kv)),
    })
}

/// A transaction: one without collection ops or compares as one etcd transaction, one with
/// them down the optimistic path of [`collections`](crate::core::collections). `txn` was
/// checked by the contract's front.
pub(crate) async fn txn(core: &Core, txn: Txn) -> Result<TxnResponse> {
    if collections::has_collections(&txn) {
        return collections::txn(core, txn).await;
    }
    let ns = &core.ns;
    let max = core.caps.max_txn_ops;
    let mut success = Branch::default();
    for op in &txn.success {
        success.plain(ns, op);
    }
    let mut failure = Branch::default();
    for op in &txn.failure {
        failure.plain(ns, op);
    }
    let request = UserTxn::new(ns, &txn.compares, success, failure, max)?;
    let etcd_txn = request.etcd_txn();
    let resp = core
        .call("txn", false, || {
            let t = etcd_txn.clone();
            let mut kv = core.kv.clone();
            async move { kv.txn(t).await }
        })
        .await?;
    let revision = header_revision(resp.header())?;
    request.response(ns, &resp, revision)
}
