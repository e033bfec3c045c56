//! Watches: ordered, gap-free streams of change batches, resumable by revision.

use crate::changes::CollectionEvent;
use crate::continuation::GroupRevisions;
use crate::entry::Entry;
use crate::error::{Error, Result};
use crate::range::{KeyRange, RangeResult};
use futures::stream::BoxStream;
use std::collections::BTreeMap;

/// What to watch and from where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchOptions {
    /// A key or a prefix (or an interval).
    pub range: KeyRange,
    /// Deliver every change with revision `>=` this one; `None` starts after the current
    /// revision; a revision below 1 is refused (`InvalidArgument`). A revision older than
    /// the retained history gives
    /// [`ErrorKind::Compacted`](crate::ErrorKind::Compacted). On a store sharded into
    /// groups, the revision of the one group the range lies in.
    pub start_revision: Option<i64>,
    /// On a store sharded into groups
    /// ([`Sharding::HashTagGroups`](crate::Sharding::HashTagGroups)): the revision each
    /// group's changes are delivered from (inclusive); a group not named is new since these
    /// positions were taken and is delivered from its first revision. Set by
    /// [`WatchOptions::from_position`]; an unsharded store refuses it (`InvalidArgument`),
    /// as does any store when `start_revision` is set too.
    pub group_starts: Option<GroupRevisions>,
    /// Attach the previous entry to each event.
    pub prev: bool,
    /// Also report changes to the sets, maps and lists in the range
    /// ([`Event::Collection`]); plain keys only when false.
    pub collections: bool,
    /// Also send a [progress mark](WatchBatch::is_progress) once the watch has delivered
    /// every change up to the store's revision when it was opened (or a later one).
    pub progress: bool,
}

impl WatchOptions {
    /// Watch one key, from now.
    pub fn key(key: impl AsRef<[u8]>) -> Self {
        WatchOptions {
            range: KeyRange::Key(key.as_ref().to_vec()),
            start_revision: None,
            group_starts: None,
            prev: false,
            collections: false,
            progress: false,
        }
    }

    /// Watch every key under a prefix, from now.
    pub fn prefix(prefix: impl AsRef<[u8]>) -> Self {
        WatchOptions {
            range: KeyRange::Prefix(prefix.as_ref().to_vec()),
            start_revision: None,
            group_starts: None,
            prev: false,
            collections: false,
            progress: false,
        }
    }

    /// Start at `revision` (inclusive).
    pub fn from_revision(mut self, revision: i64) -> Self {
        self.start_revision = Some(revision);
        self
    }

    /// Resume where `position` stands: after the last batch it recorded, or after the range
    /// read it was made from, on every store (per group on a sharded one).
    ///
    /// ```
    /// use futures::StreamExt;
    /// use keyplane_contract::{PutOptions, RangeOptions, Store, WatchOptions, WatchPosition};
    /// # async fn example(store: &dyn keyplane_contract::Store) -> keyplane_contract::Result<()> {
    /// store.put(b"cfg/a", b"1", PutOptions::default()).await?;
    /// let listed = store.range(RangeOptions::prefix("cfg/")).await?;
    /// let mut position = WatchPosition::after_range(&listed);
    /// store.put(b"cfg/b", b"2", PutOptions::default()).await?;
    /// let mut watch = store.watch(WatchOptions::prefix("cfg/").from_position(&position)).await?;
    /// let batch = watch.next().await.unwrap()?;
    /// assert_eq!(batch.events[0].key(), b"cfg/b");
    /// position.record(&batch);
    /// assert_eq!(position.next_revision(), Some(batch.revision + 1));
    /// # Ok(()) }
    /// ```
    pub fn from_position(mut self, position: &WatchPosition) -> Self {
        self.start_revision = position.next;
        self.group_starts = position.groups.clone();
        self
    }

    /// Checks the start positions against a store with `sharded` groups.
    ///
    /// # Errors
    /// `InvalidArgument` for a start revision below 1, for group starts on an unsharded
    /// store, or beside a start revision.
    pub fn check_starts(&self, sharded: bool) -> Result<()> {
        if self.start_revision.is_some_and(|r| r < 1) {
            return Err(Error::invalid_argument(
                "a watch start revision is at least 1 (leave it unset to start from now)",
            )
            .with_context("start_revision", self.start_revision.unwrap_or_default()));
        }
        if self.group_starts.is_some() && !sharded {
            return Err(Error::invalid_argument(
                "group starts are a sharded store's; this store counts one revision sequence \
                 (start the watch from a revision)",
            ));
        }
        if self.group_starts.is_some() && self.start_revision.is_some() {
            return Err(Error::invalid_argument(
                "a watch starts from a revision or from group starts, not both",
            ));
        }
        Ok(())
    }

    /// Attach previous entries to events.
    pub fn with_prev(mut self) -> Self {
        self.prev = true;
        self
    }

