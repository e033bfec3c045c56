//! [`rewind`]: a page of a range as it was at a past revision, from the current entries and
//! the events recorded after that revision (their previous entries), for the backends whose
//! storage keeps only the latest state (memory, sled, Redis); [`rewind_with_collections`]
//! does the same for a range that lists collections, rewinding their sizes through their
//! collection events.

use crate::changes::{CollectionChange, CollectionEvent};
use crate::collections::CollectionKind;
use crate::continuation::Continuation;
use crate::entry::Entry;
use crate::error::{Error, ErrorKind, Result};
use crate::range::{CollectionEntry, RangeOptions, RangeResult};
use crate::raw::emulation::merge_page;
use crate::watch::Event;
use std::collections::BTreeMap;

/// How many members a collection had before the transaction that deleted it. The backends
/// that rewind keep one beside each [`CollectionChange::Deleted`] in their event log: the
/// event alone does not say how large the collection was, and a listing at a revision before
/// the delete needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletedSize {
    /// The collection's key.
    pub key: Vec<u8>,
    /// Its kind.
    pub kind: CollectionKind,
    /// How many members, fields or items it had at the start of the transaction.
    pub size: u64,
}

/// One revision of a backend's event log, as [`Touched`] reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Logged {
    /// The revision.
    pub revision: i64,
    /// Its events, with previous entries wherever the key existed.
    pub events: Vec<Event>,
    /// The size before the revision of each collection it deleted (see [`DeletedSize`]).
    pub deleted: Vec<DeletedSize>,
}

impl Logged {
    /// A revision whose log holds these events and no deleted collection sizes.
    pub fn new(revision: i64, events: Vec<Event>) -> Self {
        Logged {
            revision,
            events,
            deleted: Vec::new(),
        }
    }
}

/// What the events after a revision say about the keys of one read.
#[derive(Debug, Default)]
pub struct Touched {
    /// Per key written after the revision: its entry at the revision (`None`: absent).
    at: BTreeMap<Vec<u8>, Option<Entry>>,
    /// For a read that lists collections, per collection changed after the revision: its
    /// changes, ascending, each `Deleted` with the size the log kept for it.
    collections: BTreeMap<(Vec<u8>, CollectionKind), Vec<LoggedChange>>,
}

/// One logged change of a collection: its revision, the change, and for a `Deleted` the
/// size the log kept for it.
type LoggedChange = (i64, CollectionChange, Option<u64>);

impl Touched {
    /// Collects, for every key of `opts`'s effective range that the events after `revision`
    /// wrote, its entry at `revision`: the previous entry of its first event after it; and,
    /// when `opts` lists collections, every change of each collection in the range.
    /// `events` are every revision of the log above `revision`, ascending.
    pub fn new(opts: &RangeOptions, revision: i64, events: &[Logged]) -> Self {
        let (start, end) = opts.effective_bounds();
        let in_read = |key: &[u8]| {
            key >= start.as_slice()
                && end.as_ref().is_none_or(|e| key < e.as_slice())
                && opts.range.contains(key)
        };
        let mut touched = Touched::default();
        for logged in events.iter().filter(|l| l.revision > revision) {
            for event in &logged.events {
                let key = event.key();
                if !in_read(key) {
                    continue;
                }
                match event {
                    Event::Put { prev, .. } | Event::Delete { prev, .. } => {
                        touched
                            .at
                            .entry(key.to_vec())
                            .or_insert_with(|| prev.clone());
                    }
                    Event::Collection(CollectionEvent { key, kind, change })
                        if opts.collections =>
                    {
                        let size = (*change == CollectionChange::Deleted)
                            .then(|| {
                                logged
                                    .deleted
                                    .iter()
                                    .find(|d| d.key == *key && d.kind == *kind)
                                    .map(|d| d.size)
                            })
                            .flatten();
                        touched
                            .collections
                            .entry((key.clone(), *kind))
                            .or_default()
                            .push((logged.revision, change.clone(), size));
                    }
                    Event::Collection(_) => {}
                }
            }
        }
        touched
    }

    /// How many keys and collections of the read were written after the revision: a read
    /// of the current state needs `limit + len() + 1` entries (and collections of each kind)
    /// to be sure of a page of `limit`.
    pub fn len(&self) -> usize {
        self.at.len() + self.collections.len()
    }

    /// Whether no key of the read was written after the revision.
    pub fn is_empty(&self) -> bool {
        self.at.is_empty() && self.collections.is_empty()
    }

