//! Runs a model sequence on a real store and normalises what it returns.

use super::bytes::Bytes;
use super::ops::{Cmp, LeaseRef, Op, Span, Target, TxnStep};
use super::outcome::{Outcome, Page, Seen, StepResult, lease_index, ordinal, revision};
use keyplane_core::{
    Compare, CompareTarget, Entry, KeyRange, LeaseId, OpResult, PutOptions, RangeOptions, Result,
    Store, Txn, TxnOp,
};
use std::sync::Arc;
use std::time::Duration;

/// The lease TTL of a sequence: far longer than any sequence runs, so nothing expires.
const LEASE_TTL: Duration = Duration::from_secs(120);

/// A store under test, with what the sequence has done to it so far.
pub struct Exec {
    store: Arc<dyn Store>,
    root: Vec<u8>,
    leases: Vec<LeaseId>,
    puts: Vec<i64>,
}

impl Exec {
    /// A sequence on `store` under a fresh random root.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Exec {
            store,
            root: format!("model-{}/", uuid::Uuid::new_v4()).into_bytes(),
            leases: Vec::new(),
            puts: Vec::new(),
        }
    }

    fn abs(&self, rel: &Bytes) -> Vec<u8> {
        let mut k = self.root.clone();
        k.extend_from_slice(&rel.0);
        k
    }

    fn lease(&self, lease: Option<LeaseRef>) -> Option<LeaseId> {
        lease
            .and_then(|l| lease_index(l, self.leases.len()))
            .map(|i| self.leases[i])
    }

    fn seen(&self, e: Entry) -> Seen {
        Seen {
            key: Bytes(
                e.key
                    .strip_prefix(self.root.as_slice())
                    .unwrap_or(&e.key)
                    .to_vec(),
            ),
            value: Bytes(e.value),
            create: ordinal(e.create_revision, &self.puts),
            modified: ordinal(e.mod_revision, &self.puts),
            version: e.version,
            lease: e.lease.map(|id| {
                self.leases
                    .iter()
                    .position(|l| *l == id)
                    .unwrap_or(usize::MAX)
            }),
        }
    }

    fn record_put(&mut self, revision: i64) {
        // Revisions of successive writes strictly increase; a regression shows as a mismatch
        // of every later entry.
        self.puts.push(revision);
    }

    /// Runs `op` on the store.
    pub async fn apply(&mut self, op: &Op) -> Outcome {
        match self.try_apply(op).await {
            Ok(outcome) => outcome,
            Err(e) => Outcome::Err(e.kind()),
        }
    }

    async fn try_apply(&mut self, op: &Op) -> Result<Outcome> {
        let store = self.store.clone();
        Ok(match op {
            Op::Put {
                key,
                value,
                lease,
                prev,
            } => {
                let opts = PutOptions {
                    lease: self.lease(*lease),
                    prev: *prev,
                };
                let put = store.put(&self.abs(key), &value.0, opts).await?;
                self.record_put(put.revision);
                Outcome::Put(put.prev.map(|e| self.seen(e)))
            }
            Op::Get(key) => Outcome::Get(store.get(&self.abs(key)).await?.map(|e| self.seen(e))),
            Op::Range {
                span,
                limit,
                keys_only,
                count_only,
            } => {
                let range = match span {
                    Span::Prefix(p) => KeyRange::Prefix(self.abs(p)),
                    Span::Interval(a, b) => KeyRange::Interval {
                        start: self.abs(a),
                        end: Some(self.abs(b)),
                    },
                };
                let mut opts = RangeOptions::new(range);
                opts.limit = *limit;
                opts.keys_only = *keys_only;
                opts.count_only = *count_only;
                if *count_only {
                    return Ok(Outcome::Count(store.range(opts).await?.count));
                }
                let mut pages = Vec::new();
                loop {
                    let page = store.range(opts.clone()).await?;
                    let more = page.next.is_some();
                    pages.push(Page {
                        entries: page.entries.into_iter().map(|e| self.seen(e)).collect(),
                        count: page.count,
                        more,
                    });
                    match page.next {
                        // A runaway pager shows as a mismatch rather than a hang.
                        Some(next) if pages.len() < 1000 => opts = opts.after(next),
                        _ => return Ok(Outcome::Pages(pages)),
                    }
                }
            }
            Op::Delete(key) => Outcome::Deleted(
                store
                    .delete(&self.abs(key))
                    .await?
                    .prev
                    .map(|e| self.seen(e)),
            ),
            Op::DeletePrefix(p) => {
                Outcome::DeletedPrefix(store.delete_prefix(&self.abs(p)).await?.deleted)
            }
            Op::Txn {
                when,
                then,
                otherwise,
            } => {
                let txn = Txn::new()
                    .when(when.iter().map(|c| self.compare(c)))
                    .and_then(then.iter().map(|s| self.txn_op(s)))
                    .or_else(otherwise.iter().map(|s| self.txn_op(s)));
                let resp = store.txn(txn).await?;
                let branch = if resp.succeeded { then } else { otherwise };
                if branch.iter().any(|s| matches!(s, TxnStep::Put(..))) {
                    self.record_put(resp.revision);
                }
                let results = resp
                    .results
                    .into_iter()
                    .map(|r| match r {
                        OpResult::Get(e) => StepResult::Get(e.map(|e| self.seen(e))),
                        OpResult::Put => StepResult::Put,
                        OpResult::Delete { deleted } => StepResult::Deleted(deleted),
                        OpResult::Collection(c) => StepResult::Coll(c),
                    })
                    .collect();
                Outcome::Txn {
                    succeeded: resp.succeeded,
                    results,
                }
            }
            Op::Coll(c) => Outcome::Coll(store.collection(c.to_op(&self.root)).await?),
            Op::Grant => {
                self.leases.push(store.lease_grant(LEASE_TTL).await?.id);
                Outcome::Granted(self.leases.len() - 1)
            }
            Op::Revoke(l) | Op::KeepAlive(l) | Op::TimeToLive(l) => {
                let Some(id) = self.lease(Some(*l)) else {
                    return Ok(Outcome::NoLease);
                };
                match op {
                    Op::Revoke(_) => store.lease_revoke(id).await.map(|()| Outcome::LeaseOk)?,
                    Op::KeepAlive(_) => {
                        store.lease_keep_alive(id).await.map(|_| Outcome::LeaseOk)?
                    }
                    _ => {
                        let info = store.lease_time_to_live(id).await?;
                        let keys = info.keys.iter().map(|k| {
                            Bytes(k.strip_prefix(self.root.as_slice()).unwrap_or(k).to_vec())
                        });
                        Outcome::LeaseKeys(keys.collect())
                    }
                }
            }
        })
    }

    fn compare(&self, c: &Cmp) -> Compare {
        let target = match &c.target {
            Target::Version(v) => CompareTarget::Version(*v),
            Target::ModRevision(r) => CompareTarget::ModRevision(revision(*r, &self.puts)),
            Target::CreateRevision(r) => CompareTarget::CreateRevision(revision(*r, &self.puts)),
            Target::Value(v) => CompareTarget::Value(v.0.clone()),
            Target::Lease(l) => CompareTarget::Lease(self.lease(*l).map_or(0, |id| id.0)),
            Target::Member(kind, member, count) => CompareTarget::Member {
                kind: collection_kind(*kind),
                member: member.0.clone(),
                count: *count,
            },
            Target::Field(field, value) => CompareTarget::Field {
                field: field.0.clone(),
                value: value.0.clone(),
            },
            Target::Size(kind, size) => CompareTarget::Size {
                kind: collection_kind(*kind),
                size: *size,
            },
        };
        Compare::new(self.abs(&c.key), c.op, target)
    }

    fn txn_op(&self, step: &TxnStep) -> TxnOp {
        match step {
            TxnStep::Get(k) => TxnOp::get(self.abs(k)),
            TxnStep::Put(k, v, lease) => TxnOp::Put {
                key: self.abs(k),
                value: v.0.clone(),
                lease: self.lease(*lease),
            },
            TxnStep::Delete(k) => TxnOp::delete(self.abs(k)),
            TxnStep::DeletePrefix(p) => TxnOp::delete_prefix(self.abs(p)),
            TxnStep::Coll(c) => TxnOp::Collection(c.to_op(&self.root)),
        }
    }

    /// The whole root with its collections, read at `revision` (the current one when
    /// `None`) in pages of `page` keys (one page when `None`): the revision read at, every
    /// entry and every collection.
    ///
    /// # Errors
    /// The store's errors; a `Backend` error when a page reads another revision than the
    /// first.
    pub async fn listing(
        &self,
        revision: Option<i64>,
        page: Option<usize>,
    ) -> Result<(i64, Vec<Entry>, Vec<keyplane_core::CollectionEntry>)> {
        let mut opts = RangeOptions::prefix(&self.root).with_collections();
        opts.limit = page;
        if let Some(revision) = revision {
            opts = opts.at_revision(revision);
        }
        let (mut entries, mut collections, mut read_at) = (Vec::new(), Vec::new(), None);
        loop {
            let result = self.store.range(opts.clone()).await?;
            if *read_at.get_or_insert(result.revision) != result.revision {
                return Err(keyplane_core::Error::new(
                    keyplane_core::ErrorKind::Backend,
                    "the pages of one listing read different revisions",
                ));
            }
            entries.extend(result.entries);
            collections.extend(result.collections);
            match result.next {
                Some(next) => opts = opts.after(next),
                None => return Ok((read_at.unwrap_or(0), entries, collections)),
            }
        }
    }

    /// Revokes the sequence's leases and deletes its root, ignoring errors (leases already
    /// revoked).
    pub async fn cleanup(&self) {
        for id in &self.leases {
            let _ = self.store.lease_revoke(*id).await;
        }
        let _ = self.store.delete_prefix(&self.root).await;
    }
}

/// The contract's kind for the model's kind letter (`s`, `m`, `l`).
fn collection_kind(kind: u8) -> keyplane_core::CollectionKind {
    match kind {
        b's' => keyplane_core::CollectionKind::Set,
        b'm' => keyplane_core::CollectionKind::Map,
        _ => keyplane_core::CollectionKind::List,
    }
}
