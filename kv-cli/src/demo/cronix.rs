//! Cronix: one worker node, the job `nightly-backup` assigned to it, and its dispatch lock
//! held, node and lock under leases of [`LEASE`].

use super::step::{LEASE, Step};
use keyplane::keyspace::TypedStore;
use keyplane_schemas::cronix::{NodeKey, write_example};
use uuid::Uuid;

/// The demo node's UUID (fixed, so that a second run finds it).
const NODE: Uuid = Uuid::from_u128(0x6f1c_2a4e_9b3d_4c7a_8e21_5d0f_3b9a_c4e7);

pub(crate) async fn write(store: &TypedStore) -> keyplane::Result<Step> {
    if store.exists(&NodeKey { node: NODE }).await? {
        return Ok(Step::present(
            "cronix",
            "node cron-worker-1, job nightly-backup, lock held",
        ));
    }
    write_example(store, NODE, LEASE).await?;
    Ok(Step::written(
        "cronix",
        "node cron-worker-1, job nightly-backup, lock held (leased)",
    ))
}
