//! The reference model: a `BTreeMap`, one revision counter and a list of leases, with etcd's
//! semantics, written as plainly as possible.

use super::bytes::Bytes;
use super::collections::{Collections, Touch};
use super::ops::{Cmp, Op, Span, Target, TxnStep};
use super::outcome::{Outcome, Page, Seen, StepResult, lease_index, ordinal, revision};
use keyplane_core::{CompareOp, ErrorKind};
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
struct Stored {
    value: Vec<u8>,
    create: i64,
    modified: i64,
    version: i64,
    lease: Option<usize>,
}

/// The model of one sequence's keys (relative to its root).
#[derive(Debug, Default)]
pub struct Model {
    data: BTreeMap<Vec<u8>, Stored>,
    revision: i64,
    puts: Vec<i64>,
    alive: Vec<bool>,
    collections: Collections,
}

type Checked<T> = Result<T, ErrorKind>;

fn valid(key: &Bytes) -> Checked<()> {
    if key.0.contains(&0) {
        Err(ErrorKind::InvalidKey)
    } else {
        Ok(())
    }
}

impl Model {
    fn seen(&self, key: &[u8], s: &Stored, keys_only: bool) -> Seen {
        Seen {
            key: Bytes(key.to_vec()),
            value: Bytes(if keys_only {
                Vec::new()
            } else {
                s.value.clone()
            }),
            create: ordinal(s.create, &self.puts),
            modified: ordinal(s.modified, &self.puts),
            version: s.version,
            lease: s.lease,
        }
    }

    fn get(&self, key: &[u8]) -> Option<Seen> {
        self.data.get(key).map(|s| self.seen(key, s, false))
    }

    /// The lease a put attaches, or `LeaseNotFound` when it has been revoked.
    fn lease(&self, lease: Option<super::ops::LeaseRef>) -> Checked<Option<usize>> {
        match lease.and_then(|l| lease_index(l, self.alive.len())) {
            Some(i) if !self.alive[i] => Err(ErrorKind::LeaseNotFound),
            other => Ok(other),
        }
    }

    fn write(&mut self, key: &[u8], value: &[u8], lease: Option<usize>, rev: i64) {
        let entry = self.data.entry(key.to_vec()).or_insert(Stored {
            value: Vec::new(),
            create: rev,
            modified: rev,
            version: 0,
            lease: None,
        });
        entry.value = value.to_vec();
        entry.modified = rev;
        entry.version += 1;
        entry.lease = lease;
    }

    fn delete_prefix(&mut self, prefix: &[u8]) -> u64 {
        let doomed: Vec<Vec<u8>> = self
            .data
            .keys()
            .filter(|k| k.starts_with(prefix))
            .cloned()
            .collect();
        for k in &doomed {
            self.data.remove(k);
        }
        let collections = self.collections.delete_where(|k| k.starts_with(prefix));
        doomed.len() as u64 + collections
    }

    /// Deletes the plain key and the collections at `key`; returns how many.
    fn delete_key(&mut self, key: &[u8]) -> u64 {
        let plain = u64::from(self.data.remove(key).is_some());
        plain + self.collections.delete_where(|k| k == key)
    }

    /// Applies `op`, returning what a correct store returns.
    pub fn apply(&mut self, op: &Op) -> Outcome {
        self.try_apply(op).unwrap_or_else(Outcome::Err)
    }

