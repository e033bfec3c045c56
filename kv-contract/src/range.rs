//! Range reads: a key, a prefix or a `[start, end)` interval, paged.
//!
//! A paged read is one consistent view: every page is read at the revision of the first one,
//! which its [`Continuation`] carries, whatever is written between pages. A read can also be
//! pinned to a past revision ([`RangeOptions::at_revision`]): etcd serves it natively, the
//! other backends rewind their current entries through their event log's previous entries.
//! Either works while the backend retains the revision (see
//! [`Capabilities::history_retention`](crate::Capabilities::history_retention)); past that, the
//! read fails with `Compacted`, as a watch from that revision would. This is the consistent
//! starting point of list-then-watch: list at revision R, then watch from R + 1.
//!
//! A range can list the sets, maps and lists in it too ([`RangeOptions::with_collections`]),
//! each with its kind and size, paged and pinned the same way: at a past revision the
//! backends without multi-version storage rewind each collection's size through the
//! collection events logged after it (their logs keep, beside each collection delete, the
//! size the collection had).

use crate::collections::CollectionKind;
use crate::continuation::{Continuation, GroupRevisions};
use crate::entry::Entry;
use crate::error::{Error, Result};
use crate::raw::{prefix_end, validate_key, validate_prefix};

/// Which keys a range read or a watch covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KeyRange {
    /// Exactly one key.
    Key(Vec<u8>),
    /// Every key starting with these bytes (the empty prefix is the whole keyspace).
    Prefix(Vec<u8>),
    /// Keys `k` with `start <= k < end`; `end: None` is unbounded above.
    Interval {
        /// First key included.
        start: Vec<u8>,
        /// First key excluded, or `None` for no upper bound.
        end: Option<Vec<u8>>,
    },
}

impl KeyRange {
    /// The inclusive start and exclusive end (`None` = unbounded) of this range in key order.
    ///
    /// The start is never below `[0x01]`: user keys contain no NUL, and keys starting with NUL
    /// are the reserved collection layout (see [`CollectionOp`](crate::CollectionOp)), which no
    /// range or watch may see.
    pub fn bounds(&self) -> (Vec<u8>, Option<Vec<u8>>) {
        let (start, end) = self.raw_bounds();
        if start.as_slice() < [1u8].as_slice() {
            (vec![1], end)
        } else {
            (start, end)
        }
    }

    fn raw_bounds(&self) -> (Vec<u8>, Option<Vec<u8>>) {
        match self {
            KeyRange::Key(k) => {
                let mut end = k.clone();
                end.push(0);
                (k.clone(), Some(end))
            }
            KeyRange::Prefix(p) => (p.clone(), prefix_end(p)),
            KeyRange::Interval { start, end } => (start.clone(), end.clone()),
        }
    }

    /// The bytes every key of this range starts with: the key, the prefix, or what an
    /// interval's bounds share (nothing for an interval unbounded above).
    ///
    /// ```
    /// use keyplane_contract::KeyRange;
    /// let range = KeyRange::Interval { start: b"app/a1".to_vec(), end: Some(b"app/b".to_vec()) };
    /// assert_eq!(range.shared_prefix(), b"app/");
    /// ```
    pub fn shared_prefix(&self) -> &[u8] {
        match self {
            KeyRange::Key(key) => key,
            KeyRange::Prefix(prefix) => prefix,
            KeyRange::Interval {
                start,
                end: Some(end),
            } => {
                let common = start.iter().zip(end).take_while(|(a, b)| a == b).count();
                &start[..common]
            }
            KeyRange::Interval { end: None, .. } => &[],
        }
    }

    /// Whether `key` lies in this range (reserved keys, starting with NUL, never do).
    pub fn contains(&self, key: &[u8]) -> bool {
        if key.first() == Some(&0) {
            return false;
        }
        match self {
            KeyRange::Key(k) => k == key,
            KeyRange::Prefix(p) => key.starts_with(p),
            KeyRange::Interval { start, end } => {
                key >= start.as_slice() && end.as_ref().is_none_or(|e| key < e.as_slice())
            }
        }
    }

