//! [`MetricsLayer`]: counters and latency histograms through the `metrics` facade.

use super::{Answer, Args, Call, Layer, around_store};
use crate::error::Result;
use crate::store::Store;
use crate::watch::{WatchOptions, WatchStream};
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

/// The counter of finished operations.
pub const OPERATIONS: &str = "keyplane_operations_total";
/// The histogram of operation durations, in seconds.
pub const DURATION: &str = "keyplane_operation_duration_seconds";

/// Records every call through the [`metrics`](https://docs.rs/metrics) facade, so that any
/// exporter (Prometheus, StatsD, OpenTelemetry...) installed as the recorder gets them:
///
/// - the counter `keyplane_operations_total`, incremented once per finished call;
/// - the histogram `keyplane_operation_duration_seconds`, the call's duration;
///
/// each labelled `backend` ([`Capabilities::backend`](crate::Capabilities::backend)),
/// `operation` (the [`Call`]'s name) and `outcome` (`ok`, `compare_failed` for a
/// transaction whose compares did not hold, or the error's
/// [`code`](crate::ErrorKind::code)). Keys are never labels (they would make the series
/// unbounded). A watch counts once, when it opens.
///
/// With no recorder installed, the facade's no-op recorder makes the cost a clock read and
/// two label builds per call.
///
/// ```
/// use keyplane_core::layer::{MetricsLayer, StoreExt};
/// use keyplane_core::Store;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let store = keyplane_mem::MemStore::new().layer(MetricsLayer);
/// // Counted as keyplane_operations_total{backend="memory",operation="get",outcome="ok"}.
/// assert!(store.get(b"cfg/a").await?.is_none());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct MetricsLayer;

impl MetricsLayer {
    /// The counter's name, `keyplane_operations_total`.
    pub const OPERATIONS: &'static str = OPERATIONS;
    /// The histogram's name, `keyplane_operation_duration_seconds`.
    pub const DURATION: &'static str = DURATION;
}

impl<S: Store> Layer<S> for MetricsLayer {
    type Store = MetricsStore<S>;

    fn layer(self, inner: S) -> MetricsStore<S> {
        MetricsStore {
            inner: Arc::new(inner),
        }
    }
}

/// The store a [`MetricsLayer`] makes.
#[derive(Debug)]
pub struct MetricsStore<S> {
    inner: Arc<S>,
}

impl<S: Store> MetricsStore<S> {
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
        let started = Instant::now();
        let answer = f(args).await;
        let elapsed = started.elapsed();
        let outcome = match &answer {
            Ok(answer) => answer.outcome(),
            Err(error) => error.kind().code(),
        };
        let labels = [
            ("backend", self.inner.capabilities().backend),
            ("operation", call.name()),
            ("outcome", outcome),
        ];
        metrics::counter!(OPERATIONS, &labels).increment(1);
        metrics::histogram!(DURATION, &labels).record(elapsed.as_secs_f64());
        answer
    }

    async fn open_watch(&self, opts: WatchOptions) -> Result<WatchStream> {
        self.around(Call::Watch, opts, |o| self.inner.watch(o))
            .await
    }
}

around_store!(MetricsStore);
