//! [`rewind`]: a page of a range as it was at a past revision, from the current entries and
//! the events recorded after that revision (their previous entries), for the backends whose
//! storage keeps only the latest state (memory, sled, Redis).

use crate::entry::Entry;
use crate::error::{Error, ErrorKind, Result};
use crate::range::{Continuation, RangeOptions, RangeResult};
use crate::watch::Event;
use std::collections::BTreeMap;

/// What the events after a revision say about the keys of one read.
#[derive(Debug, Default)]
pub struct Touched {
    /// Per key written after the revision: its entry at the revision (`None`: absent).
    at: BTreeMap<Vec<u8>, Option<Entry>>,
}

impl Touched {
    /// Collects, for every key of `opts`'s effective range that the events after `revision`
    /// wrote, its entry at `revision`: the previous entry of its first event after it.
    /// `events` are every batch with a revision above `revision`, ascending, with previous
    /// entries wherever the key existed.
    pub fn new(opts: &RangeOptions, revision: i64, events: &[(i64, Vec<Event>)]) -> Self {
        let (start, end) = opts.effective_bounds();
        let in_read = |key: &[u8]| {
            key >= start.as_slice()
                && end.as_ref().is_none_or(|e| key < e.as_slice())
                && opts.range.contains(key)
        };
        let mut at = BTreeMap::new();
        for (_, batch) in events.iter().filter(|(rev, _)| *rev > revision) {
            for event in batch {
                let key = event.key();
                if in_read(key) && !at.contains_key(key) {
                    let prev = match event {
                        Event::Put { prev, .. } | Event::Delete { prev, .. } => prev.clone(),
                        Event::Collection(_) => continue,
                    };
                    at.insert(key.to_vec(), prev);
                }
            }
        }
        Touched { at }
    }

    /// How many keys of the read were written after the revision: a read of the current
    /// state needs `limit + len() + 1` entries to be sure of a page of `limit`.
    pub fn len(&self) -> usize {
        self.at.len()
    }

    /// Whether no key of the read was written after the revision.
    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
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
    let mut merged: BTreeMap<Vec<u8>, Entry> = current
        .into_iter()
        .filter(|e| !touched.at.contains_key(&e.key))
        .map(|e| (e.key.clone(), e))
        .collect();
    for (key, entry) in touched.at {
        if let Some(mut entry) = entry
            && horizon.as_ref().is_none_or(|h| key <= *h)
        {
            if opts.keys_only {
                entry.value.clear();
            }
            merged.insert(key, entry);
        }
    }
    let mut entries: Vec<Entry> = merged.into_values().collect();
    if opts.count_only {
        return RangeResult {
            collections: Vec::new(),
            count: entries.len() as u64,
            entries: Vec::new(),
            next: None,
            revision,
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
    }
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
            (4, vec![put("p/a", "9", 4, Some(entry("p/a", "1", 2)))]),
            (5, vec![put("p/c", "3", 5, None)]),
            (
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
            events.push((
                2 + i,
                vec![Event::Delete {
                    key: format!("k{i}").into_bytes(),
                    prev: Some(entry(&format!("k{i}"), "v", 1)),
                }],
            ));
        }
        events.push((7, vec![put("z", "new", 7, None)]));
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