    /// Checks the range's keys against the key rules.
    ///
    /// # Errors
    /// `InvalidKey` for an empty or reserved key, `InvalidArgument` for `start > end`.
    pub fn validate(&self) -> Result<()> {
        match self {
            KeyRange::Key(k) => validate_key(k),
            KeyRange::Prefix(p) => validate_prefix(p, true),
            KeyRange::Interval { start, end } => {
                validate_prefix(start, true)?;
                if let Some(end) = end {
                    validate_prefix(end, true)?;
                    if end < start {
                        return Err(Error::invalid_argument("range end is before its start"));
                    }
                }
                Ok(())
            }
        }
    }
}

/// A range read: which keys, how many, and what to return.
///
/// ```
/// use keyplane_contract::RangeOptions;
/// let opts = RangeOptions::prefix("jxt/tenants/1/").limit(100).keys_only();
/// assert_eq!(opts.limit, Some(100));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeOptions {
    /// The keys covered.
    pub range: KeyRange,
    /// At most this many entries per page (`None`: all of them).
    pub limit: Option<usize>,
    /// Return entries with empty values.
    pub keys_only: bool,
    /// Return no entries, only [`RangeResult::count`].
    pub count_only: bool,
    /// Resume after a previous page (and at its revision).
    pub after: Option<Continuation>,
    /// Read the range as it was at this revision (`None`: the current one, or the
    /// continuation's). Served while the backend retains the revision, else `Compacted`.
    pub revision: Option<i64>,
    /// List the sets, maps and lists whose keys are in the range too
    /// ([`RangeResult::collections`]).
    pub collections: bool,
}

impl RangeOptions {
    /// A read of every key in `range`.
    pub fn new(range: KeyRange) -> Self {
        RangeOptions {
            range,
            limit: None,
            keys_only: false,
            count_only: false,
            after: None,
            revision: None,
            collections: false,
        }
    }

    /// Every key starting with `prefix`.
    pub fn prefix(prefix: impl AsRef<[u8]>) -> Self {
        Self::new(KeyRange::Prefix(prefix.as_ref().to_vec()))
    }

    /// Keys in `[start, end)`.
    pub fn interval(start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Self {
        Self::new(KeyRange::Interval {
            start: start.as_ref().to_vec(),
            end: Some(end.as_ref().to_vec()),
        })
    }

    /// At most `limit` entries in this page.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Values are left empty.
    pub fn keys_only(mut self) -> Self {
        self.keys_only = true;
        self
    }

    /// Only count the keys.
    pub fn count_only(mut self) -> Self {
        self.count_only = true;
        self
    }

    /// Continue after the page that returned `continuation`, at the revision of that page.
    pub fn after(mut self, continuation: Continuation) -> Self {
        self.after = Some(continuation);
        self
    }

    /// List the sets, maps and lists whose keys are in the range too, each with its kind and
    /// size, in [`RangeResult::collections`]. A page then holds at most `limit` distinct keys
    /// of either sort (a key holding a plain value and a collection, which only the ordered
    /// backends allow, counts once and is never split across pages); `count_only` counts
    /// both.
    ///
    /// Every page of such a listing reads the revision of the first, as for plain ranges, and
    /// a listing can be pinned to a past revision ([`RangeOptions::at_revision`]): etcd reads
    /// its collection stamps at that revision, the other backends rewind each collection's
    /// size through the collection events logged after it (see [`CollectionEvent`](crate::CollectionEvent)).
    /// On Redis, a collection that another program changed directly (a raw `SADD`) after the
    /// revision is rewound through the store's own changes only.
    ///
    /// ```
    /// use keyplane_contract::{CollectionKind, CollectionOp, PutOptions, RangeOptions, Store};
    /// # async fn example(store: &dyn keyplane_contract::Store) -> keyplane_contract::Result<()> {
    /// store.put(b"nxc:map:r1:a:default", b"p1", PutOptions::default()).await?;
    /// store.collection(CollectionOp::SetAdd { key: b"nxc:map:r1:a".to_vec(), member: b"p1".to_vec() }).await?;
    /// let page = store.range(RangeOptions::prefix("nxc:").with_collections()).await?;
    /// assert_eq!(page.entries.len(), 1);
    /// assert_eq!(page.collections[0].key, b"nxc:map:r1:a");
    /// assert_eq!((page.collections[0].kind, page.collections[0].size), (CollectionKind::Set, 1));
    /// # Ok(()) }
    /// ```
    pub fn with_collections(mut self) -> Self {
        self.collections = true;
        self
    }

    /// Read the range as it was at `revision` (a snapshot read): every page of a paged read
    /// at one revision sees the same state, whatever is written meanwhile.
    ///
    /// ```
    /// use keyplane_contract::{PutOptions, RangeOptions, Store};
    /// # async fn example(store: &dyn keyplane_contract::Store) -> keyplane_contract::Result<()> {
    /// let before = store.put(b"app/a", b"1", PutOptions::default()).await?.revision;
    /// store.put(b"app/a", b"2", PutOptions::default()).await?;
    /// store.put(b"app/b", b"3", PutOptions::default()).await?;
    /// let then = store.range(RangeOptions::prefix("app/").at_revision(before)).await?;
    /// assert_eq!(then.entries.len(), 1);
    /// assert_eq!(then.entries[0].value, b"1");
    /// assert_eq!(then.revision, before);
    /// # Ok(()) }
    /// ```
    pub fn at_revision(mut self, revision: i64) -> Self {
        self.revision = Some(revision);
        self
    }

    /// The revision this read is pinned to: the explicit one, else the continuation's (`0`,
    /// as in etcd, stands for the current revision).
    pub fn pinned_revision(&self) -> Option<i64> {
        self.revision
            .or_else(|| self.after.as_ref().and_then(|c| c.revision))
            .filter(|&r| r != 0)
    }

    /// The effective `[start, end)` of this read, the continuation applied.
    pub fn effective_bounds(&self) -> (Vec<u8>, Option<Vec<u8>>) {
        let (start, end) = self.range.bounds();
        match &self.after {
            Some(c) if c.key > start => (c.key.clone(), end),
            _ => (start, end),
        }
    }

    /// Checks the range, the limit and the revision.
    ///
    /// # Errors
    /// `InvalidKey` for bad keys; `InvalidArgument` for a zero limit or a negative revision.
    pub fn validate(&self) -> Result<()> {
        self.range.validate()?;
        if self.limit == Some(0) {
            return Err(Error::invalid_argument("a range limit must be at least 1"));
        }
        if let Some(revision) = self.pinned_revision()
            && revision < 0
        {
            return Err(Error::invalid_argument("a range revision is not negative"));
        }
        Ok(())
    }
}

/// A set, map or list listed by a range read [with collections](RangeOptions::with_collections).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CollectionEntry {
    /// The collection's key.
    pub key: Vec<u8>,
    /// Its kind.
    pub kind: CollectionKind,
    /// How many members, fields or items it has (at least one: an empty collection does
    /// not exist).
    pub size: u64,
}

