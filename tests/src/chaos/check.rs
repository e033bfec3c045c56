//! From a run's records to its anomalies: the operations' revisions checked against each
//! other and against real time, the watch properties, operations of unknown outcome resolved
//! from what the watches delivered, per-key linearizability, and the leases.

use super::history::{Call, NEVER, Op, Outcome, Record, Ret, operations};
use super::linearizability::{self, KeyCall, KeyOp, Verdict};
use super::resolve::{Delivered, resolve};
use super::watch::{self, Expected};
use std::collections::{BTreeMap, HashMap, HashSet};

/// The keys a run's clients use, under one root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The root every key is under (ends with `/`).
    pub root: String,
    /// The plain keys, checked as registers.
    pub registers: Vec<String>,
    /// The set keys.
    pub sets: Vec<String>,
    /// The members sets hold (at most 31).
    pub members: Vec<String>,
    /// The prefix of leased keys (each written once).
    pub leases: String,
    /// The key written once at the end, to learn that the watch has seen everything.
    pub sentinel: String,
}

impl Layout {
    /// `registers` plain keys, `sets` set keys of `members` members, under `root`.
    pub fn new(root: &str, registers: usize, sets: usize, members: usize) -> Self {
        Layout {
            root: root.to_string(),
            registers: (0..registers).map(|i| format!("{root}r/{i}")).collect(),
            sets: (0..sets).map(|i| format!("{root}s/{i}")).collect(),
            members: (0..members.min(31)).map(|i| format!("m{i}")).collect(),
            leases: format!("{root}l/"),
            sentinel: format!("{root}end"),
        }
    }
}

/// What a run's records show.
#[derive(Debug, Clone, Default)]
pub struct Analysis {
    /// Operations invoked.
    pub operations: usize,
    /// Of which answered.
    pub ok: usize,
    /// Of which certainly not applied.
    pub failed: usize,
    /// Of which of unknown outcome.
    pub unknown: usize,
    /// Unknown writes the watches showed applied (given their revision and a completion time).
    pub resolved: usize,
    /// Unknown writes the complete watch showed had no effect (left out).
    pub dropped: usize,
    /// Faults recorded.
    pub faults: usize,
    /// How many faults of each kind (the description without member names and numbers).
    pub fault_kinds: BTreeMap<String, usize>,
    /// Watch segments.
    pub segments: usize,
    /// Watch batches received.
    pub batches: usize,
    /// The anomalies, one line each.
    pub anomalies: Vec<String>,
    /// Keys whose search ran out of budget.
    pub inconclusive: Vec<String>,
}

/// The revision a write created and the events it must produce there, when it wrote.
pub(super) fn effects(op: &Op) -> Option<(i64, Vec<Vec<String>>)> {
    let Outcome::Ok(ret) = &op.outcome else {
        return None;
    };
    let put = |key: &str, value: &str, r: i64| vec![format!("put,{key},{value},{r}")];
    match (&op.call, ret) {
        (Call::Put { key, value }, Ret::Written(r))
        | (Call::Cas { key, value, .. }, Ret::Cas(true, r))
        | (Call::LeasePut { key, value, .. }, Ret::Leased(_, r)) => {
            Some((*r, vec![put(key, value, *r)]))
        }
        (Call::PutPair { keys, value }, Ret::Written(r)) => {
            Some((*r, vec![put(&keys[0], value, *r), put(&keys[1], value, *r)]))
        }
        (Call::Delete { key }, Ret::Deleted(true, r)) => {
            Some((*r, vec![vec![format!("del,{key}")]]))
        }
        (Call::SetAdd { key, member }, Ret::Changed(true, r)) => {
            Some((*r, vec![vec![format!("sadd,{key},{member}")]]))
        }
        (Call::SetRemove { key, member }, Ret::Changed(true, r)) => Some((
            *r,
            vec![vec![format!("srem,{key},{member}"), format!("cdel,{key}")]],
        )),
        _ => None,
    }
}

