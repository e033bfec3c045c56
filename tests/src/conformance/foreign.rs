//! Foreign writers: another program (a raw `etcdctl` or `redis-cli` style client) writes the
//! same keys as the store, and the store treats what it wrote as existing.
//!
//! Point reads, compares, deletes, prefix deletes and transactions see foreign keys at once
//! on every backend. Ranges and watches see them once the backend has brought them into its
//! index and history ([`ForeignWrites`](keyplane_core::ForeignWrites)); the cases call
//! [`RawWriter::settle`] for that, which is a no-op where foreign writes are immediate.
//!
//! Each case is a public `async fn(Arc<dyn Store>, Arc<dyn RawWriter>)` that panics on a
//! contract violation, under its own random key root (`ct-<uuid>/`). A backend runs them all
//! with [`foreign_suite!`](crate::foreign_suite).

mod deletes;

pub use deletes::foreign_deletes_are_never_listed;

use super::support::{collect_pages, key, names, put, rel, root};
use futures::StreamExt;
use keyplane_core::raw::{async_trait, escape_bytes};
use keyplane_core::{
    Compare, CompareOp, Event, OpResult, RangeOptions, Store, Txn, TxnOp, WatchOptions, WatchStream,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Guards a wait for watch events against a hang; the cases never wait for quiet time.
const HANG: Duration = Duration::from_secs(30);

/// The "other program": a raw client of the store's server that writes plain values at the
/// store's keys, with no knowledge of the store's metadata.
#[async_trait]
pub trait RawWriter: Send + Sync {
    /// Writes `value` at `key`, as `etcdctl put` or `redis-cli SET` would.
    async fn set(&self, key: &[u8], value: &[u8]);
    /// Deletes `key`; whether it existed.
    async fn del(&self, key: &[u8]) -> bool;
    /// The value at `key`, if any.
    async fn get(&self, key: &[u8]) -> Option<Vec<u8>>;
    /// Makes the foreign writes under `prefix` visible to the store's ranges and watches
    /// (nothing to do where the server's own history records them).
    async fn settle(&self, prefix: &[u8]);
}

/// Expands to one `#[tokio::test]` per foreign-writer case.
///
/// `setup` is a path to an `async fn() -> Option<(Arc<dyn Store>, Arc<dyn RawWriter>)>`,
/// called once per case; `None` (after the harness printed a SKIP line) passes without
/// running.
///
/// ```no_run
/// use keyplane_core::Store;
/// use keyplane_tests::conformance::foreign::RawWriter;
/// use std::sync::Arc;
///
/// async fn setup() -> Option<(Arc<dyn Store>, Arc<dyn RawWriter>)> {
///     None // a store and a raw client writing to the same server
/// }
/// keyplane_tests::foreign_suite!(setup);
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! foreign_suite {
    ($setup:path) => {
        $crate::foreign_suite!(@cases $setup;
            foreign_put_is_read,
            foreign_key_cas,
            store_delete_removes_foreign_key,
            foreign_keys_in_range,
            foreign_changes_reach_watch,
            store_writes_are_raw_readable,
            interleaved_foreign_and_store_writers,
            foreign_deletes_are_never_listed,
        );
    };
    (@cases $setup:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                if let Some((store, raw)) = $setup().await {
                    $crate::conformance::foreign::$case(store, raw).await;
                }
            }
        )*
    };
}

/// The raw value at `key`, which must exist.
async fn raw_value(raw: &dyn RawWriter, key: &[u8]) -> Vec<u8> {
    raw.get(key)
        .await
        .unwrap_or_else(|| panic!("raw get {}: the key is missing", escape_bytes(key)))
}

/// Runs `txn` and panics on an error.
async fn run(store: &dyn Store, txn: Txn) -> keyplane_core::TxnResponse {
    let text = format!("{txn:?}");
    store
        .txn(txn)
        .await
        .unwrap_or_else(|e| panic!("txn {text}: {e}"))
}

/// The next `n` events of a watch, whatever their batches; panics on a watch error, the end
/// of the stream, or when they do not arrive within 30 s.
pub async fn next_events(watch: &mut WatchStream, n: usize) -> Vec<Event> {
    let mut out = Vec::with_capacity(n);
    let waited = tokio::time::timeout(HANG, async {
        while out.len() < n {
            match watch.next().await {
                Some(Ok(batch)) => out.extend(batch.events),
                Some(Err(e)) => panic!("watch failed: {e}"),
                None => panic!("the watch ended"),
            }
        }
    })
    .await;
    if waited.is_err() {
        panic!(
            "only {} of {n} watch events within {HANG:?}: {out:?}",
            out.len()
        );
    }
    out
}

