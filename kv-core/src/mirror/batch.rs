//! What a mirror reports: its batches of changes and its health.

use crate::CollectionEvent;
use crate::Error;
use crate::keyspace::TypedEvent;
use std::time::Duration;

/// Why a [`MirrorBatch`] was published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MirrorCause {
    /// One transaction seen by the watch.
    Watch,
    /// The mirror listed its range again (its watch could not resume): the batch is the
    /// difference between the old view and the new listing.
    Relist,
    /// A periodic resync found the view differing from the store at the same revision: the
    /// batch is the repair.
    Resync,
}

/// The typed changes the mirror applied with one swap of its view, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct MirrorBatch<K, V> {
    /// The revision of the view the batch produced.
    pub revision: i64,
    /// Why it was published.
    pub cause: MirrorCause,
    /// The changes; unreadable keys arrive as [`TypedEvent::Unreadable`].
    pub events: Vec<TypedEvent<K, V>>,
    /// The collection changes, for a mirror [with collections](super::MirrorBuilder::with_collections)
    /// (raw keys: see [`MirrorSnapshot::collection_raw`](super::MirrorSnapshot::collection_raw) for the parsed ones). A relist or
    /// a resync reports a collection that changed as `Deleted` followed by its contents.
    pub collections: Vec<CollectionEvent>,
}

/// How a mirror is doing.
#[derive(Debug, Clone)]
pub struct MirrorHealth {
    /// The revision the published view reflects.
    pub revision: i64,
    /// The keys the view holds (readable ones).
    pub keys: usize,
    /// The keys of the range it could not type.
    pub unreadable: usize,
    /// The collections the view holds.
    pub collections: usize,
    /// The store's revision when the mirror last asked for it.
    pub store_revision: i64,
    /// `store_revision - revision` when the mirror last asked (0 when it was current).
    pub lag_revisions: i64,
    /// How long ago the mirror was last known to reflect the store's revision at that
    /// moment (its listing, a heartbeat, a [`Mirror::wait_for`](super::Mirror::wait_for) check).
    pub since_current: Duration,
    /// Listings after the first (a watch that could not resume).
    pub relists: u64,
    /// Periodic resyncs run.
    pub resyncs: u64,
    /// Keys a resync found differing from the store and repaired.
    pub repaired: u64,
    /// The last error the mirror recovered from (a failed watch or listing), if any.
    pub last_error: Option<Error>,
}
