//! The store's state behind its one lock, and the commit of a revision.

use super::lease::Leases;
use super::watch::History;
use kv_core::raw::emulation::{DeletedSize, PhysicalWrite};
use kv_core::{Entry, Event, LeaseId};
use std::collections::BTreeMap;

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
    /// Collection members in the reserved layout of `kv_core::raw::layout`.
    pub(crate) members: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Live leases and their deadlines.
    pub(crate) leases: Leases,
    /// Retained events and registered watchers.
    pub(crate) history: History,
}

impl State {
    pub(crate) fn new(history: usize) -> Self {
        State {
            revision: 1,
            kv: BTreeMap::new(),
            members: BTreeMap::new(),
            leases: Leases::default(),
            history: History::new(history),
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
