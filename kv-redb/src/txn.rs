//! Transactions: compares, then one branch of ops planned through an overlay (so later ops
//! see earlier ones) against the `kv` table of the writer's open transaction, as the jobs
//! before it in its group left it; then applied to the tables in the same transaction.

use crate::core::codec::{attachment_key, decode_entry, encode_entry};
use crate::core::tables::KvState;
use crate::core::{Core, Plan, Section, Writer};
use keyplane_contract::raw::MAX_KEY_LEN;
use keyplane_contract::raw::emulation::{
    OrderedState, Overlay, PhysicalWrite, collection_ranges_for_key, collection_ranges_for_prefix,
    compares_hold,
};
use keyplane_contract::{
    Entry, Error, ErrorKind, Event, LeaseId, OpResult, Result, Txn, TxnOp, TxnResponse,
};

/// Commits a transaction (checked by the contract's front) with the group it joins.
pub(crate) async fn txn(core: &Core, txn: Txn) -> Result<TxnResponse> {
    core.writer.write(move |s| run(s, &txn)).await
}

/// Plans `txn` and applies its writes, in the writer's open transaction.
fn run(s: &mut Section<'_, '_>, txn: &Txn) -> Result<TxnResponse> {
    let (succeeded, results, plan) = {
        let data = KvState(&s.t.kv);
        let succeeded = compares_hold(&txn.compares, &data, |key| read_entry(&data, key))?;
        let mut planner = Planner {
            w: s.w,
            rev: s.w.revision + 1,
            overlay: Overlay::new(&data),
            plan: Plan::default(),
            events: Vec::new(),
        };
        let ops = txn.branch(succeeded);
        let mut results = Vec::with_capacity(ops.len());
        for op in ops {
            results.push(planner.op(op)?);
        }
        let Planner {
            overlay,
            mut plan,
            mut events,
            ..
        } = planner;
        let collection_events = overlay.collection_events()?;
        plan.deleted = overlay.deleted_sizes(&collection_events)?;
        events.extend(collection_events.into_iter().map(Event::Collection));
        if !overlay.is_empty() {
            plan.kv = overlay.into_writes();
            plan.events = Some(events);
        }
        (succeeded, results, plan)
    };
    let revision = if plan.events.is_some() {
        s.commit(plan)?
    } else {
        s.w.revision
    };
    Ok(TxnResponse {
        succeeded,
        revision,
        results,
    })
}

fn read_entry(state: &impl OrderedState, key: &[u8]) -> Result<Option<Entry>> {
    state
        .get(key)?
        .map(|v| decode_entry(key, &v, false))
        .transpose()
}

struct Planner<'w, 'o, S> {
    w: &'w Writer,
    rev: i64,
    overlay: Overlay<'o, S>,
    plan: Plan,
    events: Vec<Event>,
}

impl<S: OrderedState> Planner<'_, '_, S> {
    fn op(&mut self, op: &TxnOp) -> Result<OpResult> {
        match op {
            TxnOp::Get { key } => Ok(OpResult::Get(read_entry(&self.overlay, key)?)),
            TxnOp::Put { key, value, lease } => {
                self.put(key, value, *lease)?;
                Ok(OpResult::Put)
            }
            TxnOp::Delete { key } => {
                let mut deleted = u64::from(self.delete(key)?);
                deleted += self
                    .overlay
                    .delete_collections(&collection_ranges_for_key(key))?;
                Ok(OpResult::Delete { deleted })
            }
            TxnOp::DeletePrefix { prefix } => {
                // Every key is at most MAX_KEY_LEN bytes, so this bounds every key under
                // the prefix, including prefixes made of 0xFF bytes.
                let end = keyplane_contract::raw::prefix_end(prefix)
                    .unwrap_or_else(|| vec![0xff; MAX_KEY_LEN + 1]);
                let keys: Vec<Vec<u8>> = self
                    .overlay
                    .scan(prefix, &end, None)?
                    .into_iter()
                    .map(|(k, _)| k)
                    .collect();
                let mut deleted = 0;
                for key in keys {
                    deleted += u64::from(self.delete(&key)?);
                }
                deleted += self
                    .overlay
                    .delete_collections(&collection_ranges_for_prefix(prefix))?;
                Ok(OpResult::Delete { deleted })
            }
            TxnOp::Collection(op) => Ok(OpResult::Collection(self.overlay.apply(op)?)),
        }
    }

    fn put(&mut self, key: &[u8], value: &[u8], lease: Option<LeaseId>) -> Result<()> {
        if let Some(id) = lease
            && self.w.leases.get(id.0).is_none()
        {
            return Err(Error::new(
                ErrorKind::LeaseNotFound,
                "a put names a lease that does not exist or has expired; nothing was written",
            )
            .with_context("lease", id));
        }
        let prev = read_entry(&self.overlay, key)?;
        let entry = Entry {
            key: key.to_vec(),
            value: value.to_vec(),
            create_revision: prev.as_ref().map_or(self.rev, |p| p.create_revision),
            mod_revision: self.rev,
            version: prev.as_ref().map_or(1, |p| p.version + 1),
            lease,
        };
        if let Some(old) = prev.as_ref().and_then(|p| p.lease)
            && Some(old) != lease
        {
            self.plan.attach.insert(attachment_key(old.0, key), false);
        }
        if let Some(id) = lease {
            self.plan.attach.insert(attachment_key(id.0, key), true);
        }
        self.overlay.record([PhysicalWrite::Put {
            key: key.to_vec(),
            value: encode_entry(&entry),
        }]);
        self.events.push(Event::Put { entry, prev });
        Ok(())
    }

    /// Deletes a plain key; whether it existed.
    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        let Some(prev) = read_entry(&self.overlay, key)? else {
            return Ok(false);
        };
        if let Some(id) = prev.lease {
            self.plan.attach.insert(attachment_key(id.0, key), false);
        }
        self.overlay
            .record([PhysicalWrite::Delete { key: key.to_vec() }]);
        self.events.push(Event::Delete {
            key: key.to_vec(),
            prev: Some(prev),
        });
        Ok(true)
    }
}
