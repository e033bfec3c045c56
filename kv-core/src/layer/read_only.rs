//! [`ReadOnlyLayer`]: a store that refuses every write.

use super::{Args, Call, Layer, around_store};
use crate::Store;
use crate::{Error, ErrorKind, Result};
use std::future::Future;
use std::sync::Arc;

/// Refuses every call that could change the store with [`ErrorKind::ReadOnly`] before it
/// reaches the backend: puts, deletes, transactions with a write op, collection writes,
/// compactions and every lease call but [`lease_time_to_live`](Store::lease_time_to_live) and
/// [`lease_list`](Store::lease_list).
/// Reads, watches, and transactions or collection operations made only of reads go through.
///
/// ```
/// use keyplane_core::layer::{ReadOnlyLayer, StoreExt};
/// use keyplane_core::{ErrorKind, PutOptions, Store, Txn, TxnOp};
/// use std::sync::Arc;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let shared = Arc::new(keyplane_mem::MemStore::new());
/// shared.put(b"cfg/a", b"1", PutOptions::default()).await?;
/// let reader = shared.clone().layer(ReadOnlyLayer);
/// assert_eq!(reader.get(b"cfg/a").await?.unwrap().value, b"1");
/// let snapshot = reader.txn(Txn::new().and_then([TxnOp::get("cfg/a")])).await?;
/// assert!(snapshot.succeeded);
/// let err = reader.delete(b"cfg/a").await.unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::ReadOnly);
/// assert!(shared.get(b"cfg/a").await?.is_some());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadOnlyLayer;

impl<S: Store> Layer<S> for ReadOnlyLayer {
    type Store = ReadOnlyStore<S>;

    fn layer(self, inner: S) -> ReadOnlyStore<S> {
        ReadOnlyStore {
            inner: Arc::new(inner),
        }
    }
}

/// The store a [`ReadOnlyLayer`] makes.
#[derive(Debug)]
pub struct ReadOnlyStore<S> {
    inner: Arc<S>,
}

impl<S: Store> ReadOnlyStore<S> {
    /// The wrapped store (writable).
    pub fn inner(&self) -> &S {
        &self.inner
    }

    async fn around<A, T, F, Fut>(&self, call: Call, args: A, f: F) -> Result<T>
    where
        A: Args,
        F: FnOnce(A) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let target = args.target();
        if target.writes(call) {
            let mut error = Error::new(
                ErrorKind::ReadOnly,
                format!("the store is read-only: {} refused", call.name()),
            )
            .with_context("op", call.name());
            if !matches!(target, super::Target::Nothing) {
                error = error.with_context("key", target);
            }
            return Err(error);
        }
        f(args).await
    }
}

around_store!(ReadOnlyStore);
