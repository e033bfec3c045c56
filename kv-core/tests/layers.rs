//! Each layer on its own: retry, timeout, tracing, metrics, faults, namespace, read-only.

use futures::StreamExt;
use keyplane_core::layer::{
    Call, Fault, FaultLayer, FaultStore, Interceptor, MetricsLayer, NamespaceLayer, ReadOnlyLayer,
    RetryLayer, StoreExt, TimeoutLayer, TracingLayer,
};
use keyplane_core::raw::async_trait;
use keyplane_core::retry::Backoff;
use keyplane_core::{
    CollectionOp, Compare, CompareOp, Error, ErrorKind, KeyRange, PutOptions, RangeOptions, Result,
    Store, Txn, TxnOp, WatchOptions,
};
use keyplane_mem::MemStore;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn fast() -> Backoff {
    Backoff::default()
        .initial(Duration::from_millis(1))
        .max_delay(Duration::from_millis(2))
        .max_attempts(20)
}

/// Counts the calls that reach the store, and fails each with `error` while it is set.
#[derive(Default)]
struct Failing {
    calls: AtomicUsize,
    error: Mutex<Option<Error>>,
}

#[async_trait]
impl Interceptor for Failing {
    async fn before(&self, _call: Call) -> Result<()> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match &*self.error.lock().unwrap() {
            Some(error) => Err(error.clone()),
            None => Ok(()),
        }
    }
}

/// A store whose calls `Failing` counts and fails, and the interceptor's state.
fn failing(error: Option<Error>) -> (Arc<FaultStore<MemStore>>, Arc<Failing>) {
    let hook = Arc::new(Failing::default());
    *hook.error.lock().unwrap() = error;
    let store = MemStore::new().layer(FaultLayer::new(0).intercept(Arc::clone(&hook)));
    (Arc::new(store), hook)
}

#[tokio::test]
async fn retry_gives_up_at_once_on_errors_that_will_not_pass() {
    for error in [
        Error::invalid_argument("bad"),
        Error::new(ErrorKind::NotFound, "gone"),
        Error::compacted(3),
        Error::new(ErrorKind::Unavailable, "down").set_retryable(false),
    ] {
        let (inner, hook) = failing(Some(error.clone()));
        let store = inner.clone().layer(RetryLayer::new(fast()));
        let err = store.get(b"k").await.unwrap_err();
        assert_eq!(err.kind(), error.kind());
        assert_eq!(hook.calls.load(Ordering::SeqCst), 1, "{error}");
    }
}