/// A compact description of an event with its version: `put k=v @1` or `delete k`.
fn describe(root: &[u8], event: &Event) -> String {
    match event {
        Event::Put { entry, .. } => format!(
            "put {}={} @{}",
            rel(root, &entry.key),
            escape_bytes(&entry.value),
            entry.version
        ),
        Event::Delete { key, .. } => format!("delete {}", rel(root, key)),
        Event::Collection(c) => format!("{:?} {} {:?}", c.kind, rel(root, &c.key), c.change),
    }
}

/// A key written by another program is read like the store's own: by `get`, by a txn's `get`
/// op and by value compares; it exists, so a create-if-absent txn fails and leaves it alone.
pub async fn foreign_put_is_read(store: Arc<dyn Store>, raw: Arc<dyn RawWriter>) {
    let root = root();
    let k = key(&root, "k");
    raw.set(&k, b"v").await;
    let entry = store.get(&k).await.unwrap().expect("get of a foreign key");
    assert_eq!(
        (entry.key.as_slice(), entry.value.as_slice()),
        (k.as_slice(), &b"v"[..])
    );
    assert!(entry.version >= 1, "{entry:?}");
    assert!(entry.create_revision > 0, "{entry:?}");
    assert!(entry.mod_revision >= entry.create_revision, "{entry:?}");
    let resp = run(&*store, Txn::new().and_then([TxnOp::get(&k)])).await;
    match &resp.results[..] {
        [OpResult::Get(Some(e))] => assert_eq!(e.value, b"v", "txn get"),
        other => panic!("txn get of a foreign key: {other:?}"),
    }
    for compare in [
        Compare::value(&k, CompareOp::Equal, "v"),
        Compare::exists(&k),
        Compare::version(&k, CompareOp::Greater, 0),
    ] {
        let resp = run(&*store, Txn::new().when([compare.clone()])).await;
        assert!(resp.succeeded, "{compare:?} must hold on a foreign key");
    }
    for compare in [
        Compare::absent(&k),
        Compare::create_revision(&k, CompareOp::Equal, 0),
        Compare::version(&k, CompareOp::Equal, 0),
    ] {
        let txn = Txn::new()
            .when([compare.clone()])
            .and_then([TxnOp::put(&k, "store")])
            .or_else([TxnOp::get(&k)]);
        let resp = run(&*store, txn).await;
        assert!(
            !resp.succeeded,
            "create-if-absent ({compare:?}) over a foreign key"
        );
        match &resp.results[..] {
            [OpResult::Get(Some(e))] => assert_eq!(e.value, b"v"),
            other => panic!("failure branch: {other:?}"),
        }
        assert_eq!(
            raw_value(&*raw, &k).await,
            b"v",
            "the foreign value is kept"
        );
    }
}

/// A compare-and-swap on a foreign key's `mod_revision` succeeds while nobody wrote it, and
/// fails after another program overwrote it.
pub async fn foreign_key_cas(store: Arc<dyn Store>, raw: Arc<dyn RawWriter>) {
    let root = root();
    let k = key(&root, "k");
    raw.set(&k, b"v1").await;
    let seen = store.get(&k).await.unwrap().expect("the foreign key");
    let cas = |rev: i64, value: &'static str| {
        Txn::new()
            .when([Compare::mod_revision(&k, CompareOp::Equal, rev)])
            .and_then([TxnOp::put(&k, value)])
    };
    let resp = run(&*store, cas(seen.mod_revision, "v2")).await;
    assert!(resp.succeeded, "CAS on an untouched foreign key: {seen:?}");
    assert_eq!(raw_value(&*raw, &k).await, b"v2");
    let ours = store.get(&k).await.unwrap().expect("the key after the CAS");
    assert_eq!(
        (ours.value.as_slice(), ours.mod_revision),
        (&b"v2"[..], resp.revision)
    );
    let stale = run(&*store, cas(seen.mod_revision, "stale")).await;
    assert!(!stale.succeeded, "CAS with an old mod_revision");
    // Another program overwrites the key between our read and our CAS: the CAS must fail.
    raw.set(&k, b"theirs").await;
    let lost = run(&*store, cas(ours.mod_revision, "lost")).await;
    assert!(!lost.succeeded, "CAS over a foreign overwrite");
    assert_eq!(raw_value(&*raw, &k).await, b"theirs");
}