    fn try_apply(&mut self, op: &Op) -> Checked<Outcome> {
        Ok(match op {
            Op::Put {
                key,
                value,
                lease,
                prev,
            } => {
                valid(key)?;
                let lease = self.lease(*lease)?;
                let before = self.get(&key.0).filter(|_| *prev);
                self.revision += 1;
                self.puts.push(self.revision);
                self.write(&key.0, &value.0, lease, self.revision);
                Outcome::Put(before)
            }
            Op::Get(key) => {
                valid(key)?;
                Outcome::Get(self.get(&key.0))
            }
            Op::Range {
                span,
                limit,
                keys_only,
                count_only,
            } => self.range(span, *limit, *keys_only, *count_only)?,
            Op::Delete(key) => {
                valid(key)?;
                let before = self.get(&key.0);
                if self.delete_key(&key.0) > 0 {
                    self.revision += 1;
                }
                Outcome::Deleted(before)
            }
            Op::DeletePrefix(prefix) => {
                valid(prefix)?;
                let n = self.delete_prefix(&prefix.0);
                if n > 0 {
                    self.revision += 1;
                }
                Outcome::DeletedPrefix(n)
            }
            Op::Txn {
                when,
                then,
                otherwise,
            } => self.txn(when, then, otherwise)?,
            Op::Coll(c) => Outcome::Coll(self.collections.apply(c)),
            Op::Grant => {
                self.alive.push(true);
                Outcome::Granted(self.alive.len() - 1)
            }
            Op::Revoke(l) | Op::KeepAlive(l) | Op::TimeToLive(l) => {
                let Some(i) = lease_index(*l, self.alive.len()) else {
                    return Ok(Outcome::NoLease);
                };
                if !self.alive[i] {
                    return Err(ErrorKind::LeaseNotFound);
                }
                let attached: Vec<Vec<u8>> = self
                    .data
                    .iter()
                    .filter(|(_, s)| s.lease == Some(i))
                    .map(|(k, _)| k.clone())
                    .collect();
                match op {
                    Op::Revoke(_) => {
                        self.alive[i] = false;
                        for k in &attached {
                            self.data.remove(k);
                        }
                        if !attached.is_empty() {
                            self.revision += 1;
                        }
                        Outcome::LeaseOk
                    }
                    Op::KeepAlive(_) => Outcome::LeaseOk,
                    _ => Outcome::LeaseKeys(attached.into_iter().map(Bytes).collect()),
                }
            }
        })
    }

    fn range(
        &self,
        span: &Span,
        limit: Option<usize>,
        keys_only: bool,
        count_only: bool,
    ) -> Checked<Outcome> {
        let in_span: Vec<Seen> = match span {
            Span::Prefix(p) => {
                valid(p)?;
                self.data
                    .iter()
                    .filter(|(k, _)| k.starts_with(&p.0))
                    .map(|(k, s)| self.seen(k, s, keys_only))
                    .collect()
            }
            Span::Interval(start, end) => {
                valid(start)?;
                valid(end)?;
                if end.0 < start.0 {
                    return Err(ErrorKind::InvalidArgument);
                }
                self.data
                    .range(start.0.clone()..end.0.clone())
                    .map(|(k, s)| self.seen(k, s, keys_only))
                    .collect()
            }
        };
        if count_only {
            return Ok(Outcome::Count(in_span.len() as u64));
        }
        let size = limit.unwrap_or(usize::MAX);
        let mut pages = Vec::new();
        let mut rest = in_span.as_slice();
        loop {
            let (page, tail) = rest.split_at(size.min(rest.len()));
            pages.push(Page {
                entries: page.to_vec(),
                count: page.len() as u64,
                more: !tail.is_empty(),
            });
            if tail.is_empty() {
                return Ok(Outcome::Pages(pages));
            }
            rest = tail;
        }
    }

    fn holds(&self, cmp: &Cmp) -> bool {
        let stored = self.data.get(&cmp.key.0);
        let ord = |a: i64, b: i64| cmp.op.holds(&a, &b);
        match &cmp.target {
            Target::Value(v) => stored.is_some_and(|s| cmp.op.holds(s.value.as_slice(), &v.0[..])),
            Target::Version(v) => ord(stored.map_or(0, |s| s.version), *v),
            Target::ModRevision(r) => {
                ord(stored.map_or(0, |s| s.modified), revision(*r, &self.puts))
            }
            Target::CreateRevision(r) => {
                ord(stored.map_or(0, |s| s.create), revision(*r, &self.puts))
            }
            Target::Lease(l) => {
                let given = l.and_then(|l| lease_index(l, self.alive.len()));
                let attached = stored.and_then(|s| s.lease);
                match cmp.op {
                    CompareOp::Equal => attached == given,
                    CompareOp::NotEqual => attached != given,
                    _ => unreachable!("lease compares are (in)equalities"),
                }
            }
            Target::Member(kind, member, count) => {
                ord(self.collections.count(*kind, &cmp.key.0, &member.0), *count)
            }
            Target::Field(field, v) => self
                .collections
                .field(&cmp.key.0, &field.0)
                .is_some_and(|value| cmp.op.holds(value.as_slice(), &v.0[..])),
            Target::Size(kind, size) => ord(self.collections.size(*kind, &cmp.key.0), *size),
        }
    }

