//! [`Mirror`]: a typed, always-current local copy of a directory or a keyspace, for the
//! programs that read far more than they write (a configuration provider, a resolver cache,
//! service discovery).
//!
//! A mirror lists its range at one revision R (every page pinned to R), then watches from
//! R + 1 and applies each watch batch, one transaction at a time, to a copy of its current
//! view, which it then publishes with one atomic swap. Readers load the published
//! [`MirrorSnapshot`] without locks and never see half a transaction.
//!
//! - A watch that cannot resume (`Compacted`, or a connection the backend could not
//!   re-establish) makes the mirror list again ([`MirrorHealth::relists`]); subscribers get the
//!   difference as one [`MirrorCause::Relist`] batch.
//! - [`MirrorBuilder::resync_every`] lists the range again at the revision the mirror claims
//!   to reflect and repairs any difference ([`MirrorHealth::repaired`]); none is expected.
//! - [`Mirror::wait_for`] waits until the mirror reflects a revision (read your own writes,
//!   even a write outside the range); [`MirrorBuilder::heartbeat`] keeps an idle mirror
//!   confirmed current.
//! - Keys that do not parse and values that do not decode are kept apart
//!   ([`MirrorSnapshot::unreadable`]), never dropped silently.
//! - Secondary indexes ([`MirrorBuilder::index`]) are maintained with each view.
//! - [`MirrorBuilder::with_collections`] mirrors the sets, maps and lists of the range too
//!   ([`MirrorSnapshot::set`], [`map`](MirrorSnapshot::map), [`list`](MirrorSnapshot::list)),
//!   kept current by their collection events, in the same views as the plain keys: a
//!   transaction that writes a key and a set shows both or neither. Their contents are read
//!   in read-only transactions after the listing, then the watch replays from the listing's
//!   revision until its [progress mark](crate::WatchOptions::with_progress), so the first
//!   view is consistent at one revision.
//!
//! On Redis, what another program writes with raw commands reaches listings and watches
//! through the store's reconciler (`reconcile_roots`), as for any reader; a collection
//! change event that does not fit the contents held (the view drifted) makes the mirror list
//! again, and a periodic [resync](MirrorBuilder::resync_every) repairs any other drift.
//!
//! ```
//! use keyplane_core::keyspace::{Key, Prefix, Text, TypedStore};
//!
//! #[derive(Key, Debug, Clone, PartialEq)]
//! #[kv(template = "cfg/{service}", value = Text)]
//! struct ConfigKey { service: u64 }
//!
//! #[derive(Prefix, Debug, Clone, PartialEq)]
//! #[kv(template = "cfg/", key = ConfigKey)]
//! struct ConfigDir {}
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> keyplane_core::Result<()> {
//! let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
//! typed.put(&ConfigKey { service: 1 }, &"debug=false".to_string()).await?;
//!
//! let mirror = typed
//!     .mirror(&ConfigDir {})?
//!     .index("value", |_, value: &String| vec![value.clone()])
//!     .start()
//!     .await?;
//! let written = typed.put(&ConfigKey { service: 2 }, &"debug=true".to_string()).await?;
//! let view = mirror.wait_for(written).await?; // read your own write
//! assert_eq!(view.len(), 2);
//! assert_eq!(view.get(&ConfigKey { service: 2 }).unwrap().value, "debug=true");
//! assert_eq!(view.lookup("value", "debug=false").count(), 1);
//! # Ok(()) }
//! ```

mod snapshot;
mod task;

pub use snapshot::MirrorSnapshot;

use crate::changes::CollectionEvent;
use crate::entry::Entry;
use crate::error::{Error, ErrorKind, Result};
use crate::keyspace::facade::{common_root, parse_keyspace};
use crate::keyspace::{Bytes, Keyspace, ListPrefix, TypedEvent, TypedStore, ValueOf, Versioned};
use crate::store::Store;
use arc_swap::ArcSwap;
use futures::Stream;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

type ParseFn<K> = Arc<dyn Fn(&[u8]) -> Result<K> + Send + Sync>;
type DecodeFn<K, V> = Arc<dyn Fn(&K, &Entry) -> Result<Versioned<V>> + Send + Sync>;
type IndexFn<K, V> = Arc<dyn Fn(&K, &V) -> Vec<String> + Send + Sync>;

/// Parses raw keys and decodes entries of a mirrored range.
pub(crate) struct Typer<K, V> {
    parse: ParseFn<K>,
    decode: DecodeFn<K, V>,
}

impl<K, V> Clone for Typer<K, V> {
    fn clone(&self) -> Self {
        Typer {
            parse: Arc::clone(&self.parse),
            decode: Arc::clone(&self.decode),
        }
    }
}

impl<K, V> Typer<K, V> {
    fn type_entry(&self, entry: &Entry) -> Result<(K, Versioned<V>)> {
        let key = (self.parse)(&entry.key)?;
        let value = (self.decode)(&key, entry)?;
        Ok((key, value))
    }
}

/// A secondary index: the values a key is found under.
pub(crate) struct Indexer<K, V> {
    name: &'static str,
    f: IndexFn<K, V>,
}

impl<K, V> Clone for Indexer<K, V> {
    fn clone(&self) -> Self {
        Indexer {
            name: self.name,
            f: Arc::clone(&self.f),
        }
    }
}

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
    /// The collection changes, for a mirror [with collections](MirrorBuilder::with_collections)
    /// (raw keys: see [`MirrorSnapshot::collection_raw`] for the parsed ones). A relist or
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
    /// moment (its listing, a heartbeat, a [`Mirror::wait_for`] check).
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

/// What the mirror's task shares with its handles.
pub(crate) struct Shared<K, V> {
    current: ArcSwap<MirrorSnapshot<K, V>>,
    revision: watch::Sender<i64>,
    subscribers: Mutex<Vec<mpsc::UnboundedSender<MirrorBatch<K, V>>>>,
    health: Mutex<Stats>,
}

pub(crate) struct Stats {
    store_revision: i64,
    current_at: Instant,
    relists: u64,
    resyncs: u64,
    repaired: u64,
    last_error: Option<Error>,
}

struct Handle<K, V> {
    shared: Arc<Shared<K, V>>,
    confirm: mpsc::UnboundedSender<i64>,
    task: tokio::task::JoinHandle<()>,
}

impl<K, V> Drop for Handle<K, V> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A typed local copy of a directory ([`TypedStore::mirror`]) or of a whole keyspace
/// ([`TypedStore::mirror_keyspace`]), kept current by a background task; see the
/// [module documentation](self).
///
/// Cheap to clone: clones share the copy; the task stops when the last clone is dropped.
pub struct Mirror<K, V> {
    handle: Arc<Handle<K, V>>,
}

impl<K, V> Clone for Mirror<K, V> {
    fn clone(&self) -> Self {
        Mirror {
            handle: Arc::clone(&self.handle),
        }
    }
}

impl<K, V> fmt::Debug for Mirror<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let view = self.handle.shared.current.load();
        f.debug_struct("Mirror")
            .field("revision", &view.revision())
            .field("keys", &view.len())
            .finish()
    }
}

