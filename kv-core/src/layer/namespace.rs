//! [`Namespaced`]: a store under a prefix of another store.

use crate::Capabilities;
use crate::Continuation;
use crate::Entry;
use crate::LeaseId;
use crate::ServerStatus;
use crate::raw::{prefix_end, validate_key};
use crate::{CollectionOp, CollectionResult};
use crate::{DeletePrefixResult, DeleteResult, PutOptions, PutResult, Store};
use crate::{Error, Result};
use crate::{Event, WatchBatch, WatchOptions, WatchStream};
use crate::{KeyRange, RangeOptions, RangeResult};
use crate::{LeaseGrant, LeaseInfo};
use crate::{OpResult, Txn, TxnOp, TxnResponse};
use async_trait::async_trait;
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;

/// A store that lives under a prefix of another store, as etcd's
/// `namespace` package does for its clients: every key the caller names gets the prefix,
/// every key the store returns loses it, and nothing outside the prefix can be read,
/// written or watched through it.
///
/// A schema whose documents fix un-rooted keys (the balancer's `key:{id}`) keeps them, and a
/// deployment that shares a server between several caches gives each one a namespace.
///
/// ```
/// use keyplane_core::{PutOptions, Store};
/// use keyplane_core::layer::{Namespaced};
/// use std::sync::Arc;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let shared: Arc<dyn Store> = Arc::new(keyplane_mem::MemStore::new());
/// let gemini = Namespaced::new(shared.clone(), "gemini:")?;
/// gemini.put(b"key:7", b"k", PutOptions::default()).await?;
/// assert_eq!(shared.get(b"gemini:key:7").await?.unwrap().value, b"k");
/// assert_eq!(gemini.get(b"key:7").await?.unwrap().key, b"key:7");
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Namespaced {
    inner: Arc<dyn Store>,
    prefix: Vec<u8>,
    caps: Capabilities,
}

impl std::fmt::Debug for Namespaced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Namespaced")
            .field("prefix", &crate::raw::escape_bytes(&self.prefix))
            .finish_non_exhaustive()
    }
}

impl Namespaced {
    /// `inner` seen under `prefix`. Its keys are shorter by the prefix's length
    /// ([`Capabilities::max_key_bytes`]).
    ///
    /// # Errors
    /// `InvalidKey` for an empty prefix, one that is not a valid key, or one that leaves no
    /// room for keys.
    pub fn new(inner: Arc<dyn Store>, prefix: impl Into<Vec<u8>>) -> Result<Self> {
        let namespaced = NamespaceLayer::new(prefix)?.wrap(inner);
        if namespaced.caps.max_key_bytes == 0 {
            return Err(Error::invalid_key(
                "the namespace prefix leaves no room for keys",
            ));
        }
        Ok(namespaced)
    }

    /// The prefix.
    pub fn prefix(&self) -> &[u8] {
        &self.prefix
    }

    /// The store underneath.
    pub fn inner(&self) -> &Arc<dyn Store> {
        &self.inner
    }

    fn add(&self, key: &[u8]) -> Vec<u8> {
        let mut full = Vec::with_capacity(self.prefix.len() + key.len());
        full.extend_from_slice(&self.prefix);
        full.extend_from_slice(key);
        full
    }

    /// A key the caller named: checked, then prefixed.
    fn key(&self, key: &[u8]) -> Result<Vec<u8>> {
        validate_key(key)?;
        if key.len() > self.caps.max_key_bytes {
            return Err(Error::invalid_key(format!(
                "a key in this namespace is at most {} bytes, this one has {}",
                self.caps.max_key_bytes,
                key.len()
            )));
        }
        Ok(self.add(key))
    }

    fn strip(&self, mut key: Vec<u8>) -> Result<Vec<u8>> {
        if !key.starts_with(&self.prefix) {
            return Err(Error::internal(
                "the store returned a key outside the namespace",
            ));
        }
        key.drain(..self.prefix.len());
        Ok(key)
    }

    fn entry(&self, mut entry: Entry) -> Result<Entry> {
        entry.key = self.strip(entry.key)?;
        Ok(entry)
    }

    fn entries(&self, entry: Option<Entry>) -> Result<Option<Entry>> {
        entry.map(|e| self.entry(e)).transpose()
    }

