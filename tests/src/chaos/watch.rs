//! The six watch properties of etcd's robustness tests, checked on the recorded watch
//! segments against the acknowledged writes:
//!
//! - **ordered**: within a watch, batch revisions strictly increase, none before the start;
//! - **unique**: no event is delivered twice (within a batch, or by two resumed watches);
//! - **atomic**: a transaction's events arrive in one batch, the same batch on every watch
//!   that delivers it (a pair write's two puts together);
//! - **bookmarkable**: a watch opened from a revision another watch delivered sees exactly
//!   what that watch saw from there on;
//! - **reliable**: every acknowledged write in the watched range, from the start revision up
//!   to the last revision a watch delivered, is delivered at its revision;
//! - **resumable**: the main watch, reopened from the revision after the last one it
//!   delivered whenever it fails, continues without a gap or a duplicate.

use super::history::{Nanos, Record};
use keyplane_core::{CollectionChange, Event, WatchBatch};
use std::collections::{BTreeMap, HashMap};

/// The reason recorded for a watch stream that ended without an error, which the contract
/// forbids ("a watch never just ends").
pub const ENDED_SILENTLY: &str = "the stream ended without an error";

/// An event as one line-safe word: `put,KEY,VALUE,MOD_REVISION`, `del,KEY`,
/// `sadd,KEY,MEMBER`, `srem,KEY,MEMBER`, `cdel,KEY` (a collection deleted), or
/// `other,KEY`.
pub fn event_text(event: &Event) -> String {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    match event {
        Event::Put { entry, .. } => format!(
            "put,{},{},{}",
            text(&entry.key),
            text(&entry.value),
            entry.mod_revision
        ),
        Event::Delete { key, .. } => format!("del,{}", text(key)),
        Event::Collection(c) => match &c.change {
            CollectionChange::SetAdd { member } => {
                format!("sadd,{},{}", text(&c.key), text(member))
            }
            CollectionChange::SetRemove { member } => {
                format!("srem,{},{}", text(&c.key), text(member))
            }
            CollectionChange::Deleted => format!("cdel,{}", text(&c.key)),
            _ => format!("other,{}", text(&c.key)),
        },
    }
}

/// A batch's record.
pub fn batch_record(segment: u32, at: Nanos, batch: &WatchBatch) -> Record {
    Record::Batch {
        segment,
        at,
        revision: batch.revision,
        events: batch.events.iter().map(event_text).collect(),
    }
}

/// One batch as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// When it was received.
    pub at: Nanos,
    /// Its revision.
    pub revision: i64,
    /// Its events.
    pub events: Vec<String>,
}

/// One opened watch and what it delivered until it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// The id.
    pub id: u32,
    /// Whether it is a stretch of the main watch.
    pub main: bool,
    /// Its start revision.
    pub start: i64,
    /// Its batches, as received.
    pub batches: Vec<Batch>,
    /// How it ended.
    pub end: Option<String>,
}

impl Segment {
    /// The last revision it vouches for: its last batch's, or the one before its start.
    pub fn last(&self) -> i64 {
        self.batches.last().map_or(self.start - 1, |b| b.revision)
    }
}

/// The segments in `records`, in the order they were opened.
pub fn segments(records: &[Record]) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::new();
    let mut index = HashMap::new();
    for record in records {
        match record {
            Record::Open {
                segment,
                main,
                start,
                ..
            } => {
                index.insert(*segment, out.len());
                out.push(Segment {
                    id: *segment,
                    main: *main,
                    start: *start,
                    batches: Vec::new(),
                    end: None,
                });
            }
            Record::Batch {
                segment,
                at,
                revision,
                events,
            } => {
                if let Some(&i) = index.get(segment) {
                    out[i].batches.push(Batch {
                        at: *at,
                        revision: *revision,
                        events: events.clone(),
                    });
                }
            }
            Record::End {
                segment, reason, ..
            } => {
                if let Some(&i) = index.get(segment) {
                    out[i].end = Some(reason.clone());
                }
            }
            _ => {}
        }
    }
    out
}

