//! [`TimeoutLayer`]: a deadline per operation.

use super::{Args, Call, Layer, around_store};
use crate::Store;
use crate::{Error, ErrorKind, Result};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

/// Fails a call that has not finished within its deadline with an
/// [`ErrorKind::Timeout`] error naming the operation (`op` in its context) and the deadline
/// (`timeout_ms`). The call is dropped at the deadline; a write may or may not have been
/// applied by then (the error is not [unapplied](Error::is_unapplied), so a
/// [`RetryLayer`](super::RetryLayer) above does not repeat it).
///
/// Every operation has the same deadline unless [`with`](Self::with) sets its own. For a
/// watch, the deadline bounds opening it, not the stream.
///
/// ```
/// use keyplane_core::layer::{Call, Fault, FaultLayer, StoreExt, TimeoutLayer};
/// use keyplane_core::{ErrorKind, Store};
/// use std::time::Duration;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let store = keyplane_mem::MemStore::new()
///     .layer(FaultLayer::new(1).with(Fault::latency(Duration::from_secs(1)).on([Call::Get])))
///     .layer(TimeoutLayer::new(Duration::from_secs(5)).with(Call::Get, Duration::from_millis(20)));
/// let err = store.get(b"k").await.unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::Timeout);
/// assert!(err.to_string().contains("op: get"), "{err}");
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct TimeoutLayer {
    deadlines: [Duration; Call::ALL.len()],
}

impl TimeoutLayer {
    /// Every operation gets `deadline`.
    pub fn new(deadline: Duration) -> Self {
        TimeoutLayer {
            deadlines: [deadline; Call::ALL.len()],
        }
    }

    /// `call` gets its own deadline.
    pub fn with(mut self, call: Call, deadline: Duration) -> Self {
        self.deadlines[call.index()] = deadline;
        self
    }

    /// The deadline of `call`.
    pub fn deadline(&self, call: Call) -> Duration {
        self.deadlines[call.index()]
    }
}

impl<S: Store> Layer<S> for TimeoutLayer {
    type Store = TimeoutStore<S>;

    fn layer(self, inner: S) -> TimeoutStore<S> {
        TimeoutStore {
            inner: Arc::new(inner),
            layer: self,
        }
    }
}

/// The store a [`TimeoutLayer`] makes.
#[derive(Debug)]
pub struct TimeoutStore<S> {
    inner: Arc<S>,
    layer: TimeoutLayer,
}

impl<S: Store> TimeoutStore<S> {
    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    async fn around<A, T, F, Fut>(&self, call: Call, args: A, f: F) -> Result<T>
    where
        A: Args,
        F: FnOnce(A) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let deadline = self.layer.deadline(call);
        match within(deadline, f(args)).await {
            Some(answer) => answer,
            None => Err(Error::new(
                ErrorKind::Timeout,
                format!("{} did not finish within {deadline:?}", call.name()),
            )
            .with_context("op", call.name())
            .with_context("timeout_ms", deadline.as_millis())),
        }
    }
}

around_store!(TimeoutStore);

/// `future`'s output, or `None` when it is still pending `deadline` after it first waited.
/// A future that is ready at its first poll (an in-memory read) sets no timer at all.
async fn within<T>(deadline: Duration, future: impl Future<Output = T>) -> Option<T> {
    let mut future = std::pin::pin!(future);
    let mut timer: Option<Pin<Box<tokio::time::Sleep>>> = None;
    std::future::poll_fn(|cx| {
        if let Poll::Ready(output) = future.as_mut().poll(cx) {
            return Poll::Ready(Some(output));
        }
        let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep(deadline)));
        timer.as_mut().poll(cx).map(|()| None)
    })
    .await
}
