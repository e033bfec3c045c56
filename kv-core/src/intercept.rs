//! A store wrapper that sees every call, for testing code against an unreliable backend.
//!
//! [`Intercepted`] forwards each [`Store`] method, the provided ones included, to the wrapped
//! store, so that the backend's own implementations are the ones exercised. Around each call it
//! asks an [`Interceptor`], which can refuse the call before it reaches the store (a request
//! that was never sent) or replace a finished call's answer with an error (an answer lost on
//! the way back, after the store applied the write). An interceptor may await, for example to
//! write through another handle while a call is in flight.
//!
//! ```
//! use keyplane_core::intercept::{Call, Intercepted, Interceptor};
//! use keyplane_core::{Error, ErrorKind, PutOptions, Result, Store, async_trait};
//! use keyplane_mem::MemStore;
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicBool, Ordering};
//!
//! /// Loses the answer of every write while `down` is set.
//! #[derive(Default)]
//! struct LostAnswers {
//!     down: AtomicBool,
//! }
//!
//! #[async_trait]
//! impl Interceptor for LostAnswers {
//!     async fn after(&self, call: Call, _succeeded: bool) -> Result<()> {
//!         if call.is_write() && self.down.load(Ordering::SeqCst) {
//!             return Err(Error::new(ErrorKind::Unavailable, "connection reset"));
//!         }
//!         Ok(())
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let store = Intercepted::new(Arc::new(MemStore::new()), LostAnswers::default());
//! store.interceptor().down.store(true, Ordering::SeqCst);
//! let err = store.put(b"k", b"v", PutOptions::default()).await.unwrap_err();
//! assert_eq!(err.kind(), ErrorKind::Unavailable);
//! // The write was applied; only its answer was lost.
//! assert_eq!(store.inner().get(b"k").await?.unwrap().value, b"v");
//! # Ok::<(), keyplane_core::Error>(()) }).unwrap();
//! ```

use crate::capabilities::Capabilities;
use crate::collections::{CollectionOp, CollectionResult};
use crate::entry::Entry;
use crate::error::Result;
use crate::lease::LeaseId;
use crate::lease::{LeaseGrant, LeaseInfo};
use crate::range::{RangeOptions, RangeResult};
use crate::store::{DeletePrefixResult, DeleteResult, PutOptions, PutResult, Store};
use crate::txn::{Txn, TxnResponse};
use crate::watch::{WatchOptions, WatchStream};
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;

/// Which [`Store`] method a call is.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Call {
    /// [`Store::revision`].
    Revision,
    /// [`Store::range`].
    Range,
    /// [`Store::txn`].
    Txn,
    /// [`Store::lease_grant`].
    LeaseGrant,
    /// [`Store::lease_keep_alive`].
    LeaseKeepAlive,
    /// [`Store::lease_revoke`].
    LeaseRevoke,
    /// [`Store::lease_time_to_live`].
    LeaseTimeToLive,
    /// [`Store::watch`].
    Watch,
    /// [`Store::compact`].
    Compact,
    /// [`Store::get`].
    Get,
    /// [`Store::put`].
    Put,
    /// [`Store::delete`].
    Delete,
    /// [`Store::delete_prefix`].
    DeletePrefix,
    /// [`Store::collection`].
    Collection,
}

impl Call {
    /// Every call, in declaration order.
    pub const ALL: [Call; 14] = [
        Call::Revision,
        Call::Range,
        Call::Txn,
        Call::LeaseGrant,
        Call::LeaseKeepAlive,
        Call::LeaseRevoke,
        Call::LeaseTimeToLive,
        Call::Watch,
        Call::Compact,
        Call::Get,
        Call::Put,
        Call::Delete,
        Call::DeletePrefix,
        Call::Collection,
    ];

    /// The method's name (`"get"`, `"lease_grant"`...), as spans and metrics label it.
    pub fn name(self) -> &'static str {
        match self {
            Call::Revision => "revision",
            Call::Range => "range",
            Call::Txn => "txn",
            Call::LeaseGrant => "lease_grant",
            Call::LeaseKeepAlive => "lease_keep_alive",
            Call::LeaseRevoke => "lease_revoke",
            Call::LeaseTimeToLive => "lease_time_to_live",
            Call::Watch => "watch",
            Call::Compact => "compact",
            Call::Get => "get",
            Call::Put => "put",
            Call::Delete => "delete",
            Call::DeletePrefix => "delete_prefix",
            Call::Collection => "collection",
        }
    }

    /// The call's position in [`Call::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// Whether the call may change the store's data (a transaction, a single-key write, a
    /// collection operation, a compaction, a lease revoke). A transaction or collection
    /// operation counts as a write whatever its ops are.
    pub fn is_write(self) -> bool {
        matches!(
            self,
            Call::Txn
                | Call::Put
                | Call::Delete
                | Call::DeletePrefix
                | Call::Collection
                | Call::Compact
                | Call::LeaseRevoke
        )
    }
}

