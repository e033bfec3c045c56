//! Layers: stores that wrap a store, composable and object safe.
//!
//! A [`Layer`] turns a [`Store`] into another `Store` that does something around each call:
//! retries ([`RetryLayer`]), deadlines ([`TimeoutLayer`]), spans ([`TracingLayer`]), metrics
//! ([`MetricsLayer`]), injected faults for tests ([`FaultLayer`], by rules or by a test's
//! own [`Interceptor`]: the one way to make a store fail on purpose), a key prefix
//! ([`NamespaceLayer`]), refusing writes ([`ReadOnlyLayer`]). [`StoreExt::layer`] stacks
//! them; each added layer wraps the stack below it, so the last one added sees a call first.
//! The stack is a `Store`, so `Arc<dyn Store>` still swaps backends, and an `Arc<dyn Store>`
//! can itself be layered.
//!
//! A sensible order, from the backend up: namespace, faults (in tests), metrics, tracing,
//! timeout, retry. The timeout then bounds each attempt, the retry layer decides about the
//! timed-out ones, and every attempt is traced and counted.
//!
//! ```
//! use keyplane_core::layer::{
//!     MetricsLayer, NamespaceLayer, RetryLayer, StoreExt, TimeoutLayer, TracingLayer,
//! };
//! use keyplane_core::{PutOptions, Store};
//! use keyplane_mem::MemStore;
//! use std::sync::Arc;
//! use std::time::Duration;
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> keyplane_core::Result<()> {
//! let store: Arc<dyn Store> = Arc::new(
//!     MemStore::new()
//!         .layer(NamespaceLayer::new("gemini:")?)
//!         .layer(MetricsLayer)
//!         .layer(TracingLayer)
//!         .layer(TimeoutLayer::new(Duration::from_secs(5)))
//!         .layer(RetryLayer::default()),
//! );
//! store.put(b"key:7", b"k", PutOptions::default()).await?;
//! assert_eq!(store.get(b"key:7").await?.unwrap().value, b"k");
//! # Ok(()) }
//! ```

mod call;
mod fault;
mod intercept;
mod metrics;
mod namespace;
mod read_only;
mod retry;
mod timeout;
mod tracing;

pub use self::call::Call;
pub use self::fault::{Fault, FaultLayer, FaultStore, Injection};
pub use self::intercept::Interceptor;
pub use self::metrics::{MetricsLayer, MetricsStore};
pub use self::namespace::{NamespaceLayer, Namespaced};
pub use self::read_only::{ReadOnlyLayer, ReadOnlyStore};
pub use self::retry::{RetryLayer, RetryStore};
pub use self::timeout::{TimeoutLayer, TimeoutStore};
pub use self::tracing::{TracingLayer, TracingStore};

use crate::Entry;
use crate::LeaseId;
use crate::raw::escape_bytes;
use crate::{CollectionOp, CollectionResult};
use crate::{DeletePrefixResult, DeleteResult, PutOptions, PutResult, Store};
use crate::{KeyRange, RangeOptions, RangeResult};
use crate::{LeaseGrant, LeaseInfo};
use crate::{Txn, TxnOp, TxnResponse};
use crate::{WatchOptions, WatchStream};
use std::fmt;
use std::time::Duration;

/// Wraps a store of type `S` into another store.
///
/// ```
/// use keyplane_core::layer::{Layer, ReadOnlyLayer};
/// use keyplane_core::{ErrorKind, PutOptions, Store};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let store = ReadOnlyLayer.layer(keyplane_mem::MemStore::new());
/// let err = store.put(b"k", b"v", PutOptions::default()).await.unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::ReadOnly);
/// # }
/// ```
pub trait Layer<S: Store> {
    /// The wrapped store.
    type Store: Store;

    /// Wraps `inner`.
    fn layer(self, inner: S) -> Self::Store;
}

/// [`layer`](StoreExt::layer) for every store, `Arc<dyn Store>` included.
pub trait StoreExt: Store + Sized {
    /// This store wrapped in `layer`: `store.layer(A).layer(B)` is `B` around `A` around the
    /// store.
    fn layer<L: Layer<Self>>(self, layer: L) -> L::Store {
        layer.layer(self)
    }
}

impl<S: Store> StoreExt for S {}

/// What a layer knows of a call's subject, borrowed from its arguments.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Target<'a> {
    /// No key: the revision, a lease grant.
    Nothing,
    /// One key.
    Key(&'a [u8]),
    /// A range read or a watch.
    Range(&'a KeyRange),
    /// A transaction.
    Txn(&'a Txn),
    /// A collection operation.
    Collection(&'a CollectionOp),
    /// A lease.
    Lease(LeaseId),
    /// A revision (a compaction).
    Revision(i64),
}

impl<'a> Target<'a> {
    /// Whether a call with this subject may change the store: `call` says so, except that a
    /// transaction or collection operation made only of reads does not.
    pub(crate) fn writes(self, call: Call) -> bool {
        match self {
            Target::Txn(txn) => txn.success.iter().chain(&txn.failure).any(TxnOp::is_write),
            Target::Collection(op) => op.is_write(),
            _ => call.is_write() || matches!(call, Call::LeaseGrant | Call::LeaseKeepAlive),
        }
    }

    /// Whether repeating the call cannot change the outcome of the first: reads, and
    /// renewing a lease.
    pub(crate) fn idempotent(self, call: Call) -> bool {
        call == Call::LeaseKeepAlive || !self.writes(call)
    }

    /// Every key the call names (a range or prefix by its first key), for key patterns.
    pub(crate) fn keys(self, mut each: impl FnMut(&[u8]) -> bool) -> bool {
        match self {
            Target::Key(key) => each(key),
            Target::Range(range) => each(range_key(range)),
            Target::Collection(op) => each(op.key()),
            Target::Txn(txn) => txn.keys().any(each),
            Target::Nothing | Target::Lease(_) | Target::Revision(_) => false,
        }
    }
}

fn range_key(range: &KeyRange) -> &[u8] {
    match range {
        KeyRange::Key(key) | KeyRange::Prefix(key) => key,
        KeyRange::Interval { start, .. } => start,
    }
}

/// The subject as spans show it: keys escaped, values never.
impl fmt::Display for Target<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Nothing => Ok(()),
            Target::Key(key) => f.write_str(&escape_bytes(key)),
            Target::Range(KeyRange::Key(key)) => f.write_str(&escape_bytes(key)),
            Target::Range(KeyRange::Prefix(prefix)) => write!(f, "{}*", escape_bytes(prefix)),
            Target::Range(KeyRange::Interval { start, end }) => write!(
                f,
                "[{}, {})",
                escape_bytes(start),
                end.as_deref().map(escape_bytes).unwrap_or_default()
            ),
            Target::Txn(txn) => {
                let ops = txn.success.len() + txn.failure.len();
                match txn.success.first().or(txn.failure.first()) {
                    Some(op) if ops > 1 => {
                        write!(f, "{} (+{} ops)", escape_bytes(op.key()), ops - 1)
                    }
                    Some(op) => f.write_str(&escape_bytes(op.key())),
                    None => Ok(()),
                }
            }
            Target::Collection(op) => f.write_str(&escape_bytes(op.key())),
            Target::Lease(id) => write!(f, "lease {id}"),
            Target::Revision(revision) => write!(f, "revision {revision}"),
        }
    }
}

/// The arguments of one call, as the layers pass them down: cheap to clone where a retry
/// needs a second copy, and telling what the call is about.
pub(crate) trait Args: Clone + Send + Sync {
    fn target(&self) -> Target<'_>;

    /// For a transaction with compares: the transaction that runs its failure branch
    /// unconditionally (a fault making its compares fail).
    fn fail_compares(&self) -> Option<Self> {
        None
    }
}

impl Args for () {
    fn target(&self) -> Target<'_> {
        Target::Nothing
    }
}