/// A write acknowledged with its revision, and the events it must produce there: each inner
/// list holds the alternatives for one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    /// The operation (for reports).
    pub op: u64,
    /// The write's revision.
    pub revision: i64,
    /// The events, each with its alternatives.
    pub events: Vec<Vec<String>>,
}

/// What the main watch covered without a gap: from its first start to the last revision it
/// delivered, when its stretches are contiguous.
pub fn main_coverage(segments: &[Segment]) -> Option<(i64, i64)> {
    let mut mains = segments.iter().filter(|s| s.main);
    let first = mains.next()?;
    let mut last = first.last();
    for s in mains {
        if s.start != last + 1 {
            return None;
        }
        last = s.last();
    }
    Some((first.start, last))
}

/// Whether a watch's end says `Compacted`: the history it asked for is gone.
fn ended_compacted(end: &str) -> bool {
    end.contains("compacted (oldest retained")
}

/// The watches that ended with `Compacted` although the history they had read was not lost:
/// `kept(revision, events)` says whether the store's final history holds `events` at
/// `revision` (always true in a run that neither compacts nor can lose a write). A watch
/// that ended so after reading nothing is judged by `kept(start - 1, None)`. A false
/// `Compacted` makes every mirror and live reader relist for nothing.
pub fn false_compactions(
    segments: &[Segment],
    kept: impl Fn(i64, Option<&[String]>) -> bool,
) -> Vec<String> {
    segments
        .iter()
        .filter(|s| s.end.as_deref().is_some_and(ended_compacted))
        .filter(|s| match s.batches.last() {
            Some(batch) => kept(batch.revision, Some(&batch.events)),
            None => kept(s.start - 1, None),
        })
        .map(|s| {
            format!(
                "watch compacted: segment {} (from {}) ended after revision {} though the store                  still holds what it read: {}",
                s.id,
                s.start,
                s.last(),
                s.end.as_deref().unwrap_or_default()
            )
        })
        .collect()
}

