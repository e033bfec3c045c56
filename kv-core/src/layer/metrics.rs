//! [`MetricsLayer`]: counters and latency histograms through the `metrics` facade.

use super::{Answer, Args, Call, Layer, around_store};
use crate::Result;
use crate::Store;
use metrics::{Key, Label, Level, Metadata};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
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
/// Label sets are built once per backend, operation and outcome (and kept for the life of the
/// program, a bounded set), so a call allocates nothing; with no recorder installed, the
/// facade's no-op recorder makes the cost two clock reads per call.
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
        let backend = inner.capabilities().backend;
        MetricsStore {
            inner: Arc::new(inner),
            ok: Call::ALL.map(|call| labels(backend, call.name(), "ok")),
        }
    }
}

/// Where the metrics come from, for recorders that filter on it.
static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// A backend, an operation and an outcome.
type LabelValues = (&'static str, &'static str, &'static str);

/// The label sets made so far: one per backend, operation and outcome.
static LABELS: Mutex<BTreeMap<LabelValues, &[Label]>> = Mutex::new(BTreeMap::new());

/// The labels of one backend, operation and outcome, made on first use.
fn labels(
    backend: &'static str,
    operation: &'static str,
    outcome: &'static str,
) -> &'static [Label] {
    let mut made = LABELS.lock().unwrap_or_else(|e| e.into_inner());
    made.entry((backend, operation, outcome))
        .or_insert_with(|| {
            Box::leak(Box::new([
                Label::from_static_parts("backend", backend),
                Label::from_static_parts("operation", operation),
                Label::from_static_parts("outcome", outcome),
            ]))
        })
}

/// The store a [`MetricsLayer`] makes.
#[derive(Debug)]
pub struct MetricsStore<S> {
    inner: Arc<S>,
    /// The labels of each call's `ok` outcome, the common case.
    ok: [&'static [Label]; Call::ALL.len()],
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
        let labels = if outcome == "ok" {
            self.ok[call.index()]
        } else {
            labels(self.inner.capabilities().backend, call.name(), outcome)
        };
        metrics::with_recorder(|recorder| {
            recorder
                .register_counter(&Key::from_static_parts(OPERATIONS, labels), &METADATA)
                .increment(1);
            recorder
                .register_histogram(&Key::from_static_parts(DURATION, labels), &METADATA)
                .record(elapsed.as_secs_f64());
        });
        answer
    }
}

around_store!(MetricsStore);