/// Decides, around each call, whether it fails. Both methods default to letting the call
/// through; `()` is the interceptor that never interferes.
#[async_trait]
pub trait Interceptor: Send + Sync + 'static {
    /// Runs before `call` reaches the store. An error is returned to the caller instead, and
    /// the store never sees the call.
    async fn before(&self, call: Call) -> Result<()> {
        let _ = call;
        Ok(())
    }

    /// Runs after the store answered `call` (`succeeded` says whether it did). An error
    /// replaces the store's answer; whatever the store did stays done.
    async fn after(&self, call: Call, succeeded: bool) -> Result<()> {
        let _ = (call, succeeded);
        Ok(())
    }
}

impl Interceptor for () {}

/// A [`Store`] that forwards every call to `S`, asking an [`Interceptor`] around each. See the
/// [module documentation](self).
#[derive(Debug)]
pub struct Intercepted<S: ?Sized, I = ()> {
    inner: Arc<S>,
    interceptor: I,
}

impl<S: Store + ?Sized, I: Interceptor> Intercepted<S, I> {
    /// Wraps `inner` (an `Arc` of a store, or an `Arc<dyn Store>`), asking `interceptor`
    /// around every call.
    pub fn new(inner: Arc<S>, interceptor: I) -> Self {
        Intercepted { inner, interceptor }
    }

    /// The wrapped store, to read or write it without interception.
    pub fn inner(&self) -> &Arc<S> {
        &self.inner
    }

    /// The interceptor, to change its state while the store is in use.
    pub fn interceptor(&self) -> &I {
        &self.interceptor
    }

    async fn around<T>(
        &self,
        call: Call,
        f: impl std::future::Future<Output = Result<T>> + Send,
    ) -> Result<T> {
        self.interceptor.before(call).await?;
        let answer = f.await;
        self.interceptor.after(call, answer.is_ok()).await?;
        answer
    }
}

#[async_trait]
impl<S: Store + ?Sized, I: Interceptor> Store for Intercepted<S, I> {
    fn capabilities(&self) -> &Capabilities {
        self.inner.capabilities()
    }
    async fn revision(&self) -> Result<i64> {
        self.around(Call::Revision, self.inner.revision()).await
    }
    async fn range(&self, opts: RangeOptions) -> Result<RangeResult> {
        self.around(Call::Range, self.inner.range(opts)).await
    }
    async fn txn(&self, txn: Txn) -> Result<TxnResponse> {
        self.around(Call::Txn, self.inner.txn(txn)).await
    }
    async fn lease_grant(&self, ttl: Duration) -> Result<LeaseGrant> {
        self.around(Call::LeaseGrant, self.inner.lease_grant(ttl))
            .await
    }
    async fn lease_keep_alive(&self, id: LeaseId) -> Result<Duration> {
        self.around(Call::LeaseKeepAlive, self.inner.lease_keep_alive(id))
            .await
    }
    async fn lease_revoke(&self, id: LeaseId) -> Result<()> {
        self.around(Call::LeaseRevoke, self.inner.lease_revoke(id))
            .await
    }
    async fn lease_time_to_live(&self, id: LeaseId) -> Result<LeaseInfo> {
        self.around(Call::LeaseTimeToLive, self.inner.lease_time_to_live(id))
            .await
    }
    async fn watch(&self, opts: WatchOptions) -> Result<WatchStream> {
        self.around(Call::Watch, self.inner.watch(opts)).await
    }
    async fn compact(&self, revision: i64) -> Result<()> {
        self.around(Call::Compact, self.inner.compact(revision))
            .await
    }
    async fn get(&self, key: &[u8]) -> Result<Option<Entry>> {
        self.around(Call::Get, self.inner.get(key)).await
    }
    async fn put(&self, key: &[u8], value: &[u8], opts: PutOptions) -> Result<PutResult> {
        self.around(Call::Put, self.inner.put(key, value, opts))
            .await
    }
    async fn delete(&self, key: &[u8]) -> Result<DeleteResult> {
        self.around(Call::Delete, self.inner.delete(key)).await
    }
    async fn delete_prefix(&self, prefix: &[u8]) -> Result<DeletePrefixResult> {
        self.around(Call::DeletePrefix, self.inner.delete_prefix(prefix))
            .await
    }
    async fn collection(&self, op: CollectionOp) -> Result<CollectionResult> {
        self.around(Call::Collection, self.inner.collection(op))
            .await
    }
}