/// Checks the six properties; returns one line per anomaly.
/// `pairs` are the pair writes, as their value and their two keys.
pub fn check(
    segments: &[Segment],
    expected: &[Expected],
    pairs: &[(String, [String; 2])],
) -> Vec<String> {
    let mut anomalies = Vec::new();
    let mut by_revision: Vec<BTreeMap<i64, Vec<String>>> = Vec::new();
    for s in segments {
        if s.end.as_deref() == Some(ENDED_SILENTLY) {
            anomalies.push(format!(
                "watch reliable: segment {} (from {}) ended without an error after revision {}",
                s.id,
                s.start,
                s.last()
            ));
        }
        let mut previous = s.start - 1;
        let mut map = BTreeMap::new();
        for b in &s.batches {
            if b.revision <= previous {
                anomalies.push(format!(
                    "watch ordered: segment {} (from {}) delivered revision {} after {previous}",
                    s.id, s.start, b.revision
                ));
            }
            previous = previous.max(b.revision);
            if b.events.is_empty() {
                anomalies.push(format!(
                    "watch ordered: segment {} delivered an empty batch at {}",
                    s.id, b.revision
                ));
            }
            let mut sorted = b.events.clone();
            sorted.sort();
            if sorted.windows(2).any(|w| w[0] == w[1]) {
                anomalies.push(format!(
                    "watch unique: segment {} delivered an event twice at {}: {:?}",
                    s.id, b.revision, b.events
                ));
            }
            for e in &b.events {
                if let Some(rest) = e.strip_prefix("put,")
                    && rest.rsplit(',').next() != Some(&b.revision.to_string())
                {
                    anomalies.push(format!(
                        "watch ordered: segment {} delivered {e} in the batch of revision {}",
                        s.id, b.revision
                    ));
                }
            }
            if map.insert(b.revision, sorted).is_some() {
                anomalies.push(format!(
                    "watch unique: segment {} delivered revision {} twice",
                    s.id, b.revision
                ));
            }
        }
        by_revision.push(map);
    }
    // Resumable: each stretch of the main watch starts right after the last revision the
    // previous one delivered, and no revision is delivered by two stretches.
    let mut expected_start: Option<i64> = None;
    for s in segments.iter().filter(|s| s.main) {
        if let Some(start) = expected_start
            && s.start != start
        {
            anomalies.push(format!(
                "watch resumable: the main watch resumed from {} instead of {start}",
                s.start
            ));
        }
        expected_start = Some(s.last() + 1);
    }
    // Atomic and bookmarkable: every two watches agree on every revision both cover.
    for (i, a) in segments.iter().enumerate() {
        for (j, b) in segments.iter().enumerate().skip(i + 1) {
            let (from, to) = (a.start.max(b.start), a.last().min(b.last()));
            if from > to {
                continue;
            }
            let (ma, mb) = (&by_revision[i], &by_revision[j]);
            let revisions: std::collections::BTreeSet<i64> = ma
                .range(from..=to)
                .chain(mb.range(from..=to))
                .map(|(r, _)| *r)
                .collect();
            for r in revisions {
                let (ea, eb) = (ma.get(&r), mb.get(&r));
                if ea != eb {
                    let property = if ea.is_some() && eb.is_some() {
                        "atomic"
                    } else if a.main && b.main {
                        "resumable"
                    } else {
                        "bookmarkable"
                    };
                    anomalies.push(format!(
                        "watch {property}: at revision {r} segment {} (from {}) delivered {:?} \
                         but segment {} (from {}) delivered {:?}",
                        a.id, a.start, ea, b.id, b.start, eb
                    ));
                }
            }
        }
    }
    // Reliable: every acknowledged write reaches every watch that covers its revision.
    for w in expected {
        for (s, map) in segments.iter().zip(&by_revision) {
            if w.revision < s.start || w.revision > s.last() {
                continue;
            }
            let batch = map.get(&w.revision);
            for alternatives in &w.events {
                let found =
                    batch.is_some_and(|events| alternatives.iter().any(|a| events.contains(a)));
                if !found {
                    anomalies.push(format!(
                        "watch reliable: segment {} (from {}, up to {}) lacks {} of op {} at \
                         revision {} (delivered there: {:?})",
                        s.id,
                        s.start,
                        s.last(),
                        alternatives.join(" or "),
                        w.op,
                        w.revision,
                        batch
                    ));
                }
            }
        }
    }
    // Atomic: a pair write's two puts arrive together.
    let pair_value: HashMap<&str, &[String; 2]> = pairs
        .iter()
        .map(|(value, keys)| (value.as_str(), keys))
        .collect();
    for s in segments {
        for b in &s.batches {
            for e in &b.events {
                let Some(rest) = e.strip_prefix("put,") else {
                    continue;
                };
                let mut parts = rest.split(',');
                let (Some(key), Some(value)) = (parts.next(), parts.next()) else {
                    continue;
                };
                let Some(keys) = pair_value.get(value) else {
                    continue;
                };
                let other = if keys[0] == key { &keys[1] } else { &keys[0] };
                {
                    let other = format!("put,{other},{value},{}", b.revision);
                    if !b.events.contains(&other) {
                        anomalies.push(format!(
                            "watch atomic: segment {} delivered {e} without {other} at {}",
                            s.id, b.revision
                        ));
                    }
                }
            }
        }
    }
    anomalies
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(id: u32, main: bool, start: i64, batches: &[(i64, &[&str])]) -> Segment {
        Segment {
            id,
            main,
            start,
            batches: batches
                .iter()
                .map(|(revision, events)| Batch {
                    at: 0,
                    revision: *revision,
                    events: events.iter().map(|e| e.to_string()).collect(),
                })
                .collect(),
            end: None,
        }
    }

    fn put(op: u64, key: &str, value: &str, revision: i64) -> Expected {
        Expected {
            op,
            revision,
            events: vec![vec![format!("put,{key},{value},{revision}")]],
        }
    }

    #[test]
    fn a_compacted_end_is_an_anomaly_unless_what_the_watch_read_was_lost() {
        let compacted = "failed: revision compacted (oldest retained: 4): revisions before 4 \
                         are no longer retained";
        let mut ended = segment(1, true, 1, &[(2, &["put,a,x,2"]), (3, &["put,a,y,3"])]);
        ended.end = Some(compacted.to_string());
        let mut unavailable = segment(2, true, 4, &[]);
        unavailable.end = Some("failed: unavailable: connection dropped".to_string());
        let segments = [ended, unavailable];
        let found = false_compactions(&segments, |_, _| true);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("watch compacted: segment 1"),
            "{found:?}"
        );
        // A failover lost revision 3 as the watch read it: the end is the truth.
        let lost = false_compactions(&segments, |revision, events| {
            revision != 3 || events != Some(&["put,a,y,3".to_string()][..])
        });
        assert_eq!(lost, Vec::<String>::new());
    }

    #[test]
    fn a_clean_resumed_and_bookmarked_history_passes() {
        let segments = [
            segment(1, true, 1, &[(2, &["put,a,x,2"]), (3, &["del,a"])]),
            segment(2, true, 4, &[(5, &["put,a,y,5", "put,b,y,5"])]),
            segment(
                3,
                false,
                3,
                &[(3, &["del,a"]), (5, &["put,b,y,5", "put,a,y,5"])],
            ),
        ];
        let expected = [put(1, "a", "x", 2), put(2, "a", "y", 5)];
        let pairs = [("y".to_string(), ["a".to_string(), "b".to_string()])];
        assert_eq!(check(&segments, &expected, &pairs), Vec::<String>::new());
        assert_eq!(main_coverage(&segments), Some((1, 5)));
    }

    #[test]
    fn a_gap_is_not_reliable() {
        let segments = [segment(
            1,
            true,
            1,
            &[(2, &["put,a,x,2"]), (4, &["put,a,z,4"])],
        )];
        let expected = [
            put(1, "a", "x", 2),
            put(2, "a", "y", 3),
            put(3, "a", "z", 4),
        ];
        let anomalies = check(&segments, &expected, &[]);
        assert_eq!(anomalies.len(), 1, "{anomalies:?}");
        assert!(anomalies[0].starts_with("watch reliable"), "{anomalies:?}");
    }

    #[test]
    fn out_of_order_and_duplicate_batches_are_reported() {
        let segments = [segment(
            1,
            true,
            1,
            &[(3, &["put,a,x,3"]), (3, &["put,a,x,3"]), (2, &["del,a"])],
        )];
        let anomalies = check(&segments, &[], &[]);
        assert!(
            anomalies.iter().any(|a| a.starts_with("watch ordered")),
            "{anomalies:?}"
        );
        assert!(
            anomalies.iter().any(|a| a.starts_with("watch unique")),
            "{anomalies:?}"
        );
    }

    #[test]
    fn a_resumed_watch_that_repeats_or_skips_is_reported() {
        let repeat = [
            segment(1, true, 1, &[(2, &["put,a,x,2"])]),
            segment(2, true, 2, &[(2, &["put,a,x,2"])]),
        ];
        let anomalies = check(&repeat, &[], &[]);
        assert!(
            anomalies.iter().any(|a| a.starts_with("watch resumable")),
            "{anomalies:?}"
        );
        assert_eq!(main_coverage(&repeat), None);
    }

    #[test]
    fn a_split_transaction_or_a_bookmark_that_disagrees_is_reported() {
        let split = [segment(
            1,
            true,
            1,
            &[(2, &["put,a,v,2"]), (3, &["put,b,v,3"])],
        )];
        let pairs = [("v".to_string(), ["a".to_string(), "b".to_string()])];
        let anomalies = check(&split, &[], &pairs);
        assert!(
            anomalies.iter().any(|a| a.starts_with("watch atomic")),
            "{anomalies:?}"
        );
        let bookmark = [
            segment(1, true, 1, &[(2, &["put,a,x,2"]), (3, &["put,a,y,3"])]),
            segment(2, false, 2, &[(3, &["put,a,y,3"])]),
        ];
        let anomalies = check(&bookmark, &[], &[]);
        assert!(
            anomalies
                .iter()
                .any(|a| a.starts_with("watch bookmarkable")),
            "{anomalies:?}"
        );
    }
}