    /// Also report changes to the collections whose keys are in the range, as
    /// [`Event::Collection`] (see [`CollectionEvent`](crate::CollectionEvent) for what each reports).
    pub fn with_collections(mut self) -> Self {
        self.collections = true;
        self
    }

    /// Also send a progress mark: a batch without events
    /// ([`WatchBatch::is_progress`]) at a revision at least the store's revision when the
    /// watch was opened, once every change the watch covers up to that revision has been
    /// delivered. A reader that listed or read at revision R, then watches from an older
    /// revision, knows from the mark that it has seen everything up to R, even when nothing
    /// in its range changed.
    ///
    /// Every batch after a mark has a greater revision, with one exception on etcd, where
    /// the mark comes from the range's state (etcd's own progress notifications can overtake
    /// a replay, etcd issue 15220): a key created and deleted again after the start revision
    /// leaves no trace there, so its two events may still arrive after the mark, with
    /// revisions not above it. They change nothing in the state the mark vouches for.
    ///
    /// ```
    /// use futures::StreamExt;
    /// use keyplane_contract::{PutOptions, Store, WatchOptions};
    /// # async fn example(store: &dyn keyplane_contract::Store) -> keyplane_contract::Result<()> {
    /// let first = store.put(b"cfg/a", b"1", PutOptions::default()).await?.revision;
    /// store.put(b"other/b", b"2", PutOptions::default()).await?;
    /// let opts = WatchOptions::prefix("cfg/").from_revision(first).with_progress();
    /// let mut watch = store.watch(opts).await?;
    /// let batch = watch.next().await.unwrap()?;
    /// assert_eq!((batch.revision, batch.events.len()), (first, 1));
    /// let mark = watch.next().await.unwrap()?;
    /// assert!(mark.is_progress());
    /// assert_eq!(mark.revision, first + 1); // nothing else under cfg/ up to now
    /// # Ok(()) }
    /// ```
    pub fn with_progress(mut self) -> Self {
        self.progress = true;
        self
    }

    /// Whether this watch reports `event`: its key is in the range, and a collection event
    /// only when collections were asked for.
    pub fn covers(&self, event: &Event) -> bool {
        self.covers_key(event.key(), event.is_collection())
    }

    /// Whether this watch reports an event of `key` (`collection`: of a set, map or list),
    /// as [`covers`](Self::covers) decides it: for a backend that reads its log without
    /// decoding the events it would drop.
    pub fn covers_key(&self, key: &[u8], collection: bool) -> bool {
        (self.collections || !collection) && self.range.contains(key)
    }

    /// `event` as this watch reports it: without its previous entry unless asked for.
    pub fn shape(&self, event: &Event) -> Event {
        if self.prev {
            event.clone()
        } else {
            event.without_prev()
        }
    }
}

/// One change to one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The key was written; `entry` is its new state.
    Put {
        /// The key's new entry.
        entry: Entry,
        /// The entry before the write, when asked for and the key existed.
        prev: Option<Entry>,
    },
    /// The key was deleted (directly, by prefix, or by its lease expiring).
    Delete {
        /// The deleted key.
        key: Vec<u8>,
        /// The entry before the delete, when asked for.
        prev: Option<Entry>,
    },
    /// A set, map or list changed; reported only by watches that ask for collections
    /// ([`WatchOptions::with_collections`]).
    Collection(CollectionEvent),
}

impl Event {
    /// The key the event is about.
    pub fn key(&self) -> &[u8] {
        match self {
            Event::Put { entry, .. } => &entry.key,
            Event::Delete { key, .. } => key,
            Event::Collection(c) => &c.key,
        }
    }

    /// Whether this is a collection event.
    pub fn is_collection(&self) -> bool {
        matches!(self, Event::Collection(_))
    }

    /// The event without its previous entry (collection events carry what they need).
    pub fn without_prev(&self) -> Event {
        match self {
            Event::Put { entry, .. } => Event::Put {
                entry: entry.clone(),
                prev: None,
            },
            Event::Delete { key, .. } => Event::Delete {
                key: key.clone(),
                prev: None,
            },
            Event::Collection(c) => Event::Collection(c.clone()),
        }
    }
}

/// All events of one transaction within the watched range: its plain events in the order the
/// transaction applied its writes, then its collection events (when asked for), each
/// collection's in the order of its ops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchBatch {
    /// The transaction's revision, or for a progress mark the revision it vouches for; on a
    /// store sharded into groups, its group's revision.
    pub revision: i64,
    /// Its events in the watched range; empty only for a progress mark.
    pub events: Vec<Event>,
    /// On a store sharded into groups
    /// ([`Sharding::HashTagGroups`](crate::Sharding::HashTagGroups)), the co-location group
    /// (hash tag) whose transaction this is; `None` on an unsharded store.
    pub group: Option<Vec<u8>>,
}

impl WatchBatch {
    /// The batch of a transaction at `revision` with these events, on an unsharded store.
    pub fn new(revision: i64, events: Vec<Event>) -> Self {
        WatchBatch {
            revision,
            events,
            group: None,
        }
    }

