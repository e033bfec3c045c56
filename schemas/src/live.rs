//! [`LiveReader`]: one reader for every schema whose keyspace carries its values. It keeps a
//! [`Mirror`] of the keyspace, decodes each entry with the derived decoder
//! ([`KeyspaceValues`]), and hands out immutable [`LiveView`]s on which each schema
//! implements its own lookups (a tenant by host, a service's instances, a node's jobs, a
//! resolution).

use crate::ReaderOptions;
use futures::StreamExt;
use keyplane_core::keyspace::{CodecContext, Key, KeyspaceValues, TypedStore, Versioned};
use keyplane_core::mirror::{Mirror, MirrorHealth, MirrorSnapshot};
use keyplane_core::{Error, ErrorKind, Result};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A keyspace a [`LiveReader`] can keep: its values are derived
/// (`#[kv(value_enum = ..)]`), and it says how its mirror runs by default.
pub trait LiveKeyspace: KeyspaceValues + Clone + Send + Sync + 'static {
    /// The full resync period when [`ReaderOptions`] sets none; `None`: no periodic resync
    /// (the watch alone keeps the mirror current, relisting after a compaction).
    const RESYNC: Option<Duration> = None;

    /// Whether the mirror holds the keyspace's collections (sets, hashes, lists) too.
    const COLLECTIONS: bool = false;
}

/// A live, watched copy of one schema's keyspace. Lookups read a [`LiveView`] without a
/// round trip and without locks; a transaction appears in the views all at once. Cheap to
/// clone.
///
/// The seed systems' readers are this type: [`TenantProvider`](crate::tenant::TenantProvider),
/// [`LiveRegistry`](crate::registry::LiveRegistry), [`LiveCluster`](crate::cronix::LiveCluster)
/// and [`ResolverCache`](crate::nxc::ResolverCache).
///
/// ```
/// use keyplane_core::keyspace::TypedStore;
/// use keyplane_schemas::LiveReader;
/// use keyplane_schemas::tenant::{TenantKeyspace, TenantValue, example_tenant, publish_tenant};
/// use std::time::Duration;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
/// let reader = LiveReader::<TenantKeyspace>::start(&typed).await?;
/// publish_tenant(&typed, &example_tenant()).await?;
///
/// let view = reader
///     .wait_until(|view| !view.tenant_ids().is_empty(), Duration::from_secs(5))
///     .await?;
/// let meta = keyplane_schemas::tenant::TenantMetaKey { id: 1 };
/// assert!(matches!(view.value(&meta), Some(TenantValue::Meta(m)) if m.code == "default"));
/// assert_eq!(reader.health().relists, 0);
/// # Ok(()) }
/// ```
pub struct LiveReader<K: LiveKeyspace> {
    mirror: Mirror<K, K::Value>,
    /// Where the views' codecs get their state (a keyring): the typed store's.
    context: Arc<CodecContext>,
}

impl<K: LiveKeyspace> Clone for LiveReader<K> {
    fn clone(&self) -> Self {
        LiveReader {
            mirror: self.mirror.clone(),
            context: Arc::clone(&self.context),
        }
    }
}

impl<K: LiveKeyspace> fmt::Debug for LiveReader<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveReader")
            .field("mirror", &self.mirror)
            .finish_non_exhaustive()
    }
}

impl<K: LiveKeyspace> LiveReader<K> {
    /// Mirrors the keyspace through `store` with the keyspace's defaults
    /// ([`LiveKeyspace::RESYNC`]). Values decode with the codecs `store` builds, so state
    /// such as a keyring comes from it.
    ///
    /// # Errors
    /// The first listing's and the watch's errors.
    pub async fn start(store: &TypedStore) -> Result<Self> {
        LiveReader::start_with(store, ReaderOptions::default()).await
    }

