//! [`MirrorBuilder`]: a mirror's settings, before it starts.

use super::typer::{Indexer, Typer};
use crate::entry::Entry;
use crate::error::Result;
use crate::keyspace::typed::{common_root, parse_keyspace};
use crate::keyspace::{Bytes, Keyspace, ListPrefix, TypedStore, ValueOf, Versioned};
use crate::store::Store;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Sets a mirror up: its indexes, resync and heartbeat periods, then
/// [`start`](Self::start).
pub struct MirrorBuilder<K, V> {
    pub(super) store: Arc<dyn Store>,
    pub(super) range: Vec<u8>,
    pub(super) typer: Typer<K, V>,
    pub(super) indexers: Vec<Indexer<K, V>>,
    pub(super) resync_every: Option<Duration>,
    pub(super) heartbeat: Option<Duration>,
    pub(super) page_size: usize,
    pub(super) collections: bool,
}

impl<K, V> fmt::Debug for MirrorBuilder<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MirrorBuilder")
            .field("range", &crate::raw::escape_bytes(&self.range))
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
        let range = crate::keyspace::typed::prefix_bytes(prefix)?;
        let codec = Arc::new(self.codec::<P::Key>()?);
        let typer = Typer {
            parse: Arc::new(crate::keyspace::typed::parse_key::<P::Key>),
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
    pub(super) fn new(store: Arc<dyn Store>, range: Vec<u8>, typer: Typer<K, V>) -> Self {
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
                    .map_err(|e| e.with_context("key", crate::raw::escape_bytes(&entry.key)))?;
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
    /// it with [`MirrorSnapshot::lookup`](super::MirrorSnapshot::lookup).
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
    /// any difference (counted in [`MirrorHealth::repaired`](super::MirrorHealth::repaired)). Off by default.
    pub fn resync_every(mut self, period: Duration) -> Self {
        self.resync_every = Some(period);
        self
    }

    /// Every `period` (5 s by default; `None` turns it off), an idle mirror asks the store's
    /// revision and, when the store moved on, confirms with a progress mark that nothing in
    /// its range changed ([`MirrorHealth::since_current`](super::MirrorHealth::since_current)).
    pub fn heartbeat(mut self, period: Option<Duration>) -> Self {
        self.heartbeat = period;
        self
    }

    /// Mirrors the sets, maps and lists of the range too (see the
    /// [module documentation](crate::mirror)); their keys are parsed as the mirror's key type.
    pub fn with_collections(mut self) -> Self {
        self.collections = true;
        self
    }

    /// Keys per page of the listings (1000 by default; at least 1).
    pub fn page_size(mut self, keys: usize) -> Self {
        self.page_size = keys.max(1);
        self
    }
}