#[tokio::test]
async fn retry_retries_reads_and_unapplied_writes_until_the_policy_ends() {
    let down = Error::new(ErrorKind::Unavailable, "down");
    let (inner, hook) = failing(Some(down.clone()));
    let store = inner.clone().layer(RetryLayer::new(fast().max_attempts(4)));
    let err = store.get(b"k").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert!(err.to_string().contains("attempts: 4"), "{err}");
    assert_eq!(hook.calls.load(Ordering::SeqCst), 4);

    // A write whose outcome is unknown is tried once...
    hook.calls.store(0, Ordering::SeqCst);
    let err = store
        .put(b"k", b"v", PutOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_eq!(hook.calls.load(Ordering::SeqCst), 1);
    // ...a write that never reached the backend is retried...
    *hook.error.lock().unwrap() = Some(down.clone().set_unapplied(true));
    hook.calls.store(0, Ordering::SeqCst);
    store
        .put(b"k", b"v", PutOptions::default())
        .await
        .unwrap_err();
    assert_eq!(hook.calls.load(Ordering::SeqCst), 4);
    // ...and so is one whose outcome is unknown when the caller opts in; a read-only
    // transaction is a read.
    *hook.error.lock().unwrap() = Some(down);
    let opted = inner
        .clone()
        .layer(RetryLayer::new(fast().max_attempts(3)).retry_unknown_writes(true));
    for (write, expected) in [(true, 3), (false, 3)] {
        hook.calls.store(0, Ordering::SeqCst);
        let txn = if write {
            Txn::new().and_then([TxnOp::put("k", "v")])
        } else {
            Txn::new().and_then([TxnOp::get("k")])
        };
        opted.txn(txn).await.unwrap_err();
        assert_eq!(hook.calls.load(Ordering::SeqCst), expected);
    }
    let read_txn = store.txn(Txn::new().and_then([TxnOp::get("k")]));
    hook.calls.store(0, Ordering::SeqCst);
    read_txn.await.unwrap_err();
    assert_eq!(hook.calls.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn retry_over_faults_applies_each_write_once() {
    // Refused writes are retried and land once; a lost answer is not repeated.
    let store = MemStore::new()
        .layer(FaultLayer::new(11).with(Fault::unavailable().probability(0.5)))
        .layer(RetryLayer::new(fast()));
    for i in 0..50 {
        let key = format!("k/{i}");
        store
            .put(key.as_bytes(), b"v", PutOptions::default())
            .await
            .unwrap();
        assert_eq!(
            store
                .inner()
                .inner()
                .get(key.as_bytes())
                .await
                .unwrap()
                .unwrap()
                .version,
            1
        );
    }
    assert!(
        store.inner().injected() > 10,
        "{}",
        store.inner().injected()
    );

    let lost = MemStore::new()
        .layer(FaultLayer::new(1).with(Fault::timeout().on([Call::Put]).times(1)))
        .layer(RetryLayer::new(fast()));
    let err = lost
        .put(b"k", b"v", PutOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    let entry = lost.inner().inner().get(b"k").await.unwrap().unwrap();
    assert_eq!(entry.version, 1, "the write was applied once, not repeated");

    // A failed compare is an answer, not retried.
    let cas = MemStore::new()
        .layer(FaultLayer::new(1).with(Fault::compare_failure()))
        .layer(RetryLayer::new(fast()));
    cas.put(b"k", b"v", PutOptions::default()).await.unwrap();
    let resp = cas
        .txn(
            Txn::new()
                .when([Compare::exists("k")])
                .and_then([TxnOp::put("k", "new")])
                .or_else([TxnOp::get("k")]),
        )
        .await
        .unwrap();
    assert!(!resp.succeeded);
    assert_eq!(cas.inner().injected(), 1);
    assert_eq!(cas.get(b"k").await.unwrap().unwrap().value, b"v");
}

#[tokio::test]
async fn retry_resumes_a_disconnected_watch_without_gaps_or_repeats() {
    let store = MemStore::new()
        .layer(FaultLayer::new(5).with(Fault::watch_disconnect().probability(0.3)))
        .layer(RetryLayer::new(fast().max_attempts(50)));
    let watch_from_now = store.watch(WatchOptions::prefix("w/")).await.unwrap();
    let first = store
        .put(b"w/0", b"0", PutOptions::default())
        .await
        .unwrap()
        .revision;
    for i in 1..40 {
        store
            .put(format!("w/{i}").as_bytes(), b"v", PutOptions::default())
            .await
            .unwrap();
    }
    let replay = store
        .watch(WatchOptions::prefix("w/").from_revision(first))
        .await
        .unwrap();
    for watch in [watch_from_now, replay] {
        let batches: Vec<_> = watch.take(40).collect().await;
        let keys: Vec<String> = batches
            .into_iter()
            .map(|b| {
                let b = b.unwrap();
                assert_eq!(b.events.len(), 1);
                String::from_utf8(b.events[0].key().to_vec()).unwrap()
            })
            .collect();
        let expected: Vec<String> = (0..40).map(|i| format!("w/{i}")).collect();
        assert_eq!(keys, expected);
    }
    assert!(
        store.inner().injected() >= 5,
        "{}",
        store.inner().injected()
    );
}

#[tokio::test]
async fn timeouts_name_the_operation_and_follow_per_call_deadlines() {
    let store = MemStore::new()
        .layer(
            FaultLayer::new(1)
                .with(Fault::latency(Duration::from_millis(300)).on([Call::Get, Call::Put])),
        )
        .layer(
            TimeoutLayer::new(Duration::from_millis(20)).with(Call::Put, Duration::from_secs(10)),
        );
    let err = store.get(b"k").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(err.is_retryable() && !err.is_unapplied());
    assert!(err.to_string().contains("op: get"), "{err}");
    assert!(err.to_string().contains("timeout_ms: 20"), "{err}");
    // The put has its own, longer deadline.
    store.put(b"k", b"v", PutOptions::default()).await.unwrap();
    assert!(store.inner().inner().get(b"k").await.unwrap().is_some());
}

/// Every closed `keyplane` span's fields.
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<BTreeMap<String, String>>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S> tracing_subscriber::Layer<S> for Spans
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        ctx.span(id).unwrap().extensions_mut().insert(fields);
    }
    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let span = ctx.span(id).unwrap();
        let mut ext = span.extensions_mut();
        values.record(&mut Fields(
            ext.get_mut::<BTreeMap<String, String>>().unwrap(),
        ));
    }
    fn on_close(&self, id: tracing::span::Id, ctx: tracing_subscriber::layer::Context<'_, S>) {
        let span = ctx.span(&id).unwrap();
        if span.name() == "keyplane" {
            let ext = span.extensions();
            let fields = ext.get::<BTreeMap<String, String>>().unwrap().clone();
            self.0.lock().unwrap().push(fields);
        }
    }
}

#[test]
fn tracing_records_backend_op_key_revision_and_outcome_never_values() {
    use tracing_subscriber::layer::SubscriberExt;
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tracing::subscriber::with_default(subscriber, || {
        rt.block_on(async {
            let store = MemStore::new().layer(TracingLayer);
            let rev = store
                .put(b"cfg/\x01a", b"secret-value", PutOptions::default())
                .await
                .unwrap()
                .revision;
            store.get(b"cfg/\x01a").await.unwrap();
            store
                .txn(
                    Txn::new()
                        .when([Compare::version("cfg/b", CompareOp::Equal, 3)])
                        .and_then([TxnOp::put("cfg/b", "secret-value"), TxnOp::get("x")]),
                )
                .await
                .unwrap();
            store.range(RangeOptions::prefix("cfg/")).await.unwrap();
            store
                .lease_keep_alive(keyplane_core::LeaseId(99))
                .await
                .unwrap_err();
            rev
        })
    });
    let spans = spans.0.lock().unwrap().clone();
    assert_eq!(spans.len(), 5, "{spans:?}");
    let field = |i: usize, name: &str| spans[i].get(name).cloned().unwrap_or_default();
    assert_eq!(field(0, "backend"), "memory");
    assert_eq!(field(0, "op"), "put");
    assert_eq!(field(0, "key"), "cfg/\\x01a");
    assert_eq!(field(0, "revision"), "2");
    assert_eq!(field(0, "outcome"), "ok");
    assert_eq!(
        (field(1, "op"), field(1, "revision")),
        ("get".into(), "2".into())
    );
    assert_eq!(field(2, "op"), "txn");
    assert_eq!(field(2, "key"), "cfg/b (+1 ops)");
    assert_eq!(field(2, "outcome"), "compare_failed");
    assert_eq!(field(3, "key"), "cfg/*");
    assert_eq!(field(4, "op"), "lease_keep_alive");
    assert_eq!(field(4, "key"), "lease 63"); // lease ids are shown in hex
    assert_eq!(field(4, "outcome"), "lease_not_found");
    assert!(
        !format!("{spans:?}").contains("secret-value"),
        "a value was recorded: {spans:?}"
    );
}

#[test]
fn metrics_count_and_time_every_call_by_backend_operation_and_outcome() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || {
        rt.block_on(async {
            let store = MemStore::new().layer(MetricsLayer);
            store.put(b"a", b"1", PutOptions::default()).await.unwrap();
            store.put(b"b", b"2", PutOptions::default()).await.unwrap();
            store.get(b"a").await.unwrap();
            store
                .txn(Txn::new().when([Compare::absent("a")]))
                .await
                .unwrap();
            store.get(b"").await.unwrap_err();
        })
    });
    let mut counters = BTreeMap::new();
    let mut histograms = BTreeMap::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let (_, key) = key.into_parts();
        let mut labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        labels.sort();
        let id = format!("{}{{{}}}", key.name(), labels.join(","));
        match value {
            DebugValue::Counter(n) => {
                counters.insert(id, n);
            }
            DebugValue::Histogram(samples) => {
                histograms.insert(id, samples.len());
            }
            DebugValue::Gauge(_) => panic!("no gauge expected: {id}"),
        }
    }
    let expected = BTreeMap::from([
        (
            "keyplane_operations_total{backend=memory,operation=put,outcome=ok}".to_owned(),
            2,
        ),
        (
            "keyplane_operations_total{backend=memory,operation=get,outcome=ok}".to_owned(),
            1,
        ),
        (
            "keyplane_operations_total{backend=memory,operation=txn,outcome=compare_failed}"
                .to_owned(),
            1,
        ),
        (
            "keyplane_operations_total{backend=memory,operation=get,outcome=invalid_key}"
                .to_owned(),
            1,
        ),
    ]);
    assert_eq!(counters, expected);
    let timed: BTreeMap<String, u64> = histograms
        .into_iter()
        .map(|(id, n)| {
            (
                id.replace(MetricsLayer::DURATION, MetricsLayer::OPERATIONS),
                n as u64,
            )
        })
        .collect();
    assert_eq!(timed, expected, "one duration per counted call");
}