    /// How many current entries to read for a page of `opts` (`None`: all of them).
    pub fn fetch_limit(&self, opts: &RangeOptions) -> Option<usize> {
        if opts.count_only {
            return None;
        }
        opts.limit
            .map(|limit| limit.saturating_add(self.len()).saturating_add(1))
    }
}

/// One page of `opts` at `revision`, from `current`: the current entries of the read's
/// effective range in key order, at most [`Touched::fetch_limit`] of them (`complete` when
/// that was all there is), with values unless the read is keys-only. The page's
/// continuation is pinned to `revision`.
pub fn rewind(
    opts: &RangeOptions,
    revision: i64,
    touched: Touched,
    current: Vec<Entry>,
    complete: bool,
) -> RangeResult {
    // Without a complete read, keys past the last current key read are not known yet.
    let horizon = (!complete)
        .then(|| current.last().map(|e| e.key.clone()))
        .flatten();
    let mut entries = entries_at(touched.at, current, horizon.as_deref(), opts.keys_only);
    if opts.count_only {
        return RangeResult {
            collections: Vec::new(),
            count: entries.len() as u64,
            entries: Vec::new(),
            next: None,
            revision,
            groups: None,
        };
    }
    let mut next = None;
    if let Some(limit) = opts.limit
        && entries.len() > limit
    {
        entries.truncate(limit);
        next = entries.last().map(|e| Continuation::after_key(&e.key));
    } else if let Some(h) = horizon {
        next = Some(Continuation::after_key(&h));
    }
    RangeResult {
        collections: Vec::new(),
        count: entries.len() as u64,
        entries,
        next: next.map(|c| c.at_revision(revision)),
        revision,
        groups: None,
    }
}

/// One page of `opts` (a read that lists collections) at `revision`, from the current
/// entries and collections of the read's effective range in key order: at most
/// [`Touched::fetch_limit`] entries and as many collections of each kind (all of them when
/// the fetch limit is `None`), read at the revision of the log's last event. The page's
/// continuation is pinned to `revision`.
///
/// # Errors
/// `Compacted` when a collection of the read was deleted after `revision` by a revision
/// whose log does not say how large it was.
pub fn rewind_with_collections(
    opts: &RangeOptions,
    revision: i64,
    touched: Touched,
    entries: Vec<Entry>,
    collections: Vec<CollectionEntry>,
) -> Result<RangeResult> {
    let Touched {
        at,
        collections: changed,
    } = touched;
    let entries = entries_at(at, entries, None, opts.keys_only || opts.count_only);
    // A collection absent from the current read is empty now: every key the page keeps
    // lies within each source's read (see `merge_page`).
    let mut sizes: BTreeMap<(Vec<u8>, CollectionKind), u64> = collections
        .into_iter()
        .map(|c| ((c.key, c.kind), c.size))
        .collect();
    for (id, changes) in changed {
        let now = sizes.get(&id).copied().unwrap_or(0);
        match size_before(now, &changes)? {
            0 => sizes.remove(&id),
            size => sizes.insert(id, size),
        };
    }
    // Ascending by key then kind, as the map is ordered.
    let collections = sizes
        .into_iter()
        .map(|((key, kind), size)| CollectionEntry { key, kind, size })
        .collect();
    Ok(merge_page(opts, revision, entries, collections))
}

/// The entries at the revision: the current ones of keys not written since, and the
/// entries then of the keys written since (`at`) that existed, up to `horizon` when the
/// current read was partial; values cleared when `keys_only`. In key order.
fn entries_at(
    at: BTreeMap<Vec<u8>, Option<Entry>>,
    current: Vec<Entry>,
    horizon: Option<&[u8]>,
    keys_only: bool,
) -> Vec<Entry> {
    let mut merged: BTreeMap<Vec<u8>, Entry> = current
        .into_iter()
        .filter(|e| !at.contains_key(&e.key))
        .map(|e| (e.key.clone(), e))
        .collect();
    for (key, entry) in at {
        if let Some(mut entry) = entry
            && horizon.is_none_or(|h| key.as_slice() <= h)
        {
            if keys_only {
                entry.value.clear();
            }
            merged.insert(key, entry);
        }
    }
    merged.into_values().collect()
}

