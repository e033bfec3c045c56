//! Operations of unknown outcome, settled from what the watches delivered: a write the
//! watch delivered happened at its revision, no later than the watch received it; a write it
//! never delivered, while the main watch covered the whole run without a gap, had no effect
//! (it was not applied, or it changed nothing). A delete or set write, whose events do not
//! name their writer, had no effect when no event it could have made (one no acknowledged
//! write claims, received after the operation was invoked) was delivered.

use super::history::{Call, Nanos, Op, Outcome, Ret};
use super::watch::Segment;
use std::collections::{HashMap, HashSet};

/// What the watches delivered, indexed for resolving unknown writes.
#[derive(Default)]
pub(super) struct Delivered {
    /// (key, value) to (revision, earliest receipt).
    pub(super) puts: HashMap<(String, String), (i64, Nanos)>,
    /// Other events (`del,KEY`, `sadd,KEY,M`, `srem,KEY,M`, `cdel,KEY`) to their revisions
    /// and earliest receipts.
    pub(super) others: HashMap<String, HashMap<i64, Nanos>>,
}

impl Delivered {
    pub(super) fn new(segments: &[Segment]) -> Self {
        let mut d = Delivered::default();
        for s in segments {
            for b in &s.batches {
                for e in &b.events {
                    if let Some(rest) = e.strip_prefix("put,") {
                        let parts: Vec<&str> = rest.split(',').collect();
                        if parts.len() == 3 {
                            let slot = d
                                .puts
                                .entry((parts[0].to_string(), parts[1].to_string()))
                                .or_insert((b.revision, b.at));
                            slot.1 = slot.1.min(b.at);
                        }
                    } else {
                        let at = d
                            .others
                            .entry(e.clone())
                            .or_default()
                            .entry(b.revision)
                            .or_insert(b.at);
                        *at = (*at).min(b.at);
                    }
                }
            }
        }
        d
    }

    /// Whether an event `text` was delivered at a revision no acknowledged write claims,
    /// and received after `after` (an event received before an operation was invoked
    /// happened before it, so it is not that operation's).
    fn unclaimed(&self, text: &str, claimed: &HashSet<i64>, after: Nanos) -> bool {
        self.others.get(text).is_some_and(|revs| {
            revs.iter()
                .any(|(r, at)| !claimed.contains(r) && *at >= after)
        })
    }
}

/// Resolves the unknown writes from the watches: applied (seen at a revision), or without
/// effect (not seen while the main watch covered everything). Returns (resolved, dropped).
pub(super) fn resolve(
    ops: &mut [Op],
    delivered: &Delivered,
    claimed: &HashSet<i64>,
    complete: bool,
    anomalies: &mut Vec<String>,
) -> (usize, usize) {
    let (mut resolved, mut dropped) = (0, 0);
    // Who read which value of which key.
    let mut read: HashMap<(String, String), u64> = HashMap::new();
    for op in ops.iter() {
        if let (Call::Get { key }, Outcome::Ok(Ret::Got(Some((value, _))))) =
            (&op.call, &op.outcome)
        {
            read.entry((key.clone(), value.clone())).or_insert(op.id);
        }
    }
    for op in ops.iter_mut() {
        if !matches!(op.outcome, Outcome::Unknown(_)) || !op.call.is_write() {
            continue;
        }
        let seen = match &op.call {
            Call::Put { key, value }
            | Call::Cas { key, value, .. }
            | Call::LeasePut { key, value, .. } => {
                delivered.puts.get(&(key.clone(), value.clone()))
            }
            Call::PutPair { keys, value } => delivered.puts.get(&(keys[0].clone(), value.clone())),
            _ => None,
        };
        if let Some(&(revision, at)) = seen {
            op.outcome = Outcome::Ok(match &op.call {
                Call::Cas { .. } => Ret::Cas(true, revision),
                Call::LeasePut { .. } => Ret::Leased(0, revision),
                _ => Ret::Written(revision),
            });
            op.complete = at.max(op.invoke);
            resolved += 1;
            continue;
        }
        let effect_seen = match &op.call {
            Call::Put { .. } | Call::Cas { .. } | Call::LeasePut { .. } | Call::PutPair { .. } => {
                false
            }
            Call::Delete { key } => delivered.unclaimed(&format!("del,{key}"), claimed, op.invoke),
            Call::SetAdd { key, member } => {
                delivered.unclaimed(&format!("sadd,{key},{member}"), claimed, op.invoke)
            }
            Call::SetRemove { key, member } => {
                delivered.unclaimed(&format!("srem,{key},{member}"), claimed, op.invoke)
                    || delivered.unclaimed(&format!("cdel,{key}"), claimed, op.invoke)
            }
            _ => true,
        };
        if complete && !effect_seen {
            let reader = match &op.call {
                Call::Put { key, value }
                | Call::Cas { key, value, .. }
                | Call::LeasePut { key, value, .. } => read.get(&(key.clone(), value.clone())),
                Call::PutPair { keys, value } => read
                    .get(&(keys[0].clone(), value.clone()))
                    .or_else(|| read.get(&(keys[1].clone(), value.clone()))),
                _ => None,
            };
            if let Some(reader) = reader {
                // Left unknown: the linearizability check judges the rest.
                anomalies.push(format!(
                    "lost write: op {reader} read the value of op {} ({}), whose outcome was \
                     unknown ({}), but the watch, complete over the run, never delivered that \
                     write: it was visible, then lost (or the watch missed it)",
                    op.id, op.call, op.outcome
                ));
                continue;
            }
            op.outcome = Outcome::Fail("no effect: the complete watch never delivered it".into());
            dropped += 1;
        }
    }
    (resolved, dropped)
}