/// Runs the same calls through a fault layer seeded with `seed`: what each call answered,
/// and the faults injected.
async fn faulty_run(seed: u64) -> (Vec<String>, Vec<keyplane_core::layer::Injection>) {
    let store = MemStore::new().layer(
        FaultLayer::new(seed)
            .with(Fault::unavailable().probability(0.2).keys("a/*"))
            .with(Fault::timeout().on([Call::Put]).probability(0.2))
            .with(Fault::compare_failure().probability(0.5)),
    );
    let mut outcomes = Vec::new();
    for i in 0..120 {
        let key = format!("{}/{}", ["a", "b"][i % 2], i % 7);
        let outcome = match i % 3 {
            0 => store
                .put(key.as_bytes(), b"v", PutOptions::default())
                .await
                .map(|r| r.revision.to_string()),
            1 => store
                .get(key.as_bytes())
                .await
                .map(|e| format!("{:?}", e.map(|e| e.version))),
            _ => store
                .txn(
                    Txn::new()
                        .when([Compare::exists(&key)])
                        .and_then([TxnOp::delete(&key)]),
                )
                .await
                .map(|r| r.succeeded.to_string()),
        };
        outcomes.push(match outcome {
            Ok(o) => o,
            Err(e) => e.kind().code().to_owned(),
        });
    }
    (outcomes, store.injections())
}

