//! Leases on tokio time: grant, keep-alive, revoke, time-to-live, and the background task that
//! expires them.
//!
//! Deadlines are `tokio::time::Instant`s, so tests drive expiry with `tokio::time::pause()`
//! and `advance`. Every operation first expires the leases that are due (so what a caller sees
//! never depends on when the background task last ran), and a background task expires them
//! when nobody calls, so that watchers see the deletes on time.

use crate::core::Shared;
use keyplane_contract::{LeaseGrant, LeaseId, LeaseInfo, Result};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Grants a lease and makes sure the expiry task runs.
pub(crate) fn grant(shared: &Arc<Shared>, ttl: Duration) -> Result<LeaseGrant> {
    let ttl = shared.caps.round_ttl(ttl)?;
    let id = shared.state()?.leases.grant(ttl, Instant::now());
    ensure_expiry_task(shared);
    shared.wake.notify_one();
    Ok(LeaseGrant { id, ttl })
}

/// Renews a lease to its granted TTL.
pub(crate) fn keep_alive(shared: &Shared, id: LeaseId) -> Result<Duration> {
    shared.state()?.leases.keep_alive(id, Instant::now())
}

/// Revokes a lease, deleting its keys in one revision.
pub(crate) fn revoke(shared: &Shared, id: LeaseId) -> Result<()> {
    shared.state()?.revoke_lease(id)
}

/// What the store knows of a live lease.
pub(crate) fn time_to_live(shared: &Shared, id: LeaseId) -> Result<LeaseInfo> {
    shared.state()?.leases.info(id, Instant::now())
}

/// The IDs of the live leases, ascending: the due ones are expired first, so none whose
/// deadline has passed is listed.
pub(crate) fn list(shared: &Shared) -> Result<Vec<LeaseId>> {
    Ok(shared.state()?.leases.ids())
}

/// Starts the lease expiry task in the current runtime unless one is running.
fn ensure_expiry_task(shared: &Arc<Shared>) {
    let mut task = match shared.expiry.lock() {
        Ok(task) => task,
        Err(poisoned) => poisoned.into_inner(),
    };
    // A task whose runtime shut down is finished: start another in this one. Outside a
    // tokio runtime there is none, and leases still expire on the next operation.
    if task.as_ref().is_none_or(JoinHandle::is_finished)
        && let Ok(runtime) = tokio::runtime::Handle::try_current()
    {
        let weak = Arc::downgrade(shared);
        let wake = Arc::clone(&shared.wake);
        *task = Some(runtime.spawn(run_expiry(weak, wake)));
    }
}

/// Expires leases while the store lives: sleeps until the next deadline or until `wake` is
/// notified (a new lease, or the store going away). It holds only a `Weak` to the store, so
/// it never keeps it alive.
pub(crate) async fn run_expiry(shared: Weak<Shared>, wake: Arc<Notify>) {
    loop {
        let next = {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            match shared.lock() {
                Ok(mut state) => {
                    state.expire_due(Instant::now());
                    state.leases.next_deadline()
                }
                Err(_) => return,
            }
        };
        match next {
            Some(deadline) => {
                tokio::select! {
                    () = tokio::time::sleep_until(deadline) => {}
                    () = wake.notified() => {}
                }
            }
            None => wake.notified().await,
        }
    }
}
