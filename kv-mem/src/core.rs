//! What every handle of a store shares: the state behind its one lock, the commit of a
//! revision, and the deletes of revoked and expired leases with the task that expires them.

mod history;
mod leases;

pub(crate) use history::History;
use keyplane_contract::raw::emulation::{DeletedSize, PhysicalWrite};
use keyplane_contract::{Capabilities, Entry, Error, ErrorKind, Event, LeaseId, Result};
pub(crate) use leases::Leases;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// A plain key's value and metadata (the key is the map's key).
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub(crate) value: Vec<u8>,
    pub(crate) create_revision: i64,
    pub(crate) mod_revision: i64,
    pub(crate) version: i64,
    pub(crate) lease: Option<LeaseId>,
}

impl Stored {
    /// The entry of `key`, with an empty value when `keys_only`.
    pub(crate) fn entry(&self, key: &[u8], keys_only: bool) -> Entry {
        Entry {
            key: key.to_vec(),
            value: if keys_only {
                Vec::new()
            } else {
                self.value.clone()
            },
            create_revision: self.create_revision,
            mod_revision: self.mod_revision,
            version: self.version,
            lease: self.lease,
        }
    }
}

/// Everything a [`MemStore`](crate::MemStore) holds.
#[derive(Debug)]
pub(crate) struct State {
    /// The store's revision: 1 when empty, bumped once by every transaction that changes
    /// something.
    pub(crate) revision: i64,
    /// Plain keys. Ranges and watches see only these.
    pub(crate) kv: BTreeMap<Vec<u8>, Stored>,
    /// Collection members in the reserved layout of `keyplane_contract::raw::layout`.
    pub(crate) members: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Live leases and their deadlines.
    pub(crate) leases: Leases,
    /// Retained events and registered watchers.
    pub(crate) history: History,
}

impl State {
    pub(crate) fn new(history: usize, watch_buffer: usize) -> Self {
        State {
            revision: 1,
            kv: BTreeMap::new(),
            members: BTreeMap::new(),
            leases: Leases::default(),
            history: History::new(history, watch_buffer),
        }
    }

    /// The revision the next change is written at.
    pub(crate) fn next_revision(&self) -> i64 {
        self.revision + 1
    }

    /// Commits the changes of one transaction, already applied to `kv` at
    /// [`State::next_revision`]: writes the collection members, moves lease attachments,
    /// bumps the revision once when anything changed, and hands the events to history and
    /// watchers. Returns the store's revision afterwards.
    pub(crate) fn commit(
        &mut self,
        events: Vec<Event>,
        member_writes: Vec<PhysicalWrite>,
        deleted: Vec<DeletedSize>,
    ) -> i64 {
        // Pending writes may cancel out (a member added, then its collection deleted, in one
        // transaction): only a real change to the members counts.
        let mut members_changed = false;
        for write in member_writes {
            members_changed |= match write {
                PhysicalWrite::Put { key, value } => {
                    self.members.insert(key, value.clone()).as_ref() != Some(&value)
                }
                PhysicalWrite::Delete { key } => self.members.remove(&key).is_some(),
            };
        }
        if events.is_empty() && !members_changed {
            return self.revision;
        }
        for event in &events {
            let (key, prev_lease, new_lease) = match event {
                Event::Put { entry, prev } => {
                    (&entry.key, prev.as_ref().and_then(|p| p.lease), entry.lease)
                }
                Event::Delete { key, prev } => (key, prev.as_ref().and_then(|p| p.lease), None),
                Event::Collection(_) => continue,
            };
            if prev_lease != new_lease {
                if let Some(lease) = prev_lease {
                    self.leases.detach(lease, key);
                }
                if let Some(lease) = new_lease {
                    self.leases.attach(lease, key);
                }
            }
        }
        self.revision = self.next_revision();
        self.history.record(self.revision, events, deleted);
        self.revision
    }
}

/// What every handle of one store shares.
pub(crate) struct Shared {
    /// The state, behind a std `Mutex` rather than tokio's: every critical section is short,
    /// synchronous and never held across an `.await`, which is the case the std mutex serves
    /// best (as mini-redis explains for its `Db`). Watch channels are unbounded, so delivering
    /// events under the lock never waits on a reader either.
    pub(crate) state: Mutex<State>,
    pub(crate) caps: Capabilities,
    /// Wakes the lease expiry task when a deadline may have moved earlier or the store goes.
    pub(crate) wake: Arc<Notify>,
    /// The lease expiry task, started with the first lease inside the caller's runtime.
    pub(crate) expiry: Mutex<Option<JoinHandle<()>>>,
}

impl Shared {
    /// The locked state, without expiring leases.
    pub(crate) fn lock(&self) -> Result<MutexGuard<'_, State>> {
        self.state.lock().map_err(|_| {
            Error::new(
                ErrorKind::Corrupted,
                "the memory store's state is unusable: an operation panicked while holding it",
            )
        })
    }

    /// The locked state after expiring every lease due now, so that each operation sees
    /// leases exactly as the clock says.
    pub(crate) fn state(&self) -> Result<MutexGuard<'_, State>> {
        let mut state = self.lock()?;
        state.expire_due(Instant::now());
        Ok(state)
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Ok(state) = self.state.get_mut() {
            state.history.close();
        }
        self.wake.notify_one();
    }
}

impl State {
    /// Revokes a lease: deletes its keys in one revision.
    pub(crate) fn revoke_lease(&mut self, id: LeaseId) -> Result<()> {
        let keys = self
            .leases
            .remove(id.0)
            .ok_or_else(|| Error::lease_not_found(id))?;
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
