//! Transactions: compares, then one branch applied at one new revision, all or nothing.

use crate::core::{Shared, State, Stored};
use keyplane_contract::driver::Checked;
use keyplane_contract::raw::emulation::{
    Overlay, collection_ranges_for_key, collection_ranges_for_prefix, compares_hold,
};
use keyplane_contract::raw::prefix_end;
use keyplane_contract::{Error, ErrorKind, Event, OpResult, Result, Txn, TxnOp, TxnResponse};
use std::collections::BTreeMap;
use std::ops::Bound;

/// Pending collection writes over the store's member map.
type MemberOverlay<'a> = Overlay<'a, BTreeMap<Vec<u8>, Vec<u8>>>;

/// What one branch did so far, so that a failing op can be undone.
struct Staged {
    revision: i64,
    /// The previous state of every plain key written, in write order.
    undo: Vec<(Vec<u8>, Option<Stored>)>,
    events: Vec<Event>,
}

impl Staged {
    fn put(
        &mut self,
        kv: &mut BTreeMap<Vec<u8>, Stored>,
        key: &[u8],
        value: &[u8],
        lease: Option<keyplane_contract::LeaseId>,
    ) {
        let prev = kv.get(key);
        let stored = Stored {
            value: value.to_vec(),
            create_revision: prev.map_or(self.revision, |p| p.create_revision),
            mod_revision: self.revision,
            version: prev.map_or(1, |p| p.version + 1),
            lease,
        };
        let entry = stored.entry(key, false);
        let prev = kv.insert(key.to_vec(), stored);
        self.events.push(Event::Put {
            entry,
            prev: prev.as_ref().map(|p| p.entry(key, false)),
        });
        self.undo.push((key.to_vec(), prev));
    }

    fn delete(&mut self, kv: &mut BTreeMap<Vec<u8>, Stored>, key: &[u8]) -> u64 {
        let Some(prev) = kv.remove(key) else {
            return 0;
        };
        self.events.push(Event::Delete {
            key: key.to_vec(),
            prev: Some(prev.entry(key, false)),
        });
        self.undo.push((key.to_vec(), Some(prev)));
        1
    }

    fn rollback(self, kv: &mut BTreeMap<Vec<u8>, Stored>) {
        for (key, prev) in self.undo.into_iter().rev() {
            match prev {
                Some(prev) => kv.insert(key, prev),
                None => kv.remove(&key),
            };
        }
    }
}

/// Applies a checked transaction under the state's lock.
pub(crate) fn txn(shared: &Shared, txn: &Checked<Txn>) -> Result<TxnResponse> {
    shared.state()?.txn(txn)
}

impl State {
    /// Runs a validated transaction: evaluates its compares, checks the chosen branch's
    /// leases, applies its ops, and commits them at one revision, or leaves the state
    /// unchanged when an op fails.
    pub(crate) fn txn(&mut self, txn: &Txn) -> Result<TxnResponse> {
        let succeeded = compares_hold(&txn.compares, &self.members, |key| {
            Ok(self.kv.get(key).map(|s| s.entry(key, false)))
        })?;
        let ops = txn.branch(succeeded);
        for op in ops {
            if let TxnOp::Put {
                key,
                lease: Some(lease),
                ..
            } = op
                && !self.leases.contains(*lease)
            {
                return Err(Error::new(
                    ErrorKind::LeaseNotFound,
                    "a put names a lease that does not exist, was revoked or has expired",
                )
                .with_context("lease", lease)
                .with_context("key", keyplane_contract::raw::escape_bytes(key)));
            }
        }
        let mut staged = Staged {
            revision: self.next_revision(),
            undo: Vec::new(),
            events: Vec::new(),
        };
        let State { kv, members, .. } = self;
        let mut overlay = Overlay::new(&*members);
        let mut results = Vec::with_capacity(ops.len());
        for op in ops {
            match run_op(op, kv, &mut overlay, &mut staged) {
                Ok(result) => results.push(result),
                Err(err) => {
                    staged.rollback(kv);
                    return Err(err);
                }
            }
        }
        let finished = overlay.collection_events().and_then(|events| {
            let deleted = overlay.deleted_sizes(&events)?;
            Ok((events, deleted))
        });
        let (collection_events, deleted) = match finished {
            Ok(finished) => finished,
            Err(err) => {
                staged.rollback(kv);
                return Err(err);
            }
        };
        staged
            .events
            .extend(collection_events.into_iter().map(Event::Collection));
        let writes = overlay.into_writes();
        let revision = self.commit(staged.events, writes, deleted);
        Ok(TxnResponse {
            succeeded,
            revision,
            results,
        })
    }
}