    fn range(&self, range: &KeyRange) -> KeyRange {
        match range {
            KeyRange::Key(key) => KeyRange::Key(self.add(key)),
            KeyRange::Prefix(prefix) => KeyRange::Prefix(self.add(prefix)),
            KeyRange::Interval { start, end } => KeyRange::Interval {
                start: self.add(start),
                end: match end {
                    Some(end) => Some(self.add(end)),
                    None => prefix_end(&self.prefix),
                },
            },
        }
    }

    fn continuation(&self, c: Continuation, inward: bool) -> Result<Continuation> {
        let key = if inward {
            self.add(c.start_key())
        } else {
            self.strip(c.start_key().to_vec())?
        };
        Ok(c.with_start_key(key))
    }

    fn op(&self, op: TxnOp) -> TxnOp {
        match op {
            TxnOp::Get { key } => TxnOp::Get {
                key: self.add(&key),
            },
            TxnOp::Put { key, value, lease } => TxnOp::Put {
                key: self.add(&key),
                value,
                lease,
            },
            TxnOp::Delete { key } => TxnOp::Delete {
                key: self.add(&key),
            },
            TxnOp::DeletePrefix { prefix } => TxnOp::DeletePrefix {
                prefix: self.add(&prefix),
            },
            TxnOp::Collection(op) => TxnOp::Collection(self.collection_op(op)),
        }
    }

    fn collection_op(&self, mut op: CollectionOp) -> CollectionOp {
        let key = op.key_mut();
        *key = self.add(key);
        if let Some(prefix) = op.other_prefix_mut() {
            *prefix = self.add(prefix);
        }
        op
    }

    fn event(&self, event: Event) -> Result<Event> {
        Ok(match event {
            Event::Put { entry, prev } => Event::Put {
                entry: self.entry(entry)?,
                prev: self.entries(prev)?,
            },
            Event::Delete { key, prev } => Event::Delete {
                key: self.strip(key)?,
                prev: self.entries(prev)?,
            },
            Event::Collection(mut event) => {
                event.key = self.strip(event.key)?;
                Event::Collection(event)
            }
        })
    }
}

/// Confines a store under a key prefix: the [layer](crate::layer) form of [`Namespaced`].
///
/// Every key, range, compare, watch and lease-attached key the caller names gets the
/// prefix, every key the store returns loses it, and nothing outside the prefix can be
/// read, written or watched through it, on every backend. (`EtcdStore` also has a native
/// `namespace` option, which prefixes keys inside the backend itself and covers its internal
/// keys too; both confine a caller the same way.)
///
/// ```
/// use keyplane_core::layer::{NamespaceLayer, StoreExt};
/// use keyplane_core::{PutOptions, Store};
/// use std::sync::Arc;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let shared = Arc::new(keyplane_mem::MemStore::new());
/// let tenant = shared.clone().layer(NamespaceLayer::new("t/1/")?);
/// tenant.put(b"meta", b"{}", PutOptions::default()).await?;
/// assert!(shared.get(b"t/1/meta").await?.is_some());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceLayer {
    prefix: Vec<u8>,
}

impl NamespaceLayer {
    /// Confines under `prefix`.
    ///
    /// # Errors
    /// `InvalidKey` for an empty prefix, or one that is not a valid key or leaves no room
    /// for keys.
    pub fn new(prefix: impl Into<Vec<u8>>) -> Result<Self> {
        let prefix = prefix.into();
        if prefix.is_empty() {
            return Err(Error::invalid_key("a namespace prefix is never empty"));
        }
        validate_key(&prefix)?;
        if prefix.len() >= crate::raw::MAX_KEY_LEN {
            return Err(Error::invalid_key(
                "the namespace prefix leaves no room for keys",
            ));
        }
        Ok(NamespaceLayer { prefix })
    }

    /// `inner` under the prefix. When `inner` takes shorter keys than the prefix leaves
    /// room for (it is itself namespaced), every key is refused with `InvalidKey`.
    fn wrap(self, inner: Arc<dyn Store>) -> Namespaced {
        let mut caps = inner.capabilities().clone();
        caps.max_key_bytes = caps.max_key_bytes.saturating_sub(self.prefix.len());
        Namespaced {
            inner,
            prefix: self.prefix,
            caps,
        }
    }
}

impl<S: Store> crate::layer::Layer<S> for NamespaceLayer {
    type Store = Namespaced;

    fn layer(self, inner: S) -> Namespaced {
        self.wrap(Arc::new(inner))
    }
}

#[async_trait]
impl Store for Namespaced {
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    async fn revision(&self) -> Result<i64> {
        self.inner.revision().await
    }