/// One page of a range read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeResult {
    /// The entries, in ascending key order (empty for `count_only`).
    pub entries: Vec<Entry>,
    /// With [`RangeOptions::with_collections`], the collections of the page, ascending by
    /// key then kind; otherwise empty.
    pub collections: Vec<CollectionEntry>,
    /// For `count_only`, the number of keys in the range (from the continuation on), and of
    /// collections when asked for; otherwise the number of entries and collections in this
    /// page.
    pub count: u64,
    /// Where the next page starts, when there are more keys after this page.
    pub next: Option<Continuation>,
    /// The store revision the page was read at (`0` for a read spanning co-location
    /// groups, which has [`groups`](Self::groups) instead).
    pub revision: i64,
    /// On a store sharded into groups
    /// ([`Sharding::HashTagGroups`](crate::Sharding::HashTagGroups)), the revision each
    /// group was read at; `None` on an unsharded store. Every group the store had when the
    /// read began is named (a group with no key in the range too); a later page reads the
    /// same groups at the same revisions.
    pub groups: Option<GroupRevisions>,
}

impl RangeResult {
    /// The answer of a `count_only` read: `count` keys at `revision`, no entries.
    pub fn counted(count: u64, revision: i64) -> Self {
        RangeResult {
            entries: Vec::new(),
            collections: Vec::new(),
            count,
            next: None,
            revision,
            groups: None,
        }
    }

    /// A page of plain entries read at `revision`. When `more` keys follow, the page's
    /// continuation starts after its last entry, pinned to `revision`.
    pub fn page(entries: Vec<Entry>, more: bool, revision: i64) -> Self {
        let next = match entries.last() {
            Some(last) if more => Some(Continuation::after_key(&last.key).at_revision(revision)),
            _ => None,
        };
        RangeResult {
            count: entries.len() as u64,
            entries,
            collections: Vec::new(),
            next,
            revision,
            groups: None,
        }
    }

    /// Whether more keys follow this page.
    pub fn more(&self) -> bool {
        self.next.is_some()
    }
}
