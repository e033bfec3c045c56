//! [`TracingLayer`]: a span per operation.

use super::{Answer, Args, Call, Layer, around_store};
use crate::Result;
use crate::Store;
use std::future::Future;
use std::sync::Arc;
use tracing::Instrument;
use tracing::field::{Empty, display};

/// Runs every call in a `tracing` span named `keyplane`, at the `DEBUG` level, with the
/// fields:
///
/// - `backend`: [`Capabilities::backend`](crate::Capabilities::backend);
/// - `op`: the [`Call`]'s name (`get`, `put`, `txn`...);
/// - `key`: the key, escaped (`\xNN` for bytes that are not printable ASCII); a prefix ends
///   in `*`, an interval is `[start, end)`, a transaction shows its first key and how many
///   more ops it has; values are never recorded;
/// - `revision`: the revision the answer reports (a write's revision, a read's store
///   revision, a read entry's mod revision);
/// - `outcome`: `ok`, `compare_failed` (a transaction whose compares did not hold) or the
///   error's [`code`](crate::ErrorKind::code); `error`: the error's message.
///
/// With no subscriber interested in the span, a call costs a few nanoseconds more, and no
/// key is formatted.
///
/// ```
/// use keyplane_core::layer::{StoreExt, TracingLayer};
/// use keyplane_core::{PutOptions, Store};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// // With a subscriber installed (`tracing_subscriber::fmt().init()`, with span close
/// // events), each call prints its span: op, key, revision and outcome.
/// let store = keyplane_mem::MemStore::new().layer(TracingLayer);
/// store.put(b"cfg/a", b"1", PutOptions::default()).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct TracingLayer;

impl<S: Store> Layer<S> for TracingLayer {
    type Store = TracingStore<S>;

    fn layer(self, inner: S) -> TracingStore<S> {
        TracingStore {
            inner: Arc::new(inner),
        }
    }
}

/// The store a [`TracingLayer`] makes.
#[derive(Debug)]
pub struct TracingStore<S> {
    inner: Arc<S>,
}

impl<S: Store> TracingStore<S> {
    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    async fn around<A, T, F, Fut>(&self, call: Call, args: A, f: F) -> Result<T>
    where
        A: Args,
        T: Answer,
        F: FnOnce(A) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let span = tracing::debug_span!(
            "keyplane",
            backend = self.inner.capabilities().backend,
            op = call.name(),
            key = Empty,
            revision = Empty,
            outcome = Empty,
            error = Empty,
        );
        if span.is_disabled() {
            return f(args).await;
        }
        let target = args.target();
        if !matches!(target, super::Target::Nothing) {
            span.record("key", display(target));
        }
        let answer = f(args).instrument(span.clone()).await;
        match &answer {
            Ok(answer) => {
                if let Some(revision) = answer.revision() {
                    span.record("revision", revision);
                }
                span.record("outcome", answer.outcome());
            }
            Err(error) => {
                span.record("outcome", error.kind().code());
                span.record("error", display(error));
            }
        }
        answer
    }
}

around_store!(TracingStore);