    async fn range(&self, opts: RangeOptions) -> Result<RangeResult> {
        opts.validate()?;
        let mut inner = opts.clone();
        inner.range = self.range(&opts.range);
        inner.after = opts.after.map(|c| self.continuation(c, true)).transpose()?;
        let mut page = self.inner.range(inner).await?;
        page.entries = page
            .entries
            .into_iter()
            .map(|e| self.entry(e))
            .collect::<Result<_>>()?;
        for c in &mut page.collections {
            c.key = self.strip(std::mem::take(&mut c.key))?;
        }
        page.next = page.next.map(|c| self.continuation(c, false)).transpose()?;
        Ok(page)
    }

    async fn txn(&self, txn: Txn) -> Result<TxnResponse> {
        txn.validate(self.capabilities())?;
        let inner = Txn {
            compares: txn
                .compares
                .into_iter()
                .map(|mut c| {
                    c.key = self.add(&c.key);
                    c
                })
                .collect(),
            success: txn.success.into_iter().map(|op| self.op(op)).collect(),
            failure: txn.failure.into_iter().map(|op| self.op(op)).collect(),
        };
        let mut response = self.inner.txn(inner).await?;
        for result in &mut response.results {
            if let OpResult::Get(entry) = result {
                *entry = self.entries(entry.take())?;
            }
        }
        Ok(response)
    }

    async fn lease_grant(&self, ttl: Duration) -> Result<LeaseGrant> {
        self.inner.lease_grant(ttl).await
    }

    async fn lease_keep_alive(&self, id: LeaseId) -> Result<Duration> {
        self.inner.lease_keep_alive(id).await
    }

    async fn lease_revoke(&self, id: LeaseId) -> Result<()> {
        self.inner.lease_revoke(id).await
    }

    /// The lease's keys in the namespace (keys of other namespaces attached to the same
    /// lease are not shown).
    async fn lease_time_to_live(&self, id: LeaseId) -> Result<LeaseInfo> {
        let mut info = self.inner.lease_time_to_live(id).await?;
        info.keys = info
            .keys
            .into_iter()
            .filter(|k| k.starts_with(&self.prefix))
            .map(|k| self.strip(k))
            .collect::<Result<_>>()?;
        Ok(info)
    }

    /// Every lease of the store: leases are not namespaced (keys of any namespace may be
    /// attached to one), as [`Store::lease_revoke`] here reaches any of them too.
    async fn lease_list(&self) -> Result<Vec<LeaseId>> {
        self.inner.lease_list().await
    }

    async fn server_status(&self) -> Result<ServerStatus> {
        self.inner.server_status().await
    }

    async fn watch(&self, opts: WatchOptions) -> Result<WatchStream> {
        opts.range.validate()?;
        let mut inner = opts.clone();
        inner.range = self.range(&opts.range);
        let stream = self.inner.watch(inner).await?;
        let this = self.clone();
        Ok(stream
            .map(move |item| {
                let batch = item?;
                Ok(WatchBatch {
                    revision: batch.revision,
                    events: batch
                        .events
                        .into_iter()
                        .map(|e| this.event(e))
                        .collect::<Result<_>>()?,
                    group: batch.group,
                })
            })
            .boxed())
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        self.inner.compact(revision).await
    }

    async fn get(&self, key: &[u8]) -> Result<Option<Entry>> {
        let entry = self.inner.get(&self.key(key)?).await?;
        self.entries(entry)
    }

    async fn put(&self, key: &[u8], value: &[u8], opts: PutOptions) -> Result<PutResult> {
        let mut result = self.inner.put(&self.key(key)?, value, opts).await?;
        result.prev = self.entries(result.prev)?;
        Ok(result)
    }

    async fn delete(&self, key: &[u8]) -> Result<DeleteResult> {
        let mut result = self.inner.delete(&self.key(key)?).await?;
        result.prev = self.entries(result.prev)?;
        Ok(result)
    }

    async fn delete_prefix(&self, prefix: &[u8]) -> Result<DeletePrefixResult> {
        if prefix.is_empty() {
            return Err(Error::invalid_key("delete_prefix needs a non-empty prefix"));
        }
        self.inner.delete_prefix(&self.key(prefix)?).await
    }

    async fn collection(&self, op: CollectionOp) -> Result<CollectionResult> {
        validate_key(op.key())?;
        self.inner.collection(self.collection_op(op)).await
    }
}
