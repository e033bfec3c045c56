//! [`Balancer`]: the cache (the document's keys, or under a root), key objects and their
//! reads; the typed handles the operations combine into transactions.

use super::keys::{ActiveKeysKey, KeyGroupsKey, KeyObjectKey};
use super::segments::BalancerRoot;
use super::values::{API_KEY_FIELD, ApiKeyRecord, KeyStatus, STATUS_FIELD};
use keyplane_core::keyspace::{
    ItemMaps, Key, ListHandle, MapHandle, SegmentCodec, SetHandle, Text, TypedStore,
};
use keyplane_core::layer::Namespaced;
use keyplane_core::{Error, ErrorKind, Result};
use std::sync::Arc;

/// The balancer's cache: key objects (HASH), the groups' active lists (LIST) and the keys'
/// reverse indexes (SET), at the document's exact keys (`key:7`, `group:3:keys:active`,
/// `key:7:groups`) so that the Go service and this library share one Redis; or under a root
/// ([`with_root`](Self::with_root): `gemini:key:7`...) when several caches share a store.
///
/// ```
/// # use keyplane_core::keyspace::TypedStore;
/// # use keyplane_schemas::balancer::*;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
/// let cache = Balancer::new(typed.clone());
/// for id in [1, 2] {
///     let record = ApiKeyRecord { api_key: format!("sk-{id}"), status: KeyStatus::Active };
///     cache.put_key(id, &record).await?;
///     cache.link(id, 10).await?;
/// }
/// assert_eq!(cache.pick(10).await?, Some(1));
/// assert_eq!(cache.pick(10).await?, Some(2));
/// cache.set_status(1, KeyStatus::Disabled).await?;
/// assert_eq!(cache.active_keys(10).await?, [2]);
/// // The document's bytes: `group:10:keys:active`.
/// let lists = typed.store().range(keyplane_core::RangeOptions::prefix("group:").with_collections()).await?;
/// assert_eq!(lists.collections[0].key, b"group:10:keys:active");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Balancer {
    pub(crate) typed: TypedStore,
    root: Option<BalancerRoot>,
    /// Queues this cache's picks where lists are emulated (see [`Balancer::pick`]); shared
    /// by clones.
    pub(crate) pick_queue: Arc<tokio::sync::Mutex<()>>,
    /// The API key objects as a pick reads them with its rotation (see [`Balancer::pick`]),
    /// made by the first pick; shared by clones.
    pub(crate) pick_objects: Arc<std::sync::OnceLock<ItemMaps<Text, Text>>>,
}

impl Balancer {
    /// The cache at the document's keys in `typed`'s store.
    pub fn new(typed: TypedStore) -> Self {
        Balancer {
            typed,
            root: None,
            pick_queue: Arc::new(tokio::sync::Mutex::new(())),
            pick_objects: Arc::default(),
        }
    }

    /// The cache under `root` in `typed`'s store: every key gets `{root}:` in front
    /// (`gemini:key:7`), through a [`Namespaced`] store.
    ///
    /// # Errors
    /// `InvalidKey` when the root leaves no room for keys.
    pub fn with_root(typed: &TypedStore, root: BalancerRoot) -> Result<Self> {
        let namespaced = Namespaced::new(typed.store().clone(), format!("{root}:"))?;
        Ok(Balancer {
            typed: TypedStore::new(Arc::new(namespaced)),
            root: Some(root),
            pick_queue: Arc::new(tokio::sync::Mutex::new(())),
            pick_objects: Arc::default(),
        })
    }

    /// The cache under `root` on Redis Cluster: every key gets the root as a hash tag in front
    /// (`{gemini}:key:7`, `{gemini}:group:3:keys:active`), so that the whole cache is one
    /// co-location group, in one slot.
    ///
    /// Why one group: the cache is M:N, and the operations that keep its invariant write
    /// across it in one transaction: [`set_status`](Balancer::set_status) and
    /// [`remove_key`](Balancer::remove_key) touch the key's object and reverse index and the
    /// active list of every group it is linked to, [`link`](Balancer::link) a key's and a
    /// group's keys together. No grouping by key or by group keeps those transactions within
    /// one slot; a cache of thousands of API keys fits one slot easily, and several caches
    /// (several roots) spread over the cluster.
    ///
    /// # Errors
    /// `InvalidKey` when the root leaves no room for keys.
    pub fn with_cluster_root(typed: &TypedStore, root: BalancerRoot) -> Result<Self> {
        let namespaced = Namespaced::new(typed.store().clone(), format!("{{{root}}}:"))?;
        Ok(Balancer {
            typed: TypedStore::new(Arc::new(namespaced)),
            root: Some(root),
            pick_queue: Arc::new(tokio::sync::Mutex::new(())),
            pick_objects: Arc::default(),
        })
    }

