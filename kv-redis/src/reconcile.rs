//! Reconciling: bringing the keys that other programs wrote, changed or deleted into the
//! store's metadata, index and event log. Everything the mechanism is lives in this room:
//!
//! - [`script`]: the Rust side of the reconcile script (`core/scripts/reconcile.lua`, loaded
//!   with the other scripts), run on batches of keys, and the [`ReconcileReport`] it sums;
//! - [`pass`]: one pass over a prefix, `SCAN` for the keys other programs created, then the
//!   store's indexes for the keys it tracks (prefix deletes run the first half first);
//! - [`task`]: the background reconciler of a store with roots, on a schedule and on
//!   notifications, while it leads;
//! - [`leader`]: the election that lets one store per set of roots work at a time;
//! - [`notify`]: the keyspace notifications the task follows;
//! - [`reconcile`]: what [`RedisStore::reconcile`](crate::RedisStore::reconcile) does.
//!
//! Reads (`get`, ranges) reconcile the stale keys they meet through [`reconcile_keys`].

mod leader;
mod notify;
mod pass;
mod script;
mod task;

use crate::core::Core;
use crate::core::route::on_cluster;
use keyplane_contract::Result;

pub(crate) use leader::resign;
pub(crate) use pass::{adopt_prefix, glob_prefix};
pub use script::ReconcileReport;
pub(crate) use script::{Mode, reconcile_keys};
pub(crate) use task::start;

/// What [`RedisStore::reconcile`](crate::RedisStore::reconcile) does: refuses a cluster and
/// a prefix under the internal prefix, then runs one full pass over the prefix.
pub(crate) async fn reconcile(core: &Core, prefix: &[u8]) -> Result<ReconcileReport> {
    if core.config.is_cluster() {
        return Err(on_cluster("reconcile"));
    }
    core.check_key(prefix)?;
    pass::reconcile_prefix(core, prefix).await
}