impl Args for &[u8] {
    fn target(&self) -> Target<'_> {
        Target::Key(self)
    }
}

impl Args for (&[u8], &[u8], PutOptions) {
    fn target(&self) -> Target<'_> {
        Target::Key(self.0)
    }
}

impl Args for RangeOptions {
    fn target(&self) -> Target<'_> {
        Target::Range(&self.range)
    }
}

impl Args for WatchOptions {
    fn target(&self) -> Target<'_> {
        Target::Range(&self.range)
    }
}

impl Args for Txn {
    fn target(&self) -> Target<'_> {
        Target::Txn(self)
    }

    fn fail_compares(&self) -> Option<Self> {
        (!self.compares.is_empty()).then(|| Txn::new().and_then(self.failure.iter().cloned()))
    }
}

impl Args for CollectionOp {
    fn target(&self) -> Target<'_> {
        Target::Collection(self)
    }
}

impl Args for Duration {
    fn target(&self) -> Target<'_> {
        Target::Nothing
    }
}

impl Args for LeaseId {
    fn target(&self) -> Target<'_> {
        Target::Lease(*self)
    }
}

impl Args for i64 {
    fn target(&self) -> Target<'_> {
        Target::Revision(*self)
    }
}

/// What a layer reads from a call's answer: the revision it reports, and whether a
/// transaction's compares held.
pub(crate) trait Answer: Send {
    /// The revision the answer reports, if any.
    fn revision(&self) -> Option<i64> {
        None
    }

