//! A linearizability checker for one key: the Wing–Gong search with the memoization of
//! Lowe and of porcupine (a set of (linearized operations, state) pairs already explored),
//! over a register or a small set.
//!
//! An operation whose outcome is unknown has an infinite completion time: the search may
//! linearize it anywhere after its invocation or never (a history whose every completed
//! operation is linearized needs nothing more), which is exactly "it may or may not have
//! taken effect". The search is bounded by a step budget; a history that exhausts it is
//! [`Verdict::Inconclusive`], never an anomaly.

use super::history::{NEVER, Nanos};
use std::collections::HashSet;

/// What one operation did to one key, and what it saw (`None`: unknown).
///
/// A register's state is 0 when the key is absent, otherwise the id of its value (ids are
/// unique per written value). A set's state is a bitmask of its members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyCall {
    /// A register read that saw this state.
    Read(u32),
    /// A register write of this value id.
    Write(u32),
    /// A register delete; whether the key existed, when known.
    Delete(Option<bool>),
    /// If the state is `expect`, write `value`; whether it did, when known.
    Cas {
        /// The state expected (0: absent).
        expect: u32,
        /// The value id written.
        value: u32,
        /// Whether the compare held, when known.
        succeeded: Option<bool>,
    },
    /// Add the member bits; whether the set changed, when known.
    SetAdd(u32, Option<bool>),
    /// Remove the member bits; whether the set changed, when known.
    SetRemove(u32, Option<bool>),
    /// Whether the member bit was present.
    SetContains(u32, bool),
    /// The whole set.
    SetMembers(u32),
}

impl KeyCall {
    /// The state after `self` from `state`, or `None` when `self` cannot have seen what it
    /// saw in `state`.
    pub fn step(self, state: u32) -> Option<u32> {
        let agrees = |seen: Option<bool>, actual: bool| seen.is_none_or(|s| s == actual);
        match self {
            KeyCall::Read(seen) => (seen == state).then_some(state),
            KeyCall::Write(value) => Some(value),
            KeyCall::Delete(existed) => agrees(existed, state != 0).then_some(0),
            KeyCall::Cas {
                expect,
                value,
                succeeded,
            } => {
                let holds = state == expect;
                agrees(succeeded, holds).then_some(if holds { value } else { state })
            }
            KeyCall::SetAdd(bit, changed) => {
                agrees(changed, state & bit == 0).then_some(state | bit)
            }
            KeyCall::SetRemove(bit, changed) => {
                agrees(changed, state & bit != 0).then_some(state & !bit)
            }
            KeyCall::SetContains(bit, present) => (present == (state & bit != 0)).then_some(state),
            KeyCall::SetMembers(members) => (members == state).then_some(state),
        }
    }
}

/// One operation on one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyOp {
    /// The operation's id in the run (for reports).
    pub id: u64,
    /// Invocation time.
    pub invoke: Nanos,
    /// Completion time, [`NEVER`] when unknown.
    pub complete: Nanos,
    /// What it did and saw.
    pub call: KeyCall,
}

/// The checker's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Some order of the operations, consistent with real time, explains every answer.
    Linearizable,
    /// None does.
    Violation {
        /// The most operations any attempted order linearized.
        longest: Vec<u64>,
        /// The operation that order could not place before its completion.
        stuck: u64,
    },
    /// The search ran out of its step budget.
    Inconclusive {
        /// Steps taken.
        steps: u64,
    },
}

const NIL: usize = usize::MAX;

/// The doubly linked list of call and return entries that the search lifts operations out
/// of (porcupine's `makeLinkedEntries`). Node 0 is the head; entry `i` is node `i + 1`.
struct Entries {
    next: Vec<usize>,
    prev: Vec<usize>,
    /// For a call node, its operation; for a return node, `NIL`.
    op: Vec<usize>,
    /// For a call node, its return node.
    ret: Vec<usize>,
    /// For a return node, its operation.
    returning: Vec<usize>,
}

impl Entries {
    fn new(ops: &[KeyOp]) -> Self {
        // (time, is return, op): calls sort before returns at equal times, so that touching
        // operations count as concurrent (the permissive reading).
        let mut events: Vec<(Nanos, bool, usize)> = Vec::with_capacity(ops.len() * 2);
        for (i, op) in ops.iter().enumerate() {
            events.push((op.invoke, false, i));
            events.push((op.complete.max(op.invoke), true, i));
        }
        events.sort_unstable();
        let n = events.len() + 1;
        let mut entries = Entries {
            next: (1..=n).map(|i| if i == n { NIL } else { i }).collect(),
            prev: (0..n).map(|i| if i == 0 { NIL } else { i - 1 }).collect(),
            op: vec![NIL; n],
            ret: vec![NIL; n],
            returning: vec![NIL; n],
        };
        let mut call_node = vec![NIL; ops.len()];
        for (i, &(_, is_return, op)) in events.iter().enumerate() {
            if is_return {
                entries.ret[call_node[op]] = i + 1;
                entries.returning[i + 1] = op;
            } else {
                entries.op[i + 1] = op;
                call_node[op] = i + 1;
            }
        }
        entries
    }