    /// A progress mark at `revision` (see [`WatchOptions::with_progress`]).
    pub fn progress(revision: i64) -> Self {
        WatchBatch::new(revision, Vec::new())
    }

    /// The same batch, of the co-location group `group`.
    pub fn in_group(mut self, group: impl Into<Vec<u8>>) -> Self {
        self.group = Some(group.into());
        self
    }

    /// Whether this is a progress mark, sent to a watch opened
    /// [with progress](WatchOptions::with_progress): no change, but every change the watch
    /// covers up to [`revision`](Self::revision) has been delivered before it.
    pub fn is_progress(&self) -> bool {
        self.events.is_empty()
    }
}

/// Where a reader stands in a store's changes: the next revision it needs, or on a store
/// sharded into groups the next revision of each group. Made from a range read
/// ([`after_range`](Self::after_range)), moved by each batch delivered
/// ([`record`](Self::record)), and resumed from by [`WatchOptions::from_position`]: the one
/// way to resume that works on every store.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct WatchPosition {
    /// On an unsharded store, the next revision to deliver.
    pub next: Option<i64>,
    /// On a sharded store, the next revision to deliver of each group known; a group not
    /// named is delivered from its first revision.
    pub groups: Option<GroupRevisions>,
}

impl WatchPosition {
    /// The position just after a range read: the revision after the one the read was made
    /// at (or, for a read spanning groups, each group's), so a watch from it sees every
    /// change after the listing, and nothing the listing already holds.
    pub fn after_range(read: &RangeResult) -> Self {
        match &read.groups {
            Some(groups) => WatchPosition {
                next: None,
                groups: Some(groups.iter().map(|(g, r)| (g.clone(), r + 1)).collect()),
            },
            None => WatchPosition {
                next: Some(read.revision + 1),
                groups: None,
            },
        }
    }

    /// Moves past `batch` (a change or a progress mark).
    pub fn record(&mut self, batch: &WatchBatch) {
        let after = batch.revision + 1;
        match &batch.group {
            Some(group) => {
                let next = self
                    .groups
                    .get_or_insert_with(BTreeMap::new)
                    .entry(group.clone())
                    .or_insert(after);
                *next = (*next).max(after);
            }
            None => self.next = Some(self.next.map_or(after, |n| n.max(after))),
        }
    }

    /// The next revision to deliver, on an unsharded store.
    pub fn next_revision(&self) -> Option<i64> {
        self.next
    }

    /// The next revision to deliver of `group`, on a sharded store.
    pub fn group(&self, group: &[u8]) -> Option<i64> {
        self.groups.as_ref().and_then(|g| g.get(group).copied())
    }
}

/// A watch: batches in strictly increasing revision order, with no gaps and no duplicates
/// (a [progress mark](WatchOptions::with_progress), when asked for, may share its revision
/// with the batch before it). On a store sharded into groups the order is each group's: a
/// group's batches come in its revision order, and batches of different groups interleave.
/// It never ends silently: an error item (such as `Compacted`, or `Unavailable` once retries
/// are exhausted) is the last item before the stream ends.
pub type WatchStream = BoxStream<'static, Result<WatchBatch>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_moves_per_group_and_never_back() {
        let read = RangeResult {
            entries: Vec::new(),
            collections: Vec::new(),
            count: 0,
            next: None,
            revision: 0,
            groups: Some([(b"a".to_vec(), 4), (b"b".to_vec(), 0)].into()),
        };
        let mut position = WatchPosition::after_range(&read);
        assert_eq!(position.next_revision(), None);
        assert_eq!(position.group(b"a"), Some(5));
        assert_eq!(position.group(b"b"), Some(1));
        position.record(&WatchBatch::new(7, Vec::new()).in_group(b"a".to_vec()));
        position.record(&WatchBatch::new(2, Vec::new()).in_group(b"c".to_vec()));
        position.record(&WatchBatch::progress(6).in_group(b"a".to_vec()));
        assert_eq!(position.group(b"a"), Some(8));
        assert_eq!(position.group(b"c"), Some(3));
        let opts = WatchOptions::prefix("x").from_position(&position);
        assert_eq!(opts.start_revision, None);
        assert_eq!(opts.group_starts.as_ref().map(BTreeMap::len), Some(3));
        assert!(opts.check_starts(true).is_ok());
        assert!(opts.check_starts(false).is_err());
        let both = WatchOptions {
            start_revision: Some(1),
            ..opts
        };
        assert!(both.check_starts(true).is_err());
    }

    #[test]
    fn an_unsharded_position_follows_the_store_revision() {
        let read = RangeResult::counted(3, 9);
        let mut position = WatchPosition::after_range(&read);
        assert_eq!(position.next_revision(), Some(10));
        position.record(&WatchBatch::new(12, Vec::new()));
        assert_eq!(position.next_revision(), Some(13));
        let opts = WatchOptions::key("k").from_position(&position);
        assert_eq!((opts.start_revision, opts.group_starts), (Some(13), None));
    }
}