/// The size of a collection before `changes` (ascending), from its size `now` after them.
fn size_before(now: u64, changes: &[LoggedChange]) -> Result<u64> {
    let mut size = now;
    for (rev, change, deleted_size) in changes.iter().rev() {
        size = match change {
            CollectionChange::SetAdd { .. }
            | CollectionChange::MapPut { prev: None, .. }
            | CollectionChange::ListPush { .. }
            | CollectionChange::ListPushFront { .. } => size.saturating_sub(1),
            CollectionChange::SetRemove { .. } | CollectionChange::MapDelete { .. } => size + 1,
            CollectionChange::ListRemove { count, .. } => size + count,
            CollectionChange::MapPut { prev: Some(_), .. }
            | CollectionChange::ListRotate { .. } => size,
            CollectionChange::Deleted => deleted_size.ok_or_else(|| {
                Error::compacted(*rev).with_context(
                    "problem",
                    "the log does not say how large a collection deleted then was",
                )
            })?,
        };
    }
    Ok(size)
}

/// Checks a pinned revision against the store: `InvalidArgument` for one after `current`,
/// `Compacted` for one before `oldest` (the oldest revision the store can still read at).
///
/// # Errors
/// As above.
pub fn check_revision(revision: i64, current: i64, oldest: i64) -> Result<()> {
    if revision > current {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("revision {revision} is in the future (the store is at {current})"),
        ));
    }
    if revision < oldest {
        return Err(Error::compacted(oldest));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::range::RangeOptions;

    fn entry(key: &str, value: &str, rev: i64) -> Entry {
        Entry {
            key: key.as_bytes().to_vec(),
            value: value.as_bytes().to_vec(),
            create_revision: rev,
            mod_revision: rev,
            version: 1,
            lease: None,
        }
    }

    fn put(key: &str, value: &str, rev: i64, prev: Option<Entry>) -> Event {
        Event::Put {
            entry: entry(key, value, rev),
            prev,
        }
    }

    #[test]
    fn rewinds_puts_creates_and_deletes() {
        // At revision 3: a=1 (rev 2), b=2 (rev 3), c absent. Then: 4 a=9, 5 c created,
        // 6 b deleted.
        let events = vec![
            Logged::new(4, vec![put("p/a", "9", 4, Some(entry("p/a", "1", 2)))]),
            Logged::new(5, vec![put("p/c", "3", 5, None)]),
            Logged::new(
                6,
                vec![Event::Delete {
                    key: b"p/b".to_vec(),
                    prev: Some(entry("p/b", "2", 3)),
                }],
            ),
        ];
        let current = vec![entry("p/a", "9", 4), entry("p/c", "3", 5)];
        let opts = RangeOptions::prefix("p/");
        let touched = Touched::new(&opts, 3, &events);
        assert_eq!(touched.len(), 3);
        let page = rewind(&opts, 3, touched, current, true);
        let got: Vec<_> = page
            .entries
            .iter()
            .map(|e| (e.key.clone(), e.value.clone()))
            .collect();
        assert_eq!(
            got,
            [
                (b"p/a".to_vec(), b"1".to_vec()),
                (b"p/b".to_vec(), b"2".to_vec())
            ]
        );
        assert_eq!(page.revision, 3);
    }

    #[test]
    fn a_partial_read_pages_without_duplicates() {
        // At revision 1: k0..k9. After it, k0..k4 deleted and z added.
        let mut events = Vec::new();
        for i in 0..5 {
            events.push(Logged::new(
                2 + i,
                vec![Event::Delete {
                    key: format!("k{i}").into_bytes(),
                    prev: Some(entry(&format!("k{i}"), "v", 1)),
                }],
            ));
        }
        events.push(Logged::new(7, vec![put("z", "new", 7, None)]));
        let all_current: Vec<Entry> = (5..10)
            .map(|i| entry(&format!("k{i}"), "v", 1))
            .chain([entry("z", "new", 7)])
            .collect();
        let mut keys = Vec::new();
        let mut opts = RangeOptions::prefix("").limit(3).at_revision(1);
        loop {
            let touched = Touched::new(&opts, 1, &events);
            let (start, _) = opts.effective_bounds();
            let fetch = touched.fetch_limit(&opts).unwrap();
            let candidates: Vec<Entry> = all_current
                .iter()
                .filter(|e| e.key >= start)
                .cloned()
                .collect();
            let complete = candidates.len() <= fetch;
            let current: Vec<Entry> = candidates.into_iter().take(fetch).collect();
            let page = rewind(&opts, 1, touched, current, complete);
            keys.extend(
                page.entries
                    .iter()
                    .map(|e| String::from_utf8(e.key.clone()).unwrap()),
            );
            match page.next {
                Some(next) => {
                    assert_eq!(next.revision(), Some(1));
                    opts = RangeOptions::prefix("").limit(3).after(next);
                }
                None => break,
            }
        }
        let expected: Vec<String> = (0..10).map(|i| format!("k{i}")).collect();
        assert_eq!(keys, expected);
    }

    fn changed(key: &str, kind: CollectionKind, change: CollectionChange) -> Event {
        Event::Collection(CollectionEvent {
            key: key.as_bytes().to_vec(),
            kind,
            change,
        })
    }

    #[test]
    fn rewinds_collection_sizes_through_their_changes() {
        use CollectionKind::{List, Map, Set};
        let member = |m: &str| m.as_bytes().to_vec();
        // At revision 1: set s = {a, b}, map m = {f}, list l = [x, y, x], set gone = {1, 2,
        // 3}. After it: 2 adds c to s and creates new; 3 overwrites f and adds g; 4 removes
        // both x from l and pushes z; 5 deletes gone (it had 3 members) and recreates it
        // with one.
        let events = vec![
            Logged::new(
                2,
                vec![
                    changed(
                        "s",
                        Set,
                        CollectionChange::SetAdd {
                            member: member("c"),
                        },
                    ),
                    changed(
                        "new",
                        Set,
                        CollectionChange::SetAdd {
                            member: member("n"),
                        },
                    ),
                ],
            ),
            Logged::new(
                3,
                vec![
                    changed(
                        "m",
                        Map,
                        CollectionChange::MapPut {
                            field: member("f"),
                            value: member("2"),
                            prev: Some(member("1")),
                        },
                    ),
                    changed(
                        "m",
                        Map,
                        CollectionChange::MapPut {
                            field: member("g"),
                            value: member("1"),
                            prev: None,
                        },
                    ),
                ],
            ),
            Logged::new(
                4,
                vec![
                    changed(
                        "l",
                        List,
                        CollectionChange::ListRemove {
                            item: member("x"),
                            count: 2,
                        },
                    ),
                    changed("l", List, CollectionChange::ListPush { item: member("z") }),
                ],
            ),
            Logged {
                revision: 5,
                events: vec![
                    changed("gone", Set, CollectionChange::Deleted),
                    changed(
                        "gone",
                        Set,
                        CollectionChange::SetAdd {
                            member: member("9"),
                        },
                    ),
                ],
                deleted: vec![DeletedSize {
                    key: b"gone".to_vec(),
                    kind: Set,
                    size: 3,
                }],
            },
        ];
        let now = |key: &str, kind, size| CollectionEntry {
            key: key.as_bytes().to_vec(),
            kind,
            size,
        };
        let current = vec![
            now("gone", Set, 1),
            now("l", List, 2),
            now("m", Map, 2),
            now("new", Set, 1),
            now("s", Set, 3),
        ];
        let opts = RangeOptions::prefix("").with_collections();
        let touched = Touched::new(&opts, 1, &events);
        assert_eq!(touched.len(), 5);
        let page = rewind_with_collections(&opts, 1, touched, Vec::new(), current).unwrap();
        let got: Vec<_> = page
            .collections
            .iter()
            .map(|c| (String::from_utf8(c.key.clone()).unwrap(), c.kind, c.size))
            .collect();
        assert_eq!(
            got,
            [
                ("gone".to_string(), Set, 3),
                ("l".to_string(), List, 3),
                ("m".to_string(), Map, 1),
                ("s".to_string(), Set, 2),
            ]
        );
        // Without the size of the deleted collection, the read cannot go back past it.
        let mut without_size = events.clone();
        without_size[3].deleted.clear();
        let touched = Touched::new(&opts, 1, &without_size);
        let err = rewind_with_collections(&opts, 1, touched, Vec::new(), Vec::new()).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Compacted { .. }), "{err}");
        // At revision 4, only the delete and the new member are rewound.
        let touched = Touched::new(&opts, 4, &events);
        let page =
            rewind_with_collections(&opts, 4, touched, Vec::new(), vec![now("gone", Set, 1)])
                .unwrap();
        assert_eq!(page.collections, [now("gone", Set, 3)]);
        assert_eq!(page.revision, 4);
    }

    #[test]
    fn revisions_are_checked() {
        assert!(check_revision(5, 5, 1).is_ok());
        assert_eq!(
            check_revision(6, 5, 1).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        assert!(matches!(
            check_revision(1, 5, 3).unwrap_err().kind(),
            ErrorKind::Compacted { .. }
        ));
    }
}
