//! [`MirrorBuilder`]: a mirror's settings, before it starts.

use super::typer::{Indexer, Typer};
use crate::Entry;
use crate::Result;
use crate::Store;
use crate::keyspace::Versioned;
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

impl<K, V> MirrorBuilder<K, V>
where
    K: Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// A mirror of `range` of `store` (every key starting with it), each entry typed by
    /// `parse` (its raw key) and `decode` (its parsed key and the entry): the mirror's one
    /// constructor, which [`TypedStore::mirror`](crate::keyspace::TypedStore::mirror) and
    /// [`mirror_keyspace`](crate::keyspace::TypedStore::mirror_keyspace) call with the
    /// typed store's parser and codec.
    pub(crate) fn new(
        store: Arc<dyn Store>,
        range: Vec<u8>,
        parse: impl Fn(&[u8]) -> Result<K> + Send + Sync + 'static,
        decode: impl Fn(&K, &Entry) -> Result<Versioned<V>> + Send + Sync + 'static,
    ) -> Self {
        MirrorBuilder {
            store,
            range,
            typer: Typer {
                parse: Arc::new(parse),
                decode: Arc::new(decode),
            },
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