    fn unlink(&mut self, node: usize) {
        let (p, n) = (self.prev[node], self.next[node]);
        self.next[p] = n;
        if n != NIL {
            self.prev[n] = p;
        }
    }

    fn relink(&mut self, node: usize) {
        let (p, n) = (self.prev[node], self.next[node]);
        self.next[p] = node;
        if n != NIL {
            self.prev[n] = node;
        }
    }

    /// Takes a call and its return out of the list.
    fn lift(&mut self, call: usize) {
        self.unlink(call);
        self.unlink(self.ret[call]);
    }

    /// Puts them back (in the reverse order of [`lift`](Self::lift)).
    fn unlift(&mut self, call: usize) {
        self.relink(self.ret[call]);
        self.relink(call);
    }
}

/// Checks that `ops` on one key, starting from `initial`, are linearizable, within `budget`
/// steps.
pub fn check(ops: &[KeyOp], initial: u32, budget: u64) -> Verdict {
    let mut entries = Entries::new(ops);
    let words = ops.len().div_ceil(64).max(1);
    let mut linearized = vec![0u64; words];
    let mut cache: HashSet<(Vec<u64>, u32)> = HashSet::new();
    let mut calls: Vec<(usize, u32)> = Vec::new();
    let mut state = initial;
    let mut longest: Vec<u64> = Vec::new();
    let mut stuck = None;
    let mut steps = 0u64;
    let mut node = entries.next[0];
    while node != NIL {
        steps += 1;
        if steps > budget {
            return Verdict::Inconclusive { steps };
        }
        let op = entries.op[node];
        if op != NIL {
            // A call: try to linearize its operation here.
            if let Some(next_state) = ops[op].call.step(state) {
                let mut next = linearized.clone();
                next[op / 64] |= 1 << (op % 64);
                if cache.insert((next.clone(), next_state)) {
                    calls.push((node, state));
                    state = next_state;
                    linearized = next;
                    entries.lift(node);
                    node = entries.next[0];
                    continue;
                }
            }
            node = entries.next[node];
        } else {
            // A return whose operation is not linearized yet.
            let returning = entries.returning[node];
            if ops[returning].complete == NEVER {
                // Only operations of unknown outcome are left: they need not take effect.
                return Verdict::Linearizable;
            }
            if calls.len() >= longest.len() {
                longest = calls.iter().map(|&(c, _)| ops[entries.op[c]].id).collect();
                stuck = Some(ops[returning].id);
            }
            let Some((call, previous)) = calls.pop() else {
                return Verdict::Violation {
                    longest,
                    stuck: stuck.unwrap_or(0),
                };
            };
            state = previous;
            let o = entries.op[call];
            linearized[o / 64] &= !(1 << (o % 64));
            entries.unlift(call);
            node = entries.next[call];
        }
    }
    Verdict::Linearizable
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(id: u64, invoke: Nanos, complete: Nanos, call: KeyCall) -> KeyOp {
        KeyOp {
            id,
            invoke,
            complete,
            call,
        }
    }

    fn linearizable(ops: &[KeyOp]) -> bool {
        match check(ops, 0, 1_000_000) {
            Verdict::Linearizable => true,
            Verdict::Violation { .. } => false,
            Verdict::Inconclusive { .. } => panic!("inconclusive"),
        }
    }

    #[test]
    fn sequential_register_history_passes() {
        let ops = [
            op(1, 0, 1, KeyCall::Write(1)),
            op(2, 2, 3, KeyCall::Read(1)),
            op(3, 4, 5, KeyCall::Delete(Some(true))),
            op(4, 6, 7, KeyCall::Read(0)),
        ];
        assert!(linearizable(&ops));
    }

    #[test]
    fn stale_read_after_an_acknowledged_write_is_rejected() {
        let ops = [
            op(1, 0, 1, KeyCall::Write(1)),
            op(2, 2, 3, KeyCall::Write(2)),
            op(3, 4, 5, KeyCall::Read(1)),
        ];
        assert!(!linearizable(&ops));
    }

    #[test]
    fn lost_acknowledged_write_is_rejected() {
        let ops = [
            op(1, 0, 1, KeyCall::Write(1)),
            op(2, 2, 3, KeyCall::Read(0)),
        ];
        match check(&ops, 0, 1000) {
            Verdict::Violation { stuck, .. } => assert_eq!(stuck, 2),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_compare_and_set_succeeding_twice_is_rejected() {
        // Two CAS from the same expected state cannot both succeed.
        let ops = [
            op(1, 0, 1, KeyCall::Write(1)),
            op(
                2,
                2,
                5,
                KeyCall::Cas {
                    expect: 1,
                    value: 2,
                    succeeded: Some(true),
                },
            ),
            op(
                3,
                2,
                5,
                KeyCall::Cas {
                    expect: 1,
                    value: 3,
                    succeeded: Some(true),
                },
            ),
        ];
        assert!(!linearizable(&ops));
        // One of them failing is fine, whichever it is.
        let mut ok = ops;
        ok[2].call = KeyCall::Cas {
            expect: 1,
            value: 3,
            succeeded: Some(false),
        };
        assert!(linearizable(&ok));
    }

    #[test]
    fn concurrent_overlapping_operations_pass_in_either_order() {
        // A read overlapping a write may see the old or the new value.
        for seen in [0, 1] {
            let ops = [
                op(1, 0, 10, KeyCall::Write(1)),
                op(2, 1, 9, KeyCall::Read(seen)),
                op(3, 11, 12, KeyCall::Read(1)),
            ];
            assert!(linearizable(&ops), "saw {seen}");
        }
        // Two overlapping reads may not disagree with the order of two sequential writes.
        let ops = [
            op(1, 0, 1, KeyCall::Write(1)),
            op(2, 2, 3, KeyCall::Write(2)),
            op(3, 0, 10, KeyCall::Read(2)),
            op(4, 4, 10, KeyCall::Read(1)),
        ];
        assert!(!linearizable(&ops));
    }

    #[test]
    fn unknown_writes_may_or_may_not_take_effect() {
        // Taken effect: a later read sees it.
        let took = [
            op(1, 0, 1, KeyCall::Write(1)),
            op(2, 2, NEVER, KeyCall::Write(2)),
            op(3, 5, 6, KeyCall::Read(2)),
            op(4, 7, 8, KeyCall::Read(2)),
        ];
        assert!(linearizable(&took));
        // Not taken effect: later reads never see it.
        let not = [
            op(1, 0, 1, KeyCall::Write(1)),
            op(2, 2, NEVER, KeyCall::Write(2)),
            op(3, 5, 6, KeyCall::Read(1)),
        ];
        assert!(linearizable(&not));
        // Taken effect late: seen, then not, is impossible.
        let flicker = [
            op(1, 0, 1, KeyCall::Write(1)),
            op(2, 2, NEVER, KeyCall::Write(2)),
            op(3, 5, 6, KeyCall::Read(2)),
            op(4, 7, 8, KeyCall::Read(1)),
        ];
        assert!(!linearizable(&flicker));
        // Nor can an unknown write take effect before it was invoked.
        let early = [
            op(1, 0, 1, KeyCall::Read(2)),
            op(2, 2, NEVER, KeyCall::Write(2)),
        ];
        assert!(!linearizable(&early));
    }

    #[test]
    fn unknown_compare_and_set_and_delete_are_explained_either_way() {
        let ops = [
            op(1, 0, 1, KeyCall::Write(1)),
            op(
                2,
                2,
                NEVER,
                KeyCall::Cas {
                    expect: 1,
                    value: 2,
                    succeeded: None,
                },
            ),
            op(3, 3, NEVER, KeyCall::Delete(None)),
            op(4, 5, 6, KeyCall::Read(2)),
            op(5, 7, 8, KeyCall::Read(0)),
        ];
        assert!(linearizable(&ops));
    }

    #[test]
    fn set_history_is_checked_by_members() {
        let ops = [
            op(1, 0, 1, KeyCall::SetAdd(1, Some(true))),
            op(2, 2, 3, KeyCall::SetAdd(2, Some(true))),
            op(3, 4, 5, KeyCall::SetMembers(3)),
            op(4, 6, 7, KeyCall::SetRemove(1, Some(true))),
            op(5, 8, 9, KeyCall::SetContains(1, false)),
        ];
        assert!(linearizable(&ops));
        // An add that reports a change for a member already there is wrong.
        let mut bad = ops;
        bad[1].call = KeyCall::SetAdd(1, Some(true));
        assert!(!linearizable(&bad));
    }

    #[test]
    fn the_budget_bounds_the_search() {
        // Many concurrent writes and a read of a value none of them wrote: every order fails.
        let mut ops: Vec<KeyOp> = (0..40)
            .map(|i| op(i, 0, 100, KeyCall::Write(i as u32 + 1)))
            .collect();
        ops.push(op(99, 0, 100, KeyCall::Read(1000)));
        assert!(matches!(
            check(&ops, 0, 10_000),
            Verdict::Inconclusive { .. } | Verdict::Violation { .. }
        ));
    }
}