    /// [`start`](Self::start) with other options: the resync period and the listings'
    /// page size.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub async fn start_with(store: &TypedStore, options: ReaderOptions) -> Result<Self> {
        let context = Arc::new(store.codec_context().clone());
        let decoding = Arc::clone(&context);
        let mut builder = store
            .mirror_keyspace::<K>()
            .decode_with(move |key: &K, bytes: &[u8]| key.decode_value(bytes, &decoding));
        if K::COLLECTIONS {
            builder = builder.with_collections();
        }
        let mirror = options.apply(builder, K::RESYNC).start().await?;
        Ok(LiveReader { mirror, context })
    }

    /// The current view: every lookup on it sees the same revision.
    pub fn view(&self) -> LiveView<K> {
        self.view_of(self.mirror.snapshot())
    }

    /// The view once it reflects `revision` (the revision a write returned: read your own
    /// write).
    ///
    /// # Errors
    /// `Unavailable` when the mirror has stopped.
    pub async fn wait_for(&self, revision: i64) -> Result<LiveView<K>> {
        Ok(self.view_of(self.mirror.wait_for(revision).await?))
    }

    /// The first view for which `done` holds: the current one, or one of the views that
    /// the next changes produce.
    ///
    /// # Errors
    /// `Timeout` when no view satisfies `done` within `timeout`; `Unavailable` when the
    /// mirror stops first.
    pub async fn wait_until(
        &self,
        mut done: impl FnMut(&LiveView<K>) -> bool,
        timeout: Duration,
    ) -> Result<LiveView<K>> {
        // Subscribed before the first look, so that no change between the two is missed.
        let mut changes = self.mirror.subscribe();
        let waiting = async {
            loop {
                let view = self.view();
                if done(&view) {
                    return Ok(view);
                }
                if changes.next().await.is_none() {
                    return Err(Error::new(ErrorKind::Unavailable, "the mirror has stopped"));
                }
            }
        };
        tokio::time::timeout(timeout, waiting)
            .await
            .unwrap_or_else(|_| {
                Err(
                    Error::new(ErrorKind::Timeout, "no view met the condition in time")
                        .with_context("timeout_ms", timeout.as_millis()),
                )
            })
    }

    /// The mirror's health: revision, lag, relists, resyncs, unreadable keys.
    pub fn health(&self) -> MirrorHealth {
        self.mirror.health()
    }

    /// The mirror underneath, for subscriptions (each batch arrives after it is visible in
    /// [`view`](Self::view)).
    pub fn mirror(&self) -> &Mirror<K, K::Value> {
        &self.mirror
    }

    fn view_of(&self, snapshot: Arc<MirrorSnapshot<K, K::Value>>) -> LiveView<K> {
        LiveView {
            snapshot,
            context: Arc::clone(&self.context),
        }
    }
}

/// One consistent view of a schema's keyspace: what the store held at
/// [`revision`](Self::revision). Lookups are map reads; cheap to clone and to keep. Each
/// schema adds its own lookups on its view (`impl LiveView<TenantKeyspace>`).
pub struct LiveView<K: LiveKeyspace> {
    snapshot: Arc<MirrorSnapshot<K, K::Value>>,
    context: Arc<CodecContext>,
}

impl<K: LiveKeyspace> Clone for LiveView<K> {
    fn clone(&self) -> Self {
        LiveView {
            snapshot: Arc::clone(&self.snapshot),
            context: Arc::clone(&self.context),
        }
    }
}

impl<K: LiveKeyspace> fmt::Debug for LiveView<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The codec context holds secrets (a keyring): never shown.
        f.debug_struct("LiveView")
            .field("snapshot", &self.snapshot)
            .finish_non_exhaustive()
    }
}

impl<K: LiveKeyspace> LiveView<K> {
    /// The store revision the view reflects.
    pub fn revision(&self) -> i64 {
        self.snapshot.revision()
    }

    /// The decoded value at `key`, a key of any template of the keyspace.
    pub fn value<Q: Key>(&self, key: &Q) -> Option<&K::Value> {
        self.versioned(key).map(|v| &v.value)
    }

    /// The value at `key` with its revisions and lease.
    pub fn versioned<Q: Key>(&self, key: &Q) -> Option<&Versioned<K::Value>> {
        self.snapshot
            .get_raw(key.encode().as_bytes())
            .map(|(_, value)| value)
    }

    /// The entries whose raw key starts with `prefix`, in key order.
    pub fn entries<'a>(
        &'a self,
        prefix: &'a [u8],
    ) -> impl Iterator<Item = (&'a K, &'a Versioned<K::Value>)> + 'a {
        self.snapshot.iter_prefix(prefix)
    }

    /// The snapshot underneath: every entry, collection and unreadable key.
    pub fn snapshot(&self) -> &MirrorSnapshot<K, K::Value> {
        &self.snapshot
    }

    /// The state the reader's codecs are built from (the typed store's), for values kept
    /// as stored bytes and decoded on read.
    pub fn codec_context(&self) -> &CodecContext {
        &self.context
    }

    /// How many keys the view could not read: not a key of the layout, a value that does
    /// not decode, a collection whose key does not parse. Reported, never dropped.
    pub fn unreadable(&self) -> usize {
        self.snapshot.unreadable().count() + self.snapshot.unreadable_collections().count()
    }
}