    /// The root, when the cache has one.
    pub fn root(&self) -> Option<&BalancerRoot> {
        self.root.as_ref()
    }

    /// The typed store.
    pub fn typed(&self) -> &TypedStore {
        &self.typed
    }

    /// The object key of API key `id`.
    pub fn object_key(&self, id: u64) -> KeyObjectKey {
        KeyObjectKey { id }
    }

    /// The active list key of group `id`.
    pub fn active_key(&self, id: u64) -> ActiveKeysKey {
        ActiveKeysKey { id }
    }

    /// The reverse index key of API key `id`.
    pub fn groups_key(&self, id: u64) -> KeyGroupsKey {
        KeyGroupsKey { id }
    }

    /// The object of API key `id`, if cached.
    ///
    /// # Errors
    /// `Codec` for an object without its fields; backend errors. A status this library does
    /// not know is kept as [`KeyStatus::Other`], never an error.
    pub async fn key(&self, id: u64) -> Result<Option<ApiKeyRecord>> {
        let fields = self.typed.map_at(&self.object_key(id)).all().await?;
        if fields.is_empty() {
            return Ok(None);
        }
        let field = |name: &str| {
            fields
                .iter()
                .find(|(f, _)| f == name)
                .map(|(_, v)| v.clone())
                .ok_or_else(|| {
                    Error::new(ErrorKind::Codec, "a key object lacks a field")
                        .with_context("key", self.object_key(id).encode())
                        .with_context("field", name)
                })
        };
        Ok(Some(ApiKeyRecord {
            api_key: field(API_KEY_FIELD)?,
            status: KeyStatus::from(field(STATUS_FIELD)?),
        }))
    }

    /// The ids of group `group`'s active keys, in rotation order.
    ///
    /// # Errors
    /// Backend errors.
    pub async fn active_keys(&self, group: u64) -> Result<Vec<u64>> {
        self.typed
            .list_at(&self.active_key(group))
            .range(0, -1)
            .await
    }

    /// The ids of the groups API key `id` belongs to, ascending.
    ///
    /// # Errors
    /// Backend errors.
    pub async fn groups_of(&self, id: u64) -> Result<Vec<u64>> {
        let mut groups = self.typed.set_at(&self.groups_key(id)).members().await?;
        // Members come in byte order; ids sort by value.
        groups.sort_unstable();
        Ok(groups)
    }

    /// Reads the status and the groups of key `id` in one transaction.
    pub(crate) async fn read_state(&self, id: u64) -> Result<KeyState> {
        let mut txn = self.typed.txn();
        let status = txn.map_get(&self.object(id), &STATUS_FIELD.to_string());
        let groups = txn.set_members(&self.groups(id));
        let outcome = txn.commit().await?;
        let status = outcome.collection(&status)?.map(KeyStatus::from);
        let mut groups = outcome.collection(&groups)?;
        groups.sort_unstable();
        Ok(KeyState { status, groups })
    }

    /// The object (HASH) of API key `id`.
    pub(crate) fn object(&self, id: u64) -> MapHandle<Text, Text> {
        self.typed.map_at(&self.object_key(id))
    }

    /// The reverse index (SET) of API key `id`.
    pub(crate) fn groups(&self, id: u64) -> SetHandle<SegmentCodec<u64>> {
        self.typed.set_at(&self.groups_key(id))
    }

    /// The active list (LIST) of group `group`.
    pub(crate) fn active(&self, group: u64) -> ListHandle<SegmentCodec<u64>> {
        self.typed.list_at(&self.active_key(group))
    }

    pub(crate) fn not_found(&self, id: u64) -> Error {
        Error::new(ErrorKind::NotFound, "no such API key in the cache")
            .with_context("key", self.object_key(id).encode())
    }
}

/// A key's status (`None` when the object is absent) and groups.
pub(crate) struct KeyState {
    pub(crate) status: Option<KeyStatus>,
    pub(crate) groups: Vec<u64>,
}
