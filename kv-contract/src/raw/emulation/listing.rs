//! Ranges that list collections: [`list_collections`] finds the sets, maps and lists of an
//! ordered state in a read's range, and [`merge_page`] cuts one page from them and the plain
//! entries, for every backend.

use super::OrderedState;
use crate::collections::CollectionKind;
use crate::continuation::Continuation;
use crate::entry::Entry;
use crate::error::Result;
use crate::range::{CollectionEntry, RangeOptions, RangeResult};
use crate::raw::layout;
use crate::raw::prefix_end;
use std::collections::BTreeSet;

/// Physical entries read per step while grouping members into collections.
const STEP: usize = 256;

/// The collections of `state` (members in the reserved layout) whose keys lie in `opts`'s
/// effective range, ascending by key then kind, with their sizes: every one when `per_kind`
/// is `None`, else at most `per_kind` of each kind (enough for [`merge_page`] to cut a page
/// of `per_kind - 1` keys). Reads the members of the collections it returns: O(their
/// members).
///
/// # Errors
/// Read errors of `state`.
pub fn list_collections(
    opts: &RangeOptions,
    state: &impl OrderedState,
    per_kind: Option<usize>,
) -> Result<Vec<CollectionEntry>> {
    let (start, end) = opts.effective_bounds();
    let mut out = Vec::new();
    for kind in CollectionKind::ALL {
        let tag = layout::kind_prefix(kind, b"");
        let lower = layout::kind_prefix(kind, &start);
        let upper = match &end {
            Some(end) => layout::kind_prefix(kind, end),
            None => prefix_end(&tag).unwrap_or_else(|| vec![0xff; tag.len() + 1]),
        };
        let mut found: Vec<CollectionEntry> = Vec::new();
        let mut from = lower;
        'scan: loop {
            let chunk = state.scan(&from, &upper, Some(STEP))?;
            let Some((last, _)) = chunk.last() else { break };
            let mut next = last.clone();
            next.push(0);
            for (physical, _) in &chunk {
                let rest = &physical[tag.len()..];
                // `\0 tag K \0 member`; a key without the second NUL is a stamp (etcd).
                let Some(nul) = rest.iter().position(|&b| b == 0) else {
                    continue;
                };
                let key = &rest[..nul];
                if key < start.as_slice() || !opts.range.contains(key) {
                    continue;
                }
                match found.last_mut() {
                    Some(last) if last.key == key => last.size += 1,
                    _ => {
                        if per_kind.is_some_and(|n| found.len() == n) {
                            break 'scan;
                        }
                        found.push(CollectionEntry {
                            key: key.to_vec(),
                            kind,
                            size: 1,
                        });
                    }
                }
            }
            if chunk.len() < STEP {
                break;
            }
            from = next;
        }
        out.extend(found);
    }
    out.sort_by(|a, b| (&a.key, a.kind).cmp(&(&b.key, b.kind)));
    Ok(out)
}

/// Cuts a page of plain entries and collections after its `limit`-th distinct key (a key's
/// entry and collections together), when more keys than that were read, or after its last
/// key when the sources say `more` follow; returns the last key kept, where the next page
/// starts after. Nothing is cut without a limit.
pub fn cut_page(
    limit: Option<usize>,
    more: bool,
    entries: &mut Vec<Entry>,
    collections: &mut Vec<CollectionEntry>,
) -> Option<Vec<u8>> {
    let limit = limit?;
    let keys: BTreeSet<&[u8]> = entries
        .iter()
        .map(|e| e.key.as_slice())
        .chain(collections.iter().map(|c| c.key.as_slice()))
        .collect();
    let cut = if keys.len() > limit {
        keys.into_iter().nth(limit - 1)?.to_vec()
    } else if more {
        keys.last()?.to_vec()
    } else {
        return None;
    };
    entries.retain(|e| e.key <= cut);
    collections.retain(|c| c.key <= cut);
    Some(cut)
}

/// One page of `opts` at `revision` from the plain entries and the collections read for it,
/// each ascending and, for a limited read, at most `limit + 1` per source (the plain keys,
/// each kind of collection): the first `limit` distinct keys, a key's entry and collections
/// together, and a continuation pinned to `revision` when more keys follow.
pub fn merge_page(
    opts: &RangeOptions,
    revision: i64,
    mut entries: Vec<Entry>,
    mut collections: Vec<CollectionEntry>,
) -> RangeResult {
    if opts.count_only {
        return RangeResult {
            count: (entries.len() + collections.len()) as u64,
            entries: Vec::new(),
            collections: Vec::new(),
            next: None,
            revision,
            groups: None,
        };
    }
    let next = cut_page(opts.limit, false, &mut entries, &mut collections)
        .map(|cut| Continuation::after_key(&cut).at_revision(revision));
    RangeResult {
        count: (entries.len() + collections.len()) as u64,
        entries,
        collections,
        next,
        revision,
        groups: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn lists_collections_in_the_range_with_sizes() {
        let mut state = BTreeMap::new();
        for (kind, key, member) in [
            (CollectionKind::Set, "a/s", "1"),
            (CollectionKind::Set, "a/s", "2"),
            (CollectionKind::Map, "a/m", "f"),
            (CollectionKind::List, "a/l", "0000000000000000"),
            (CollectionKind::Set, "ab", "x"),
            (CollectionKind::Set, "b/s", "y"),
        ] {
            state.insert(
                layout::member_key(kind, key.as_bytes(), member.as_bytes()),
                Vec::new(),
            );
        }
        // An etcd-style stamp is not a member.
        state.insert(layout::kind_prefix(CollectionKind::Set, b"a/s"), Vec::new());
        let listed = list_collections(&RangeOptions::prefix("a/"), &state, None).unwrap();
        let got: Vec<_> = listed
            .iter()
            .map(|c| (String::from_utf8_lossy(&c.key).into_owned(), c.kind, c.size))
            .collect();
        assert_eq!(
            got,
            [
                ("a/l".to_string(), CollectionKind::List, 1),
                ("a/m".to_string(), CollectionKind::Map, 1),
                ("a/s".to_string(), CollectionKind::Set, 2),
            ]
        );
        let limited = list_collections(&RangeOptions::prefix(""), &state, Some(1)).unwrap();
        assert_eq!(limited.len(), 3, "one of each kind");
    }

    #[test]
    fn a_page_keeps_a_key_whole() {
        let entry = |k: &str| Entry {
            key: k.as_bytes().to_vec(),
            value: Vec::new(),
            create_revision: 1,
            mod_revision: 1,
            version: 1,
            lease: None,
        };
        let coll = |k: &str| CollectionEntry {
            key: k.as_bytes().to_vec(),
            kind: CollectionKind::Set,
            size: 1,
        };
        let opts = RangeOptions::prefix("").limit(2);
        let page = merge_page(
            &opts,
            7,
            vec![entry("a"), entry("c")],
            vec![coll("a"), coll("b"), coll("d")],
        );
        assert_eq!(page.entries.len(), 1);
        assert_eq!(page.collections.len(), 2, "a's set and b");
        assert_eq!(page.next.as_ref().unwrap().start_key(), b"b\0");
        assert_eq!(page.next.unwrap().revision(), Some(7));
    }
}
