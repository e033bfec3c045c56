//! Which acknowledged writes the final history lacks: after a failover of a deployment whose
//! replication is asynchronous, a write a cut-off master acknowledged without waiting for a
//! replica is gone, while one acknowledged with `wait_replicas` must still be there.

use super::check::effects;
use super::history::{Op, Outcome};
use std::collections::HashMap;

/// The final history: every revision's events, as [`super::watch::event_text`] writes them,
/// read by one watch after the faults, from the run's first revision to its last.
pub type History = HashMap<i64, Vec<String>>;

/// One acknowledged write that the final history lacks.
#[derive(Debug, Clone)]
pub struct Lost {
    /// The client that made it.
    pub client: u32,
    /// Its description, for the report.
    pub text: String,
}

/// The acknowledged writes in `ops` whose events `history` lacks at their revision.
pub fn lost_writes(ops: &[Op], history: &History) -> Vec<Lost> {
    ops.iter()
        .filter(|op| matches!(op.outcome, Outcome::Ok(_)))
        .filter_map(|op| {
            // One list per event the write makes, each holding that event's alternatives.
            let (revision, events) = effects(op)?;
            let there = history.get(&revision);
            let kept = there.is_some_and(|found| {
                events
                    .iter()
                    .all(|alternatives| alternatives.iter().any(|e| found.contains(e)))
            });
            (!kept).then(|| Lost {
                client: op.client,
                text: format!(
                    "op {} by client {} ({:?}, acknowledged at revision {revision}) is missing \
                     from the final history, which has {:?} there",
                    op.id,
                    op.client,
                    op.call,
                    there.cloned().unwrap_or_default()
                ),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chaos::history::{Call, Ret};

    fn put(id: u64, client: u32, key: &str, value: &str, revision: i64) -> Op {
        Op {
            id,
            client,
            call: Call::Put {
                key: key.into(),
                value: value.into(),
            },
            invoke: 0,
            complete: 1,
            outcome: Outcome::Ok(Ret::Written(revision)),
        }
    }

    #[test]
    fn a_write_is_kept_only_with_its_events_at_its_revision() {
        let ops = [
            put(1, 0, "k", "a", 5),
            put(2, 1, "k", "b", 6),
            put(3, 1, "k", "c", 7),
        ];
        let history: History = [
            (5, vec!["put,k,a,5".to_string()]),
            // Revision 6 was reissued by the new master to another write.
            (6, vec!["put,k,z,6".to_string()]),
        ]
        .into_iter()
        .collect();
        let lost = lost_writes(&ops, &history);
        let ids: Vec<u32> = lost.iter().map(|l| l.client).collect();
        assert_eq!(ids, [1, 1]);
        assert!(lost[0].text.contains("op 2"), "{}", lost[0].text);
        assert!(lost[1].text.contains("op 3"), "{}", lost[1].text);
    }
}