    fn txn(&mut self, when: &[Cmp], then: &[TxnStep], otherwise: &[TxnStep]) -> Checked<Outcome> {
        for c in when {
            valid(&c.key)?;
        }
        validate_branch(then)?;
        validate_branch(otherwise)?;
        let succeeded = when.iter().all(|c| self.holds(c));
        let branch = if succeeded { then } else { otherwise };
        for step in branch {
            if let TxnStep::Put(_, _, lease) = step {
                self.lease(*lease)?;
            }
        }
        let rev = self.revision + 1;
        // Every put of the branch applies: the txn is a put-bearing write.
        if branch.iter().any(|s| matches!(s, TxnStep::Put(..))) {
            self.puts.push(rev);
        }
        let mut changed = false;
        let mut results = Vec::new();
        for step in branch {
            results.push(match step {
                TxnStep::Get(k) => StepResult::Get(self.get(&k.0)),
                TxnStep::Put(k, v, lease) => {
                    let lease = self.lease(*lease)?;
                    self.write(&k.0, &v.0, lease, rev);
                    changed = true;
                    StepResult::Put
                }
                TxnStep::Delete(k) => {
                    let n = self.delete_key(&k.0);
                    changed |= n > 0;
                    StepResult::Deleted(n)
                }
                TxnStep::DeletePrefix(p) => {
                    let n = self.delete_prefix(&p.0);
                    changed |= n > 0;
                    StepResult::Deleted(n)
                }
                TxnStep::Coll(c) => {
                    changed |= c.touch().is_some();
                    StepResult::Coll(self.collections.apply(c))
                }
            });
        }
        if changed {
            self.revision = rev;
        }
        Ok(Outcome::Txn { succeeded, results })
    }
}

/// What one write of a branch touches.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Write {
    Key(Vec<u8>),
    Coll(Touch),
}

impl Write {
    fn key(&self) -> &[u8] {
        match self {
            Write::Key(k) | Write::Coll(Touch::Member(k, ..) | Touch::List(k)) => k,
        }
    }
}

/// The checks of `Txn::validate` on one branch: valid keys first, in op order; then no key
/// (set member, map field) written twice, no write inside a deleted prefix, no overlapping
/// deleted prefixes. A list may be written several times: its ops apply in order.
fn validate_branch(steps: &[TxnStep]) -> Checked<()> {
    let mut written: Vec<Write> = Vec::new();
    let mut prefixes: Vec<&[u8]> = Vec::new();
    for step in steps {
        match step {
            TxnStep::Get(k) => valid(k)?,
            TxnStep::Put(k, _, _) | TxnStep::Delete(k) => {
                valid(k)?;
                written.push(Write::Key(k.0.clone()));
            }
            TxnStep::DeletePrefix(p) => {
                valid(p)?;
                prefixes.push(&p.0);
            }
            TxnStep::Coll(c) => written.extend(c.touch().map(Write::Coll)),
        }
    }
    written.sort();
    let twice = |w: &[Write]| w[0] == w[1] && !matches!(w[0], Write::Coll(Touch::List(_)));
    if written.windows(2).any(twice) {
        return Err(ErrorKind::TxnConflict);
    }
    for (i, p) in prefixes.iter().enumerate() {
        let overlaps = prefixes[i + 1..]
            .iter()
            .any(|q| q.starts_with(p) || p.starts_with(q));
        if overlaps || written.iter().any(|w| w.key().starts_with(p)) {
            return Err(ErrorKind::TxnConflict);
        }
    }
    Ok(())
}