#[tokio::test]
async fn fault_injection_is_reproducible_from_the_seed() {
    let (outcomes, injections) = faulty_run(2024).await;
    assert_eq!(
        faulty_run(2024).await,
        (outcomes.clone(), injections.clone())
    );
    assert!(injections.len() > 20, "{}", injections.len());
    for rule in 0..3 {
        assert!(
            injections.iter().any(|i| i.rule == rule),
            "rule {rule} never fired"
        );
    }
    // The key pattern holds: the unavailable rule fired only on keys under a/ (even calls).
    assert!(
        injections
            .iter()
            .filter(|i| i.rule == 0)
            .all(|i| i.call_number % 2 == 0)
    );
    assert_ne!(faulty_run(2025).await.1, injections);
}

#[tokio::test]
async fn faults_after_some_calls_for_some_times_and_switched_off() {
    let store = MemStore::new().layer(
        FaultLayer::new(0).with(
            Fault::unavailable()
                .on([Call::Txn, Call::Put])
                .after(2)
                .times(2),
        ),
    );
    let mut answers = Vec::new();
    for i in 0..6 {
        let key = format!("k{i}");
        let put = store.put(key.as_bytes(), b"v", PutOptions::default());
        answers.push(put.await.is_ok());
    }
    assert_eq!(answers, [true, true, false, false, true, true]);
    let err = {
        let store = MemStore::new().layer(FaultLayer::new(0).with(Fault::unavailable()));
        store.set_enabled(false);
        store.put(b"k", b"v", PutOptions::default()).await.unwrap();
        store.set_enabled(true);
        store.get(b"k").await.unwrap_err()
    };
    assert!(err.is_unapplied() && err.is_retryable());
    assert!(err.to_string().contains("injected fault"), "{err}");
}

