//! The writes of one redb write transaction ([`Section`]): the jobs' plans applied to the
//! tables, the revision counter, the log's pruning, and the expiry of leases.

use super::codec::{COMPACT_KEY, REVISION_KEY, attachment_key, decode_entry, encode_events};
use super::state::{Plan, Shared, Writer, now_ms, oldest};
use super::tables::{self, Tables};
use crate::error::RedbResult;
use keyplane_contract::raw::emulation::PhysicalWrite;
use keyplane_contract::{Error, Event, LeaseId, Result};
use redb::ReadableTable;

/// Log records below the retained history are removed once this many accumulate.
const PRUNE_BATCH: i64 = 256;

/// The writes of one redb write transaction, as a job sees them.
pub(crate) struct Section<'a, 't> {
    pub(crate) shared: &'a Shared,
    pub(crate) w: &'a mut Writer,
    pub(crate) t: &'a mut Tables<'t>,
    /// A write that redb refused: the transaction is abandoned.
    pub(super) failed: Option<Error>,
    /// Whether anything was written.
    pub(super) wrote: bool,
    /// Prune the whole log below the retained history now (an explicit compaction).
    pub(super) prune_now: bool,
}

impl Section<'_, '_> {
    /// Applies `plan`'s writes to the tables; returns the revision after it (the next
    /// revision when `plan.events` is `Some`).
    pub(crate) fn commit(&mut self, plan: Plan) -> Result<i64> {
        match self.apply(plan) {
            Ok(revision) => Ok(revision),
            Err(err) => {
                self.failed.get_or_insert_with(|| err.clone());
                Err(err)
            }
        }
    }

    fn apply(&mut self, plan: Plan) -> Result<i64> {
        let t = &mut *self.t;
        for write in &plan.kv {
            match write {
                PhysicalWrite::Put { key, value } => {
                    t.kv.insert(key.as_slice(), value.as_slice())
                        .redb("commit")?;
                }
                PhysicalWrite::Delete { key } => {
                    t.kv.remove(key.as_slice()).redb("commit")?;
                }
            }
        }
        for (id, record) in &plan.leases {
            match record {
                Some(record) => t.leases.insert(id, record.encode().as_slice()).map(drop),
                None => t.leases.remove(id).map(drop),
            }
            .redb("commit")?;
        }
        for (key, on) in &plan.attach {
            if *on {
                t.lease_keys.insert(key.as_slice(), ()).redb("commit")?;
            } else {
                t.lease_keys.remove(key.as_slice()).redb("commit")?;
            }
        }
        for (key, value) in &plan.meta {
            t.meta.insert(*key, value).redb("commit")?;
        }
        if let Some(events) = &plan.events {
            let revision = self.w.revision + 1;
            let record = encode_events(events, &plan.deleted);
            t.log.insert(revision, record.as_slice()).redb("commit")?;
            self.w.revision = revision;
        }
        self.wrote = true;
        Ok(self.w.revision)
    }

    /// Moves the explicit compaction point to `revision` and prunes the log below it with
    /// this transaction.
    pub(crate) fn compact_to(&mut self, revision: i64) -> Result<()> {
        let mut plan = Plan::default();
        plan.meta.push((COMPACT_KEY, revision));
        self.commit(plan)?;
        self.w.compact_floor = revision;
        self.prune_now = true;
        Ok(())
    }

    /// The revision counter and the log's pruning, once every job has run.
    pub(super) fn finish(&mut self) -> Result<()> {
        if !self.wrote {
            return Ok(());
        }
        let w = &mut *self.w;
        self.t
            .meta
            .insert(REVISION_KEY, w.revision)
            .redb("commit")?;
        let oldest = oldest(
            w.revision,
            w.compact_floor,
            self.shared.config.history_retention,
        );
        let batch = if self.prune_now { 1 } else { PRUNE_BATCH };
        if oldest - w.log_floor >= batch {
            self.t
                .log
                .retain_in(w.log_floor..oldest, |_, _| false)
                .redb("commit")?;
            w.log_floor = oldest;
        }
        Ok(())
    }
}

/// Removes a lease and deletes its keys, in one revision when it has keys.
pub(crate) fn remove_lease(s: &mut Section<'_, '_>, id: i64) -> Result<()> {
    let mut plan = Plan::default();
    let mut events = Vec::new();
    plan.leases.insert(id, None);
    for key in tables::attached_keys(&s.t.lease_keys, id)? {
        plan.attach.insert(attachment_key(id, &key), false);
        let prev = match s.t.kv.get(key.as_slice()).redb("lease_expiry")? {
            Some(bytes) => decode_entry(&key, bytes.value(), false)?,
            None => continue,
        };
        if prev.lease != Some(LeaseId(id)) {
            continue;
        }
        plan.kv.push(PhysicalWrite::Delete { key: key.clone() });
        events.push(Event::Delete {
            key,
            prev: Some(prev),
        });
    }
    if !events.is_empty() {
        plan.events = Some(events);
    }
    s.commit(plan)?;
    s.w.leases.remove(id);
    Ok(())
}

/// Expires every lease whose deadline has passed, each in its own revision.
pub(super) fn expire_due(s: &mut Section<'_, '_>) -> Result<()> {
    for id in s.w.leases.due(now_ms()) {
        remove_lease(s, id)?;
    }
    Ok(())
}