impl<K, V> Mirror<K, V>
where
    K: Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// The current view: loaded without locks, never half a transaction.
    pub fn snapshot(&self) -> Arc<MirrorSnapshot<K, V>> {
        self.handle.shared.current.load_full()
    }

    /// The revision the current view reflects.
    pub fn revision(&self) -> i64 {
        self.handle.shared.current.load().revision()
    }

    /// The view once it reflects the store at `revision` or later: after a write returned
    /// `revision`, the mirror shows it (or something newer). A revision no write under the
    /// range reached is confirmed by reopening the watch from the view's revision with a
    /// [progress mark](crate::WatchOptions::with_progress): nothing is listed again.
    ///
    /// # Errors
    /// `Unavailable` when the mirror's task has stopped.
    pub async fn wait_for(&self, revision: i64) -> Result<Arc<MirrorSnapshot<K, V>>> {
        let mut seen = self.handle.shared.revision.subscribe();
        loop {
            if *seen.borrow_and_update() >= revision {
                return Ok(self.snapshot());
            }
            let _ = self.handle.confirm.send(revision);
            if seen.changed().await.is_err() {
                return Err(Error::new(
                    ErrorKind::Unavailable,
                    "the mirror's task has stopped",
                ));
            }
        }
    }

    /// The typed changes from now on, one [`MirrorBatch`] per published view, in order: each
    /// change exactly once, after it is visible in [`snapshot`](Self::snapshot). The stream
    /// buffers what its reader has not taken yet.
    pub fn subscribe(&self) -> MirrorSubscription<K, V> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.handle
            .shared
            .subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(tx);
        MirrorSubscription { rx }
    }

    /// How the mirror is doing.
    pub fn health(&self) -> MirrorHealth {
        let view = self.handle.shared.current.load();
        let stats = self
            .handle
            .shared
            .health
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        MirrorHealth {
            revision: view.revision(),
            keys: view.len(),
            unreadable: view.unreadable.len(),
            collections: view.collection_count(),
            store_revision: stats.store_revision,
            lag_revisions: (stats.store_revision - view.revision()).max(0),
            since_current: stats.current_at.elapsed(),
            relists: stats.relists,
            resyncs: stats.resyncs,
            repaired: stats.repaired,
            last_error: stats.last_error.clone(),
        }
    }
}

