//! [`Interceptor`]: a test's own code around each call of a [`FaultStore`](super::FaultStore).

use super::Call;
use crate::Result;
use async_trait::async_trait;
use std::sync::Arc;

/// Decides, around each call, whether it fails: the hook of
/// [`FaultLayer::intercept`](super::FaultLayer::intercept), for faults the layer's rules do
/// not describe (an answer lost only while a flag is set, a call held until the test lets it
/// go, a write through another handle while a call is in flight). Both methods default to
/// letting the call through; `()` is the interceptor that never interferes.
///
/// ```
/// use keyplane_core::layer::{Call, FaultLayer, Interceptor, StoreExt};
/// use keyplane_core::raw::async_trait;
/// use keyplane_core::{Error, ErrorKind, PutOptions, Result, Store};
/// use keyplane_mem::MemStore;
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicBool, Ordering};
///
/// /// Loses the answer of every write while `down` is set.
/// #[derive(Default)]
/// struct LostAnswers {
///     down: AtomicBool,
/// }
///
/// #[async_trait]
/// impl Interceptor for LostAnswers {
///     async fn after(&self, call: Call, _succeeded: bool) -> Result<()> {
///         if call.is_write() && self.down.load(Ordering::SeqCst) {
///             return Err(Error::new(ErrorKind::Unavailable, "connection reset"));
///         }
///         Ok(())
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let answers = Arc::new(LostAnswers::default());
/// let store = MemStore::new().layer(FaultLayer::new(0).intercept(Arc::clone(&answers)));
/// answers.down.store(true, Ordering::SeqCst);
/// let err = store.put(b"k", b"v", PutOptions::default()).await.unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::Unavailable);
/// // The write was applied; only its answer was lost.
/// assert_eq!(store.inner().get(b"k").await?.unwrap().value, b"v");
/// # Ok::<(), keyplane_core::Error>(()) }).unwrap();
/// ```
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

/// A shared interceptor, so that a test keeps a handle on the state it changes while the
/// store is in use.
#[async_trait]
impl<I: Interceptor + ?Sized> Interceptor for Arc<I> {
    async fn before(&self, call: Call) -> Result<()> {
        (**self).before(call).await
    }

    async fn after(&self, call: Call, succeeded: bool) -> Result<()> {
        (**self).after(call, succeeded).await
    }
}

/// An interceptor kept by a [`FaultLayer`](super::FaultLayer): cloned with the layer, and
/// shown by name only in `Debug` output.
#[derive(Clone)]
pub(super) struct Hook(pub(super) Arc<dyn Interceptor>);

impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Interceptor")
    }
}