#[tokio::test]
async fn namespace_isolation_holds_both_ways() {
    let shared: Arc<dyn Store> = Arc::new(MemStore::new());
    let ns = shared.clone().layer(NamespaceLayer::new("t/1/").unwrap());
    let other = shared.clone().layer(NamespaceLayer::new("t/10/").unwrap());
    shared
        .put(b"t/1/outside-written", b"x", PutOptions::default())
        .await
        .unwrap();
    shared
        .put(b"t/2/a", b"y", PutOptions::default())
        .await
        .unwrap();
    other.put(b"a", b"z", PutOptions::default()).await.unwrap();
    let mut watch = ns
        .watch(WatchOptions::prefix("").with_collections())
        .await
        .unwrap();
    // Inside: a leased key, a set, a compare on an inside key.
    let lease = ns.lease_grant(Duration::from_secs(60)).await.unwrap();
    ns.put(b"leased", b"1", PutOptions::default().lease(lease.id))
        .await
        .unwrap();
    ns.collection(CollectionOp::SetAdd {
        key: b"set".to_vec(),
        member: b"m".to_vec(),
    })
    .await
    .unwrap();
    let resp = ns
        .txn(
            Txn::new()
                .when([Compare::exists("outside-written")])
                .and_then([TxnOp::put("cas", "ok")]),
        )
        .await
        .unwrap();
    assert!(
        resp.succeeded,
        "a key written outside under the prefix is inside"
    );
    // The shared store sees the prefixed keys; the namespace sees only its own.
    let keys: Vec<Vec<u8>> = ns
        .range(RangeOptions::prefix(""))
        .await
        .unwrap()
        .entries
        .into_iter()
        .map(|e| e.key)
        .collect();
    assert_eq!(
        keys,
        [
            b"cas".to_vec(),
            b"leased".to_vec(),
            b"outside-written".to_vec()
        ]
    );
    assert!(shared.get(b"t/1/leased").await.unwrap().is_some());
    assert!(
        ns.get(b"a").await.unwrap().is_none(),
        "t/10/a leaked into t/1/"
    );
    ns.lease_revoke(lease.id).await.unwrap();
    assert!(shared.get(b"t/1/leased").await.unwrap().is_none());
    // The watch saw the namespace's own changes, unprefixed, and nothing else.
    shared
        .put(b"t/2/b", b"y", PutOptions::default())
        .await
        .unwrap();
    shared
        .put(b"t/1/last", b"y", PutOptions::default())
        .await
        .unwrap();
    let mut seen = Vec::new();
    while !seen.iter().any(|k| k == b"last") {
        let batch = watch.next().await.unwrap().unwrap();
        seen.extend(batch.events.iter().map(|e| e.key().to_vec()));
    }
    assert_eq!(
        seen,
        [&b"leased"[..], b"set", b"cas", b"leased", b"last"].map(|k| k.to_vec())
    );
    // Bad input is refused, and a layer's prefix must leave room.
    assert_eq!(ns.get(b"").await.unwrap_err().kind(), ErrorKind::InvalidKey);
    assert!(NamespaceLayer::new("").is_err());
    assert!(NamespaceLayer::new(vec![b'a'; keyplane_core::raw::MAX_KEY_LEN]).is_err());
}