/// The stream of a mirror's [`MirrorBatch`]es ([`Mirror::subscribe`]); it ends when the
/// mirror stops.
pub struct MirrorSubscription<K, V> {
    rx: mpsc::UnboundedReceiver<MirrorBatch<K, V>>,
}

impl<K, V> Stream for MirrorSubscription<K, V> {
    type Item = MirrorBatch<K, V>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().rx.poll_recv(cx)
    }
}

impl<K, V> fmt::Debug for MirrorSubscription<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MirrorSubscription").finish_non_exhaustive()
    }
}

/// Sets a mirror up: its indexes, resync and heartbeat periods, then
/// [`start`](Self::start).
pub struct MirrorBuilder<K, V> {
    store: Arc<dyn Store>,
    range: Vec<u8>,
    typer: Typer<K, V>,
    indexers: Vec<Indexer<K, V>>,
    resync_every: Option<Duration>,
    heartbeat: Option<Duration>,
    page_size: usize,
    collections: bool,
}

impl<K, V> fmt::Debug for MirrorBuilder<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MirrorBuilder")
            .field("range", &crate::entry::escape_bytes(&self.range))
            .field(
                "indexes",
                &self.indexers.iter().map(|i| i.name).collect::<Vec<_>>(),
            )
            .field("resync_every", &self.resync_every)
            .field("heartbeat", &self.heartbeat)
            .field("page_size", &self.page_size)
            .field("collections", &self.collections)
            .finish()
    }
}

impl TypedStore {
    /// A mirror of the directory `prefix`, typed as its key type.
    ///
    /// # Errors
    /// `InvalidKey` for a prefix that does not end with its separator; `Config` when the
    /// key's codec needs state this typed store was not given.
    pub fn mirror<P: ListPrefix>(
        &self,
        prefix: &P,
    ) -> Result<MirrorBuilder<P::Key, ValueOf<P::Key>>>
    where
        ValueOf<P::Key>: Clone,
    {
        let range = crate::keyspace::facade::prefix_bytes(prefix)?;
        let codec = Arc::new(self.codec::<P::Key>()?);
        let typer = Typer {
            parse: Arc::new(crate::keyspace::facade::parse_key::<P::Key>),
            decode: Arc::new(move |_: &P::Key, entry: &Entry| Versioned::decode(&*codec, entry)),
        };
        Ok(MirrorBuilder::new(Arc::clone(self.store()), range, typer))
    }