fn run_op(
    op: &TxnOp,
    kv: &mut BTreeMap<Vec<u8>, Stored>,
    overlay: &mut MemberOverlay<'_>,
    staged: &mut Staged,
) -> Result<OpResult> {
    Ok(match op {
        TxnOp::Get { key } => OpResult::Get(kv.get(key).map(|s| s.entry(key, false))),
        TxnOp::Put { key, value, lease } => {
            staged.put(kv, key, value, *lease);
            OpResult::Put
        }
        TxnOp::Delete { key } => {
            let plain = staged.delete(kv, key);
            let collections = overlay.delete_collections(&collection_ranges_for_key(key))?;
            OpResult::Delete {
                deleted: plain + collections,
            }
        }
        TxnOp::DeletePrefix { prefix } => {
            let upper = prefix_end(prefix);
            let upper = upper.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
            let keys: Vec<Vec<u8>> = kv
                .range::<[u8], _>((Bound::Included(prefix.as_slice()), upper))
                .map(|(k, _)| k.clone())
                .collect();
            let plain: u64 = keys.iter().map(|k| staged.delete(kv, k)).sum();
            let collections = overlay.delete_collections(&collection_ranges_for_prefix(prefix))?;
            OpResult::Delete {
                deleted: plain + collections,
            }
        }
        TxnOp::Collection(op) => OpResult::Collection(overlay.apply(op)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use keyplane_contract::CollectionKind;
    use keyplane_contract::raw::layout;
    use keyplane_contract::{Capabilities, CollectionOp};

    fn caps() -> Capabilities {
        crate::MemConfig::default().capabilities()
    }

    #[test]
    fn a_failing_op_rolls_back_the_ops_before_it() {
        let mut state = State::new(10, 100);
        let seed = Txn::new().and_then([TxnOp::put("a", "1"), TxnOp::put("p/1", "x")]);
        seed.validate(&caps()).unwrap();
        state.txn(&seed).unwrap();
        // A list whose item key is malformed makes ListPush fail after two plain writes.
        let mut bad = layout::members_prefix(CollectionKind::List, b"q");
        bad.extend_from_slice(b"not-hex");
        state.members.insert(bad, b"item".to_vec());
        let before_kv: Vec<_> = state
            .kv
            .iter()
            .map(|(k, s)| (k.clone(), s.value.clone(), s.version))
            .collect();
        let before_members = state.members.clone();
        let txn = Txn::new().and_then([
            TxnOp::put("a", "2"),
            TxnOp::delete_prefix("p/"),
            TxnOp::put("new", "v"),
            TxnOp::Collection(CollectionOp::SetAdd {
                key: b"s".to_vec(),
                member: b"m".to_vec(),
            }),
            TxnOp::Collection(CollectionOp::ListPush {
                key: b"q".to_vec(),
                value: b"v".to_vec(),
            }),
        ]);
        txn.validate(&caps()).unwrap();
        let err = state.txn(&txn).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupted);
        let after_kv: Vec<_> = state
            .kv
            .iter()
            .map(|(k, s)| (k.clone(), s.value.clone(), s.version))
            .collect();
        assert_eq!(after_kv, before_kv);
        assert_eq!(state.members, before_members);
        assert_eq!(state.revision, 2);
    }
}