#[tokio::test]
async fn read_only_refuses_every_write_before_the_backend() {
    let inner = Arc::new(MemStore::new());
    inner.put(b"k", b"v", PutOptions::default()).await.unwrap();
    inner
        .collection(CollectionOp::SetAdd {
            key: b"s".to_vec(),
            member: b"m".to_vec(),
        })
        .await
        .unwrap();
    let lease = inner.lease_grant(Duration::from_secs(60)).await.unwrap();
    let before = inner.revision().await.unwrap();
    let ro = inner.clone().layer(ReadOnlyLayer);
    let writes: Vec<(&str, Result<()>)> = vec![
        (
            "put",
            ro.put(b"k", b"x", PutOptions::default()).await.map(drop),
        ),
        ("delete", ro.delete(b"k").await.map(drop)),
        ("delete_prefix", ro.delete_prefix(b"k").await.map(drop)),
        (
            "txn",
            ro.txn(Txn::new().and_then([TxnOp::get("k"), TxnOp::put("k", "x")]))
                .await
                .map(drop),
        ),
        (
            "collection",
            ro.collection(CollectionOp::SetAdd {
                key: b"s".to_vec(),
                member: b"n".to_vec(),
            })
            .await
            .map(drop),
        ),
        (
            "lease_grant",
            ro.lease_grant(Duration::from_secs(5)).await.map(drop),
        ),
        (
            "lease_keep_alive",
            ro.lease_keep_alive(lease.id).await.map(drop),
        ),
        ("lease_revoke", ro.lease_revoke(lease.id).await.map(drop)),
        ("compact", ro.compact(before).await.map(drop)),
    ];
    for (name, result) in writes {
        let err = result.expect_err(name);
        assert_eq!(err.kind(), ErrorKind::ReadOnly, "{name}: {err}");
        assert!(err.to_string().contains(name), "{err}");
    }
    assert_eq!(inner.revision().await.unwrap(), before);
    // Reads go through, read-only transactions and collection reads included.
    assert_eq!(ro.get(b"k").await.unwrap().unwrap().value, b"v");
    assert!(
        ro.txn(Txn::new().and_then([TxnOp::get("k")]))
            .await
            .unwrap()
            .succeeded
    );
    ro.collection(CollectionOp::SetContains {
        key: b"s".to_vec(),
        member: b"m".to_vec(),
    })
    .await
    .unwrap();
    assert_eq!(
        ro.range(RangeOptions::new(KeyRange::Prefix(b"".to_vec())))
            .await
            .unwrap()
            .entries
            .len(),
        1
    );
    ro.lease_time_to_live(lease.id).await.unwrap();
    let _watch = ro.watch(WatchOptions::key("k")).await.unwrap();
}

#[tokio::test]
async fn an_arc_dyn_store_takes_layers_and_a_stack_is_a_store() {
    let shared: Arc<dyn Store> = Arc::new(MemStore::new());
    let stack: Arc<dyn Store> = Arc::new(
        shared
            .clone()
            .layer(NamespaceLayer::new("app/").unwrap())
            .layer(FaultLayer::new(0))
            .layer(MetricsLayer)
            .layer(TracingLayer)
            .layer(TimeoutLayer::new(Duration::from_secs(5)))
            .layer(RetryLayer::default()),
    );
    stack.put(b"k", b"v", PutOptions::default()).await.unwrap();
    assert_eq!(shared.get(b"app/k").await.unwrap().unwrap().value, b"v");
    assert_eq!(stack.capabilities().backend, "memory");
}