/// Revisions of acknowledged writes: unique, and increasing with real time.
fn check_revisions(ops: &[Op], anomalies: &mut Vec<String>) {
    let mut writes: Vec<(&Op, i64)> = ops
        .iter()
        .filter(|op| op.complete != NEVER)
        .filter_map(|op| effects(op).map(|(r, _)| (op, r)))
        .collect();
    let mut owner: HashMap<i64, u64> = HashMap::new();
    for (op, r) in &writes {
        if let Some(other) = owner.insert(*r, op.id) {
            anomalies.push(format!(
                "revision: ops {other} and {} both wrote revision {r}",
                op.id
            ));
        }
    }
    // A write invoked after another completed has a greater revision.
    let mut by_complete = writes.clone();
    by_complete.sort_by_key(|(op, _)| op.complete);
    writes.sort_by_key(|(op, _)| op.invoke);
    let mut highest: Option<(i64, u64)> = None;
    let mut i = 0;
    for (op, r) in &writes {
        while i < by_complete.len() && by_complete[i].0.complete < op.invoke {
            let (done, dr) = by_complete[i];
            if highest.is_none_or(|(h, _)| dr > h) {
                highest = Some((dr, done.id));
            }
            i += 1;
        }
        if let Some((h, id)) = highest
            && h >= *r
        {
            anomalies.push(format!(
                "revision: op {} ({}) got revision {r} although op {id} had completed with \
                 revision {h} before it was invoked",
                op.id, op.call
            ));
        }
    }
}

/// The per-key histories of the registers and sets. A register's values are numbered from
/// 1 in the order they appear (0 stands for absent).
fn key_histories(ops: &[Op], layout: &Layout) -> BTreeMap<String, Vec<KeyOp>> {
    let mut out: BTreeMap<String, (Vec<KeyOp>, HashMap<String, u32>)> = BTreeMap::new();
    for key in layout.registers.iter().chain(&layout.sets) {
        out.insert(key.clone(), (Vec::new(), HashMap::new()));
    }
    let bit = |member: &str| {
        layout
            .members
            .iter()
            .position(|m| m == member)
            .map_or(1 << 31, |i| 1u32 << i)
    };
    for op in ops {
        if matches!(op.outcome, Outcome::Fail(_)) {
            continue;
        }
        let ret = match &op.outcome {
            Outcome::Ok(ret) => Some(ret),
            _ => None,
        };
        for key in op.call.keys() {
            let Some((history, values)) = out.get_mut(key) else {
                continue;
            };
            let mut id = |v: &str| {
                let next = u32::try_from(values.len() + 1).unwrap_or(u32::MAX);
                *values.entry(v.to_string()).or_insert(next)
            };
            let call = match (&op.call, ret) {
                (Call::Get { .. }, Some(Ret::Got(seen))) => {
                    KeyCall::Read(seen.as_ref().map_or(0, |(v, _)| id(v)))
                }
                (Call::Put { value, .. } | Call::PutPair { value, .. }, _) => {
                    KeyCall::Write(id(value))
                }
                (Call::Delete { .. }, Some(Ret::Deleted(existed, _))) => {
                    KeyCall::Delete(Some(*existed))
                }
                (Call::Delete { .. }, None) => KeyCall::Delete(None),
                (Call::Cas { expect, value, .. }, ret) => KeyCall::Cas {
                    expect: expect.as_deref().map_or(0, &mut id),
                    value: id(value),
                    succeeded: match ret {
                        Some(Ret::Cas(s, _)) => Some(*s),
                        _ => None,
                    },
                },
                (Call::SetAdd { member, .. }, ret) => KeyCall::SetAdd(
                    bit(member),
                    ret.and_then(|r| match r {
                        Ret::Changed(c, _) => Some(*c),
                        _ => None,
                    }),
                ),
                (Call::SetRemove { member, .. }, ret) => KeyCall::SetRemove(
                    bit(member),
                    ret.and_then(|r| match r {
                        Ret::Changed(c, _) => Some(*c),
                        _ => None,
                    }),
                ),
                (Call::SetContains { member, .. }, Some(Ret::Contains(c))) => {
                    KeyCall::SetContains(bit(member), *c)
                }
                (Call::SetMembers { .. }, Some(Ret::Members(members))) => {
                    KeyCall::SetMembers(members.iter().fold(0, |acc, m| acc | bit(m)))
                }
                // Reads of unknown outcome tell nothing.
                _ => continue,
            };
            history.push(KeyOp {
                id: op.id,
                invoke: op.invoke,
                complete: op.complete,
                call,
            });
        }
    }
    out.into_iter()
        .map(|(key, (history, _))| (key, history))
        .collect()
}

