//! The background reconciler: follows keyspace notifications under the configured roots and
//! scans them in full periodically, so that other programs' writes reach ranges and watches.
//!
//! Every store with roots runs this task, but only one per Redis database, internal prefix
//! and set of roots works at a time: the one holding the leader key of those roots (see
//! [`leader`](super::leader)). Stores with other roots elect their own, so that a tool
//! following one prefix (`kvctl watch`) is never kept idle by a service that reconciles
//! another. The reconcile script is idempotent besides (a key that already matches its
//! metadata produces no event), so reconcilers whose roots overlap, or a pass that overlaps
//! a notification, never repeat an event.

use crate::core::Core;
use crate::reconcile::leader::{RENEW, try_lead};
use crate::reconcile::notify::{
    in_roots, next_key, notifications_on, subscribe_if_configured, wants_notifications,
};
use crate::reconcile::pass::reconcile_prefix;
use crate::reconcile::script::{Mode, reconcile_keys};
use keyplane_contract::Result;
use std::collections::BTreeSet;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

/// How long notified keys wait to be reconciled together.
const FLUSH_DELAY: Duration = Duration::from_millis(5);
/// Notified keys that are reconciled at once without waiting for the delay.
const FLUSH_AT: usize = 2000;

/// Starts the reconciler of the store of `core`, whose id in the leader election is `id`,
/// when its configuration has roots (it ends with the core).
pub(crate) fn start(core: &Arc<Core>, id: &str) -> Option<JoinHandle<()>> {
    (!core.config.reconcile_roots.is_empty())
        .then(|| tokio::spawn(run(Arc::downgrade(core), id.to_owned())))
}

/// The task of one store: takes part in the leader election until the store is dropped,
/// and reconciles while it leads.
async fn run(core: Weak<Core>, id: String) {
    loop {
        match lead(&core, &id).await {
            Ok(()) => {}
            Err(err) => tracing::debug!(%err, "the reconciler failed; retrying"),
        }
        if core.strong_count() == 0 {
            return;
        }
        tokio::time::sleep(RENEW).await;
    }
}

/// Leads while the leader key stays this store's: subscribes to notifications, runs a full
/// pass (which covers whatever happened before the subscription), then reconciles notified
/// keys in small batches and every root at each interval. Returns when leadership is lost
/// or the store dropped.
async fn lead(weak: &Weak<Core>, id: &str) -> Result<()> {
    let interval = {
        let Some(core) = weak.upgrade() else {
            return Ok(());
        };
        if !try_lead(&core, id).await? {
            return Ok(());
        }
        core.config.reconcile_period()
    };
    let mut notifications = subscribe_if_configured(weak).await;
    full_pass(weak).await?;
    let mut renew = tokio::time::interval_at(Instant::now() + RENEW, RENEW);
    renew.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // Without a periodic pass, a tick that never comes in practice (a year).
    let period = interval.unwrap_or(Duration::from_secs(365 * 24 * 3600));
    let mut pass = tokio::time::interval_at(Instant::now() + period, period);
    pass.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut pending: BTreeSet<Vec<u8>> = BTreeSet::new();
    let mut deadline: Option<Instant> = None;
    loop {
        tokio::select! {
            message = next_key(&mut notifications), if notifications.is_some() => {
                match message {
                    Some(key) => {
                        let Some(core) = weak.upgrade() else { return Ok(()) };
                        if in_roots(&core, &key) {
                            pending.insert(key);
                            deadline.get_or_insert_with(|| Instant::now() + FLUSH_DELAY);
                        }
                        if pending.len() >= FLUSH_AT {
                            deadline = Some(Instant::now());
                        }
                    }
                    None => {
                        // The subscription connection is gone: notifications sent meanwhile
                        // are lost, so the next subscription is followed by a full pass.
                        notifications = None;
                    }
                }
            }
            _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                let Some(core) = weak.upgrade() else { return Ok(()) };
                let keys: Vec<Vec<u8>> = std::mem::take(&mut pending).into_iter().collect();
                deadline = None;
                if let Err(err) = reconcile_keys(&core, &keys, Mode::Full).await {
                    // Kept for the next attempt; the periodic pass is the safety net too.
                    pending.extend(keys);
                    deadline = Some(Instant::now() + RENEW);
                    tracing::debug!(%err, "reconciling notified keys failed");
                }
            }
            _ = renew.tick() => {
                let Some(core) = weak.upgrade() else { return Ok(()) };
                if !try_lead(&core, id).await? {
                    return Ok(());
                }
                drop(core);
                if notifications.is_none() && wants_notifications(weak) {
                    notifications = subscribe_if_configured(weak).await;
                    if notifications.is_some() {
                        full_pass(weak).await?;
                    }
                }
            }
            _ = pass.tick() => {
                // Notifications may have been turned off on the server meanwhile.
                if notifications.is_some() {
                    let Some(core) = weak.upgrade() else { return Ok(()) };
                    if !notifications_on(&core).await.unwrap_or(false) {
                        notifications = None;
                    }
                }
                full_pass(weak).await?;
            }
        }
    }
}

/// Reconciles every root once.
async fn full_pass(weak: &Weak<Core>) -> Result<()> {
    let Some(core) = weak.upgrade() else {
        return Ok(());
    };
    for root in &core.config.reconcile_roots {
        let report = reconcile_prefix(&core, root.as_bytes()).await?;
        if !report.is_empty() {
            tracing::debug!(?report, root, "reconciled other programs' writes");
        }
    }
    Ok(())
}