    /// `"ok"`, or `"compare_failed"` for a transaction whose compares did not hold.
    fn outcome(&self) -> &'static str {
        "ok"
    }

    /// The answer of [`Args::fail_compares`]'s transaction as the original transaction's:
    /// its compares failed.
    fn compares_failed(self) -> Self
    where
        Self: Sized,
    {
        self
    }
}

impl Answer for i64 {
    fn revision(&self) -> Option<i64> {
        Some(*self)
    }
}

impl Answer for RangeResult {
    fn revision(&self) -> Option<i64> {
        Some(self.revision)
    }
}

impl Answer for TxnResponse {
    fn revision(&self) -> Option<i64> {
        Some(self.revision)
    }

    fn compares_failed(mut self) -> Self {
        self.succeeded = false;
        self
    }

    fn outcome(&self) -> &'static str {
        if self.succeeded {
            "ok"
        } else {
            "compare_failed"
        }
    }
}

impl Answer for PutResult {
    fn revision(&self) -> Option<i64> {
        Some(self.revision)
    }
}

impl Answer for DeleteResult {
    fn revision(&self) -> Option<i64> {
        Some(self.revision)
    }
}

impl Answer for DeletePrefixResult {
    fn revision(&self) -> Option<i64> {
        Some(self.revision)
    }
}

impl Answer for Option<Entry> {
    fn revision(&self) -> Option<i64> {
        self.as_ref().map(|e| e.mod_revision)
    }
}

impl Answer for () {}
impl Answer for Duration {}
impl Answer for LeaseGrant {}
impl Answer for LeaseInfo {}
impl Answer for Vec<LeaseId> {}
impl Answer for crate::ServerStatus {}
impl Answer for CollectionResult {}
impl Answer for WatchStream {}

