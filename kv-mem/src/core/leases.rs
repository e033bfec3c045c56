//! The lease table on tokio time: grants, deadlines, renewals and the keys attached to each
//! lease. Revoking and expiring, which delete keys, are the state's (in `core.rs`); the lease
//! operations and the expiry task are in `lease.rs`.

use keyplane_contract::{Error, LeaseId, LeaseInfo, Result};
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;
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
        let lease = self
            .live
            .get_mut(&id.0)
            .ok_or_else(|| Error::lease_not_found(id))?;
        self.deadlines.remove(&(lease.deadline, id.0));
        lease.deadline = now + lease.ttl;
        self.deadlines.insert((lease.deadline, id.0));
        Ok(lease.ttl)
    }

    pub(crate) fn info(&self, id: LeaseId, now: Instant) -> Result<LeaseInfo> {
        let lease = self
            .live
            .get(&id.0)
            .ok_or_else(|| Error::lease_not_found(id))?;
        Ok(LeaseInfo {
            id,
            granted_ttl: lease.ttl,
            remaining: lease.deadline.saturating_duration_since(now),
            keys: lease.keys.iter().cloned().collect(),
        })
    }

    /// The IDs of the live leases, ascending (the caller expired the due ones first).
    pub(crate) fn ids(&self) -> Vec<LeaseId> {
        let mut ids: Vec<LeaseId> = self.live.keys().map(|&id| LeaseId(id)).collect();
        ids.sort_unstable();
        ids
    }

    /// Removes a lease, returning its attached keys.
    pub(crate) fn remove(&mut self, id: i64) -> Option<BTreeSet<Vec<u8>>> {
        let lease = self.live.remove(&id)?;
        self.deadlines.remove(&(lease.deadline, id));
        Some(lease.keys)
    }

    /// The earliest deadline of a live lease.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.first().map(|(deadline, _)| *deadline)
    }

    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<(i64, BTreeSet<Vec<u8>>)> {
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