    /// A mirror of every key of a keyspace (the longest literal prefix its templates share),
    /// parsed into the keyspace's enum; values stay bytes, as in
    /// [`watch_keyspace`](TypedStore::watch_keyspace).
    pub fn mirror_keyspace<S: Keyspace + Clone>(&self) -> MirrorBuilder<S, Vec<u8>> {
        let templates: Vec<_> = S::templates().iter().map(|t| t.template).collect();
        let typer = Typer {
            parse: Arc::new(parse_keyspace::<S>),
            decode: Arc::new(|_: &S, entry: &Entry| Versioned::decode(&Bytes, entry)),
        };
        MirrorBuilder::new(Arc::clone(self.store()), common_root(&templates), typer)
    }
}

impl<K, V> MirrorBuilder<K, V>
where
    K: Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    fn new(store: Arc<dyn Store>, range: Vec<u8>, typer: Typer<K, V>) -> Self {
        MirrorBuilder {
            store,
            range,
            typer,
            indexers: Vec::new(),
            resync_every: None,
            heartbeat: Some(Duration::from_secs(5)),
            page_size: 1000,
            collections: false,
        }
    }

    /// Decodes values with `decode`, which sees the parsed key: for a keyspace mirror, one
    /// value type for every template (an enum of the templates' values, decoded once per
    /// change instead of at every read). An error makes the key unreadable.
    ///
    /// Indexes given before are dropped: give them after this.
    pub fn decode_with<W>(
        self,
        decode: impl Fn(&K, &[u8]) -> Result<W> + Send + Sync + 'static,
    ) -> MirrorBuilder<K, W>
    where
        W: Clone + Send + Sync + 'static,
    {
        let typer = Typer {
            parse: self.typer.parse,
            decode: Arc::new(move |key: &K, entry: &Entry| {
                let value = decode(key, &entry.value)
                    .map_err(|e| e.with_context("key", crate::entry::escape_bytes(&entry.key)))?;
                Ok(Versioned {
                    value,
                    create_revision: entry.create_revision,
                    mod_revision: entry.mod_revision,
                    version: entry.version,
                    lease: entry.lease,
                })
            }),
        };
        MirrorBuilder {
            store: self.store,
            range: self.range,
            typer,
            indexers: Vec::new(),
            resync_every: self.resync_every,
            heartbeat: self.heartbeat,
            page_size: self.page_size,
            collections: self.collections,
        }
    }

    /// Maintains the index `name`: the values `f` gives for a key (none, one or several) find
    /// it with [`MirrorSnapshot::lookup`].
    pub fn index(
        mut self,
        name: &'static str,
        f: impl Fn(&K, &V) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.indexers.push(Indexer {
            name,
            f: Arc::new(f),
        });
        self
    }

    /// Lists the range again every `period`, at the revision the view reflects, and repairs
    /// any difference (counted in [`MirrorHealth::repaired`]). Off by default.
    pub fn resync_every(mut self, period: Duration) -> Self {
        self.resync_every = Some(period);
        self
    }

    /// Every `period` (5 s by default; `None` turns it off), an idle mirror asks the store's
    /// revision and, when the store moved on, confirms with a progress mark that nothing in
    /// its range changed ([`MirrorHealth::since_current`]).
    pub fn heartbeat(mut self, period: Option<Duration>) -> Self {
        self.heartbeat = period;
        self
    }

    /// Mirrors the sets, maps and lists of the range too (see the
    /// [module documentation](self)); their keys are parsed as the mirror's key type.
    pub fn with_collections(mut self) -> Self {
        self.collections = true;
        self
    }

    /// Keys per page of the listings (1000 by default; at least 1).
    pub fn page_size(mut self, keys: usize) -> Self {
        self.page_size = keys.max(1);
        self
    }

    /// Lists the range, publishes the first view and starts the task that keeps it current
    /// (on the current tokio runtime).
    ///
    /// # Errors
    /// The listing's or the watch's errors.
    pub async fn start(self) -> Result<Mirror<K, V>> {
        task::start(self).await
    }
}