/// `delete`, a txn's `delete` and `delete_prefix` remove foreign keys and count them; a key
/// outside the prefix survives.
pub async fn store_delete_removes_foreign_key(store: Arc<dyn Store>, raw: Arc<dyn RawWriter>) {
    let root = root();
    let k = key(&root, "k");
    raw.set(&k, b"v").await;
    let prev = store
        .delete(&k)
        .await
        .unwrap()
        .prev
        .expect("delete returns the foreign entry");
    assert_eq!(
        (prev.key.as_slice(), prev.value.as_slice()),
        (k.as_slice(), &b"v"[..])
    );
    assert_eq!(raw.get(&k).await, None, "the foreign key is gone");
    assert_eq!(store.get(&k).await.unwrap(), None);
    let t = key(&root, "t");
    raw.set(&t, b"v").await;
    let resp = run(&*store, Txn::new().and_then([TxnOp::delete(&t)])).await;
    assert_eq!(
        resp.results,
        [OpResult::Delete { deleted: 1 }],
        "txn delete"
    );
    assert_eq!(raw.get(&t).await, None);

    let dir = key(&root, "a/");
    let foreign: Vec<Vec<u8>> = ["a/1", "a/2", "a/3/x"].map(|s| key(&root, s)).into();
    let own: Vec<Vec<u8>> = ["a/4", "a/5"].map(|s| key(&root, s)).into();
    let (sibling, outside) = (key(&root, "ab"), key(&root, "a"));
    for k in foreign.iter().chain([&sibling]) {
        raw.set(k, b"f").await;
    }
    for k in own.iter().chain([&outside]) {
        put(&*store, k, "s").await;
    }
    assert_eq!(
        store.delete_prefix(&dir).await.unwrap().deleted,
        5,
        "3 foreign + 2 own keys"
    );
    for k in foreign.iter().chain(&own) {
        assert_eq!(raw.get(k).await, None, "{} survived", escape_bytes(k));
    }
    assert_eq!(raw.get(&sibling).await.as_deref(), Some(&b"f"[..]));
    assert_eq!(raw.get(&outside).await.as_deref(), Some(&b"s"[..]));
    let sib = store.get(&sibling).await.unwrap().expect("the sibling");
    assert_eq!(sib.value, b"f");
}

/// Once settled, foreign keys are listed by prefix ranges among the store's own, with their
/// values, in key order, and paging covers them.
pub async fn foreign_keys_in_range(store: Arc<dyn Store>, raw: Arc<dyn RawWriter>) {
    let root = root();
    for (k, v) in [("a", "1"), ("c", "3"), ("d", "4")] {
        raw.set(&key(&root, k), v.as_bytes()).await;
    }
    put(&*store, &key(&root, "b"), "2").await;
    raw.settle(&root).await;
    let all = store.range(RangeOptions::prefix(&root)).await.unwrap();
    assert_eq!(names(&root, &all.entries), ["a", "b", "c", "d"]);
    let values: Vec<&[u8]> = all.entries.iter().map(|e| e.value.as_slice()).collect();
    assert_eq!(values, [b"1", b"2", b"3", b"4"]);
    assert!(
        all.entries
            .iter()
            .all(|e| e.version >= 1 && e.mod_revision > 0)
    );
    let counted = store
        .range(RangeOptions::prefix(&root).count_only())
        .await
        .unwrap();
    assert_eq!(counted.count, 4);
    let paged = collect_pages(&*store, RangeOptions::prefix(&root), 2).await;
    assert_eq!(paged, all.entries, "pages of 2 cover the range");
}

/// A watch reports another program's create, overwrite and delete in order, and the store's
/// own write once, not again when foreign changes are settled.
pub async fn foreign_changes_reach_watch(store: Arc<dyn Store>, raw: Arc<dyn RawWriter>) {
    let root = root();
    let start = store.revision().await.unwrap() + 1;
    let mut watch = store
        .watch(WatchOptions::prefix(&root).from_revision(start))
        .await
        .unwrap();
    let k1 = key(&root, "k1");
    raw.set(&k1, b"v1").await;
    raw.settle(&root).await;
    raw.set(&k1, b"v2").await;
    raw.settle(&root).await;
    assert!(raw.del(&k1).await);
    raw.settle(&root).await;
    let seen = next_events(&mut watch, 3).await;
    let seen: Vec<String> = seen.iter().map(|e| describe(&root, e)).collect();
    assert_eq!(seen, ["put k1=v1 @1", "put k1=v2 @2", "delete k1"]);

    put(&*store, &key(&root, "k2"), "own").await;
    let own = next_events(&mut watch, 1).await;
    assert_eq!(describe(&root, &own[0]), "put k2=own @1");
    raw.settle(&root).await;
    put(&*store, &key(&root, "k3"), "own").await;
    let next = next_events(&mut watch, 1).await;
    assert_eq!(
        describe(&root, &next[0]),
        "put k3=own @1",
        "the store's own write is reported once"
    );
}

