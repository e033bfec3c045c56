//! Leases on tokio time: grant, keep-alive, revoke, time-to-live, and expiry.
//!
//! Deadlines are `tokio::time::Instant`s, so tests drive expiry with `tokio::time::pause()`
//! and `advance`. Every operation first expires the leases that are due (so what a caller sees
//! never depends on when the background task last ran), and a background task expires them
//! when nobody calls, so that watchers see the deletes on time.

use super::Shared;
use super::state::State;
use kv_core::{Error, ErrorKind, Event, LeaseId, LeaseInfo, Result};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

#[derive(Debug)]
struct Lease {
    ttl: Duration,
    deadline: Instant,
    keys: BTreeSet<Vec<u8>>,
}

/// The live leases, their deadlines and attached keys.
#[derive(Debug, Default)]
pub(crate) struct Leases {
    last_id: i64,
    live: HashMap<i64, Lease>,
    /// `(deadline, id)` of every live lease, soonest first.
    deadlines: BTreeSet<(Instant, i64)>,
}

fn not_found(id: LeaseId) -> Error {
    Error::new(
        ErrorKind::LeaseNotFound,
        "the lease does not exist, was revoked or has expired",
    )
    .with_context("lease", id)
}

impl Leases {
    /// Grants a lease of `ttl` (already rounded) expiring at `now + ttl`.
    pub(crate) fn grant(&mut self, ttl: Duration, now: Instant) -> LeaseId {
        self.last_id += 1;
        let id = self.last_id;
        let deadline = now + ttl;
        self.live.insert(
            id,
            Lease {
                ttl,
                deadline,
                keys: BTreeSet::new(),
            },
        );
        self.deadlines.insert((deadline, id));
        LeaseId(id)
    }

    pub(crate) fn contains(&self, id: LeaseId) -> bool {
        self.live.contains_key(&id.0)
    }

    pub(crate) fn keep_alive(&mut self, id: LeaseId, now: Instant) -> Result<Duration> {
        let lease = self.live.get_mut(&id.0).ok_or_else(|| not_found(id))?;
        self.deadlines.remove(&(lease.deadline, id.0));
        lease.deadline = now + lease.ttl;
        self.deadlines.insert((lease.deadline, id.0));
        Ok(lease.ttl)
    }

    pub(crate) fn info(&self, id: LeaseId, now: Instant) -> Result<LeaseInfo> {
        let lease = self.live.get(&id.0).ok_or_else(|| not_found(id))?;
        Ok(LeaseInfo {
            id,
            granted_ttl: lease.ttl,
            remaining: lease.deadline.saturating_duration_since(now),
            keys: lease.keys.iter().cloned().collect(),
        })
    }

    /// Removes a lease, returning its attached keys.
    fn remove(&mut self, id: i64) -> Option<BTreeSet<Vec<u8>>> {
        let lease = self.live.remove(&id)?;
        self.deadlines.remove(&(lease.deadline, id));
        Some(lease.keys)
    }

    /// The earliest deadline of a live lease.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.first().map(|(deadline, _)| *deadline)
    }

    fn pop_due(&mut self, now: Instant) -> Option<(i64, BTreeSet<Vec<u8>>)> {
        let &(deadline, id) = self.deadlines.first()?;
        if deadline > now {
            return None;
        }
        self.remove(id).map(|keys| (id, keys))
    }

    pub(crate) fn attach(&mut self, id: LeaseId, key: &[u8]) {
        if let Some(lease) = self.live.get_mut(&id.0) {
            lease.keys.insert(key.to_vec());
        }
    }

    pub(crate) fn detach(&mut self, id: LeaseId, key: &[u8]) {
        if let Some(lease) = self.live.get_mut(&id.0) {
            lease.keys.remove(key);
        }
    }
}

impl State {
    /// Revokes a lease: deletes its keys in one revision.
    pub(crate) fn revoke_lease(&mut self, id: LeaseId) -> Result<()> {
        let keys = self.leases.remove(id.0).ok_or_else(|| not_found(id))?;
        self.delete_lease_keys(keys);
        Ok(())
    }

    /// Expires every lease due at `now`, each in its own revision, as etcd's lessor revokes
    /// each expired lease in its own transaction.
    pub(crate) fn expire_due(&mut self, now: Instant) {
        while let Some((id, keys)) = self.leases.pop_due(now) {
            tracing::debug!(lease = id, keys = keys.len(), "memory store lease expired");
            self.delete_lease_keys(keys);
        }
    }

    fn delete_lease_keys(&mut self, keys: BTreeSet<Vec<u8>>) {
        let events = keys
            .into_iter()
            .filter_map(|key| {
                let prev = self.kv.remove(&key)?;
                let prev = Some(prev.entry(&key, false));
                Some(Event::Delete { key, prev })
            })
            .collect();
        self.commit(events, Vec::new(), Vec::new());
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