/// Describes a violation: the operation that could not be placed and those around it.
fn describe(ops: &[Op], key: &str, longest: &[u64], stuck: u64) -> String {
    let by_id: HashMap<u64, &Op> = ops.iter().map(|op| (op.id, op)).collect();
    let show = |id: u64| {
        by_id.get(&id).map_or(format!("#{id}"), |op| {
            let complete = if op.complete == NEVER {
                "never".to_string()
            } else {
                format!("{:.6}s", op.complete as f64 / 1e9)
            };
            format!(
                "#{} client {} [{:.6}s, {complete}] {} -> {}",
                op.id,
                op.client,
                op.invoke as f64 / 1e9,
                op.call,
                op.outcome
            )
        })
    };
    let mut text = format!(
        "linearizability: key {key}: no order explains op {}\n      after the longest \
         order found ({} ops), ending with:",
        show(stuck),
        longest.len()
    );
    for id in longest.iter().rev().take(6).rev() {
        text.push_str(&format!("\n        {}", show(*id)));
    }
    if let Some(stuck_op) = by_id.get(&stuck) {
        text.push_str("\n      concurrent with it:");
        for op in ops
            .iter()
            .filter(|op| {
                op.id != stuck
                    && op.call.keys().contains(&key)
                    && op.invoke <= stuck_op.complete
                    && op.complete >= stuck_op.invoke
            })
            .take(8)
        {
            text.push_str(&format!("\n        {}", show(op.id)));
        }
    }
    text
}

/// Leased keys: never gone before their TTL, gone from the watch after it.
fn check_leases(ops: &[Op], delivered: &Delivered, complete: bool, anomalies: &mut Vec<String>) {
    let mut gets: HashMap<&str, Vec<&Op>> = HashMap::new();
    for op in ops {
        if let (Call::Get { key }, Outcome::Ok(_)) = (&op.call, &op.outcome) {
            gets.entry(key.as_str()).or_default().push(op);
        }
    }
    for op in ops {
        let (Call::LeasePut { key, value, ttl_ms }, Outcome::Ok(Ret::Leased(_, revision))) =
            (&op.call, &op.outcome)
        else {
            continue;
        };
        let deadline = op.invoke.saturating_add(ttl_ms * 1_000_000);
        for get in gets.get(key.as_str()).into_iter().flatten() {
            let Outcome::Ok(Ret::Got(seen)) = &get.outcome else {
                continue;
            };
            let wrong_value = seen.as_ref().is_some_and(|(v, _)| v != value);
            let early = seen.is_none() && get.invoke > op.complete && get.complete < deadline;
            if wrong_value || early {
                anomalies.push(format!(
                    "lease: op {} ({}) read {:?} of a key leased by op {} (TTL {ttl_ms} ms, \
                     granted at {:.3}s)",
                    get.id,
                    get.call,
                    seen,
                    op.id,
                    op.invoke as f64 / 1e9
                ));
            }
        }
        let deleted = delivered
            .others
            .get(&format!("del,{key}"))
            .is_some_and(|revs| revs.keys().any(|r| r > revision));
        if complete && !deleted {
            anomalies.push(format!(
                "lease: the watch never delivered the delete of {key} (op {}) after its lease expired",
                op.id
            ));
        }
    }
}