/// Implements [`Store`] for a layer's store type whose inherent
/// `async fn around(&self, call, args, f)` runs `f(args)` (once or more) against the inner
/// store. A watch is opened through `around` too, unless the layer names its own inherent
/// `async fn(&self, opts)` for that: `around_store!(RetryStore, watch = open_watch)`.
macro_rules! around_store {
    ($store:ident) => {
        $crate::layer::around_store!(@impl $store, |this, opts| this
            .around(Call::Watch, opts, |o| this.inner.watch(o))
            .await);
    };
    ($store:ident, watch = $open:ident) => {
        $crate::layer::around_store!(@impl $store, |this, opts| this.$open(opts).await);
    };
    (@impl $store:ident, |$this:ident, $opts:ident| $watch:expr) => {
        #[async_trait::async_trait]
        impl<S: Store> Store for $store<S> {
            fn capabilities(&self) -> &crate::Capabilities {
                self.inner.capabilities()
            }
            async fn revision(&self) -> crate::Result<i64> {
                self.around(Call::Revision, (), |()| self.inner.revision())
                    .await
            }
            async fn range(&self, opts: crate::RangeOptions) -> crate::Result<crate::RangeResult> {
                self.around(Call::Range, opts, |o| self.inner.range(o))
                    .await
            }
            async fn txn(&self, txn: crate::Txn) -> crate::Result<crate::TxnResponse> {
                self.around(Call::Txn, txn, |t| self.inner.txn(t)).await
            }
            async fn lease_grant(
                &self,
                ttl: std::time::Duration,
            ) -> crate::Result<crate::LeaseGrant> {
                self.around(Call::LeaseGrant, ttl, |t| self.inner.lease_grant(t))
                    .await
            }
            async fn lease_keep_alive(
                &self,
                id: crate::LeaseId,
            ) -> crate::Result<std::time::Duration> {
                self.around(Call::LeaseKeepAlive, id, |i| self.inner.lease_keep_alive(i))
                    .await
            }
            async fn lease_revoke(&self, id: crate::LeaseId) -> crate::Result<()> {
                self.around(Call::LeaseRevoke, id, |i| self.inner.lease_revoke(i))
                    .await
            }
            async fn lease_time_to_live(
                &self,
                id: crate::LeaseId,
            ) -> crate::Result<crate::LeaseInfo> {
                self.around(Call::LeaseTimeToLive, id, |i| {
                    self.inner.lease_time_to_live(i)
                })
                .await
            }
            async fn lease_list(&self) -> crate::Result<Vec<crate::LeaseId>> {
                self.around(Call::LeaseList, (), |()| self.inner.lease_list())
                    .await
            }
            async fn server_status(&self) -> crate::Result<crate::ServerStatus> {
                self.around(Call::ServerStatus, (), |()| self.inner.server_status())
                    .await
            }
            async fn watch(&self, $opts: crate::WatchOptions) -> crate::Result<crate::WatchStream> {
                let $this = self;
                $watch
            }
            async fn compact(&self, revision: i64) -> crate::Result<()> {
                self.around(Call::Compact, revision, |r| self.inner.compact(r))
                    .await
            }
            async fn get(&self, key: &[u8]) -> crate::Result<Option<crate::Entry>> {
                self.around(Call::Get, key, |k| self.inner.get(k)).await
            }
            async fn put(
                &self,
                key: &[u8],
                value: &[u8],
                opts: crate::PutOptions,
            ) -> crate::Result<crate::PutResult> {
                self.around(Call::Put, (key, value, opts), |(k, v, o)| {
                    self.inner.put(k, v, o)
                })
                .await
            }
            async fn delete(&self, key: &[u8]) -> crate::Result<crate::DeleteResult> {
                self.around(Call::Delete, key, |k| self.inner.delete(k))
                    .await
            }
            async fn delete_prefix(
                &self,
                prefix: &[u8],
            ) -> crate::Result<crate::DeletePrefixResult> {
                self.around(Call::DeletePrefix, prefix, |p| self.inner.delete_prefix(p))
                    .await
            }
            async fn collection(
                &self,
                op: crate::CollectionOp,
            ) -> crate::Result<crate::CollectionResult> {
                self.around(Call::Collection, op, |o| self.inner.collection(o))
                    .await
            }
        }
    };
}

pub(crate) use around_store;