/// What the store writes, another program reads as plain values; what it deletes is gone.
pub async fn store_writes_are_raw_readable(store: Arc<dyn Store>, raw: Arc<dyn RawWriter>) {
    let root = root();
    let k = key(&root, "k");
    put(&*store, &k, b"\x01bytes\xff").await;
    assert_eq!(raw.get(&k).await.as_deref(), Some(&b"\x01bytes\xff"[..]));
    put(&*store, &k, "second").await;
    assert_eq!(raw.get(&k).await.as_deref(), Some(&b"second"[..]));
    let (a, b) = (key(&root, "d/a"), key(&root, "d/b"));
    run(
        &*store,
        Txn::new().and_then([TxnOp::put(&a, "1"), TxnOp::put(&b, "2")]),
    )
    .await;
    assert_eq!(raw.get(&a).await.as_deref(), Some(&b"1"[..]));
    assert_eq!(raw.get(&b).await.as_deref(), Some(&b"2"[..]));
    store
        .delete(&k)
        .await
        .unwrap()
        .prev
        .expect("the store's key");
    assert_eq!(raw.get(&k).await, None);
    assert_eq!(
        store
            .delete_prefix(&key(&root, "d/"))
            .await
            .unwrap()
            .deleted,
        2
    );
    assert_eq!((raw.get(&a).await, raw.get(&b).await), (None, None));
}

/// One program sets keys while the store creates the same keys if absent: a create succeeds
/// only on a key the other program had not yet written, and in the end the store and the
/// other program read the same value, the other program's (it wrote every key, and a create
/// that won came before its write).
pub async fn interleaved_foreign_and_store_writers(store: Arc<dyn Store>, raw: Arc<dyn RawWriter>) {
    const KEYS: usize = 50;
    let root = root();
    let keys: Arc<Vec<Vec<u8>>> =
        Arc::new((0..KEYS).map(|i| key(&root, format!("k{i:02}"))).collect());
    let written: Arc<Vec<AtomicBool>> =
        Arc::new((0..KEYS).map(|_| AtomicBool::new(false)).collect());
    let writer = {
        let (raw, keys, written) = (raw.clone(), keys.clone(), written.clone());
        tokio::spawn(async move {
            for (i, k) in keys.iter().enumerate() {
                raw.set(k, format!("raw-{i}").as_bytes()).await;
                written[i].store(true, Ordering::SeqCst);
            }
        })
    };
    let creator = {
        let (store, keys, written) = (store.clone(), keys.clone(), written.clone());
        tokio::spawn(async move {
            let mut won = 0;
            // In reverse, so that the two writers cross in the middle.
            for (i, k) in keys.iter().enumerate().rev() {
                let acknowledged = written[i].load(Ordering::SeqCst);
                let txn = Txn::new()
                    .when([Compare::absent(k)])
                    .and_then([TxnOp::put(k, format!("store-{i}"))])
                    .or_else([TxnOp::get(k)]);
                let resp = run(&*store, txn).await;
                if resp.succeeded {
                    assert!(
                        !acknowledged,
                        "k{i:02}: created over an acknowledged foreign write"
                    );
                    won += 1;
                } else {
                    match &resp.results[..] {
                        [OpResult::Get(Some(e))] => {
                            assert_eq!(e.value, format!("raw-{i}").into_bytes(), "k{i:02}")
                        }
                        other => panic!("k{i:02}: failed create-if-absent read {other:?}"),
                    }
                }
            }
            won
        })
    };
    writer.await.expect("the raw writer");
    let won = creator.await.expect("the store writer");
    for (i, k) in keys.iter().enumerate() {
        let theirs = raw_value(&*raw, k).await;
        let ours = store.get(k).await.unwrap().expect("every key exists");
        assert_eq!(
            ours.value, theirs,
            "k{i:02}: the store and the raw client agree"
        );
        assert_eq!(
            theirs,
            format!("raw-{i}").into_bytes(),
            "k{i:02}: the last write"
        );
    }
    eprintln!("interleaved writers: the store created {won} of {KEYS} keys first");
}