/// Checks a run's records. `end` is the revision of the sentinel write made after the
/// faults stopped; the main watch covered the run completely when it delivered it.
pub fn analyse(records: &[Record], layout: &Layout, end: Option<i64>, budget: u64) -> Analysis {
    let mut ops = operations(records);
    let segments = watch::segments(records);
    let mut a = Analysis {
        operations: ops.len(),
        segments: segments.len(),
        batches: segments.iter().map(|s| s.batches.len()).sum(),
        faults: records
            .iter()
            .filter(|r| matches!(r, Record::Fault { .. }))
            .count(),
        ..Analysis::default()
    };
    for record in records {
        if let Record::Fault { what, .. } = record {
            let kind: Vec<&str> = what
                .split(' ')
                .filter(|w| *w == "-9" || !w.contains(|c: char| c.is_ascii_digit()))
                .collect();
            *a.fault_kinds.entry(kind.join(" ")).or_default() += 1;
        }
    }
    for op in &ops {
        match op.outcome {
            Outcome::Ok(_) => a.ok += 1,
            Outcome::Fail(_) => a.failed += 1,
            Outcome::Unknown(_) => a.unknown += 1,
        }
    }
    check_revisions(&ops, &mut a.anomalies);
    let mut expected = Vec::new();
    let mut claimed = HashSet::new();
    for op in &ops {
        if let Some((revision, events)) = effects(op) {
            claimed.insert(revision);
            expected.push(Expected {
                op: op.id,
                revision,
                events,
            });
        }
    }
    let pairs: Vec<(String, [String; 2])> = ops
        .iter()
        .filter_map(|op| match &op.call {
            Call::PutPair { keys, value } => Some((value.clone(), keys.clone())),
            _ => None,
        })
        .collect();
    a.anomalies
        .extend(watch::check(&segments, &expected, &pairs));
    // The main watch starts before the first operation (the drivers make sure of it), so it
    // covered the whole run when it reached the sentinel without a gap.
    let complete = match (watch::main_coverage(&segments), end) {
        (Some((_, last)), Some(end)) => last >= end,
        _ => false,
    };
    let delivered = Delivered::new(&segments);
    let (resolved, dropped) = resolve(&mut ops, &delivered, &claimed, complete, &mut a.anomalies);
    a.resolved = resolved;
    a.dropped = dropped;
    // A read's mod revision is the revision of the write of the value it read.
    let mut written: HashMap<(&str, &str), i64> = HashMap::new();
    for op in &ops {
        if let (Some((r, _)), Some(value)) = (effects(op), written_value(&op.call)) {
            for key in op.call.keys() {
                written.insert((key, value), r);
            }
        }
    }
    for op in &ops {
        if let (Call::Get { key }, Outcome::Ok(Ret::Got(Some((v, m))))) = (&op.call, &op.outcome)
            && let Some(&r) = written.get(&(key.as_str(), v.as_str()))
            && r != *m
        {
            a.anomalies.push(format!(
                "revision: op {} read {key} = {v} at mod revision {m}, written at revision {r}",
                op.id
            ));
        }
    }
    for (key, history) in key_histories(&ops, layout) {
        match linearizability::check(&history, 0, budget) {
            Verdict::Linearizable => {}
            Verdict::Violation { longest, stuck } => {
                a.anomalies.push(describe(&ops, &key, &longest, stuck));
            }
            Verdict::Inconclusive { steps } => a.inconclusive.push(format!(
                "key {key}: {} ops, search stopped after {steps} steps",
                history.len()
            )),
        }
    }
    check_leases(&ops, &delivered, complete, &mut a.anomalies);
    a
}

fn written_value(call: &Call) -> Option<&str> {
    match call {
        Call::Put { value, .. }
        | Call::PutPair { value, .. }
        | Call::Cas { value, .. }
        | Call::LeasePut { value, .. } => Some(value),
        _ => None,
    }
}
