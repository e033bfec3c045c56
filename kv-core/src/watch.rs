//! Watches: ordered, gap-free streams of change batches, resumable by revision.

use crate::changes::CollectionEvent;
use crate::entry::Entry;
use crate::error::Result;
use crate::range::KeyRange;
use futures::stream::BoxStream;

/// What to watch and from where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchOptions {
    /// A key or a prefix (or an interval).
    pub range: KeyRange,
    /// Deliver every change with revision `>=` this one; `None` starts after the current
    /// revision. A revision older than the retained history gives
    /// [`ErrorKind::Compacted`](crate::ErrorKind::Compacted).
    pub start_revision: Option<i64>,
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

    /// Attach previous entries to events.
    pub fn with_prev(mut self) -> Self {
        self.prev = true;
        self
    }

    /// Also report changes to the collections whose keys are in the range, as
    /// [`Event::Collection`] (see [`changes`](crate::changes) for what each reports).
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
    /// use keyplane_core::{PutOptions, Store, WatchOptions};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> keyplane_core::Result<()> {
    /// let store = keyplane_mem::MemStore::new();
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
        (self.collections || !event.is_collection()) && self.range.contains(event.key())
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
    /// The transaction's revision, or for a progress mark the revision it vouches for.
    pub revision: i64,
    /// Its events in the watched range; empty only for a progress mark.
    pub events: Vec<Event>,
}

impl WatchBatch {
    /// A progress mark at `revision` (see [`WatchOptions::with_progress`]).
    pub fn progress(revision: i64) -> Self {
        WatchBatch {
            revision,
            events: Vec::new(),
        }
    }

    /// Whether this is a progress mark, sent to a watch opened
    /// [with progress](WatchOptions::with_progress): no change, but every change the watch
    /// covers up to [`revision`](Self::revision) has been delivered before it.
    pub fn is_progress(&self) -> bool {
        self.events.is_empty()
    }
}

/// A watch: batches in strictly increasing revision order, with no gaps and no duplicates
/// (a [progress mark](WatchOptions::with_progress), when asked for, may share its revision
/// with the batch before it).
/// It never ends silently: an error item (such as `Compacted`, or `Unavailable` once retries
/// are exhausted) is the last item before the stream ends.
pub type WatchStream = BoxStream<'static, Result<WatchBatch>>;
