//! [`Mirror`](keyplane_core::mirror::Mirror): a typed local copy of a directory, kept current by a
//! watch, on every backend.

use super::support::{EVENT_TIMEOUT, root};
use futures::StreamExt;
use keyplane_core::keyspace::{Key, Prefix, Text, TypedEvent, TypedStore};
use keyplane_core::layer::{Call, FaultLayer, Interceptor, StoreExt};
use keyplane_core::mirror::{MirrorCause, MirrorSnapshot};
use keyplane_core::{PutOptions, RangeOptions, Result, Store};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

keyplane_core::text_segment!(
    /// A case's key root without its trailing slash (`ct-<uuid>`).
    pub Root, charset = "[a-z0-9-]", max_len = 63, policy = Reject
);

/// One mirrored item: `{root}/mirror/{id}`, a text value.
#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "{root}/mirror/{id}", value = Text)]
pub struct ItemKey {
    root: Root,
    pub(super) id: u64,
}

/// The directory of items.
#[derive(Prefix, Debug, Clone, PartialEq)]
#[kv(template = "{root}/mirror/", key = ItemKey)]
pub struct ItemsDir {
    root: Root,
}

pub(super) struct Case {
    pub(super) typed: TypedStore,
    pub(super) root: Root,
}

impl Case {
    pub(super) fn new(store: Arc<dyn Store>) -> Self {
        let raw = String::from_utf8(root()).expect("an ASCII root");
        Case {
            typed: TypedStore::new(store),
            root: Root::new(raw.trim_end_matches('/')).expect("a valid root"),
        }
    }

    pub(super) fn key(&self, id: u64) -> ItemKey {
        ItemKey {
            root: self.root.clone(),
            id,
        }
    }

    /// A mirror of the case's directory, with the default settings.
    pub(super) async fn mirror(&self) -> keyplane_core::mirror::Mirror<ItemKey, String> {
        self.typed
            .mirror(&self.dir())
            .unwrap()
            .start()
            .await
            .unwrap()
    }

    pub(super) fn dir(&self) -> ItemsDir {
        ItemsDir {
            root: self.root.clone(),
        }
    }

    pub(super) async fn put(&self, id: u64, value: &str) -> i64 {
        self.typed
            .put(&self.key(id), &value.to_string())
            .await
            .unwrap()
    }

    /// The directory as the store holds it at `revision`: raw key → (value, mod revision).
    pub(super) async fn listing(&self, revision: i64) -> BTreeMap<Vec<u8>, (Vec<u8>, i64)> {
        let prefix = self.dir().encode().into_bytes();
        let mut opts = RangeOptions::prefix(&prefix)
            .limit(50)
            .at_revision(revision);
        let mut all = BTreeMap::new();
        loop {
            let page = self.typed.store().range(opts.clone()).await.unwrap();
            for e in page.entries {
                all.insert(e.key, (e.value, e.mod_revision));
            }
            match page.next {
                Some(next) => opts = opts.after(next),
                None => return all,
            }
        }
    }

    /// Checks that `view` is exactly the store's directory at the view's revision.
    pub(super) async fn assert_exact(&self, view: &MirrorSnapshot<ItemKey, String>) {
        let listed = self.listing(view.revision()).await;
        let mirrored: BTreeMap<Vec<u8>, (Vec<u8>, i64)> = view
            .iter()
            .map(|(k, v)| {
                (
                    k.encode().into_bytes(),
                    (v.value.clone().into_bytes(), v.mod_revision),
                )
            })
            .chain(
                view.unreadable()
                    .map(|(e, _)| (e.key.clone(), (e.value.clone(), e.mod_revision))),
            )
            .collect();
        assert_eq!(mirrored, listed, "the mirror at {}", view.revision());
    }
}

pub(super) async fn timed<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(EVENT_TIMEOUT, f)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen within {EVENT_TIMEOUT:?}"))
}

/// A mirror starts from a listing (a foreign key under the directory is unreadable, not
/// dropped), follows puts, deletes and transactions, and keeps its index current.
pub async fn mirror_lists_then_follows_writes(store: Arc<dyn Store>) {
    let case = Case::new(store.clone());
    for id in 0..5 {
        case.put(id, if id % 2 == 0 { "even" } else { "odd" }).await;
    }
    let foreign = format!("{}/mirror/not-a-number", case.root);
    store
        .put(foreign.as_bytes(), b"?", PutOptions::default())
        .await
        .unwrap();
    let mirror = case
        .typed
        .mirror(&case.dir())
        .unwrap()
        .index("parity", |_, value: &String| vec![value.clone()])
        .start()
        .await
        .unwrap();
    let view = mirror.snapshot();
    assert_eq!(view.len(), 5);
    assert_eq!(view.unreadable().count(), 1);
    assert_eq!(view.lookup("parity", "even").count(), 3);
    case.assert_exact(&view).await;

    case.put(1, "even").await;
    case.typed.delete(&case.key(0)).await.unwrap();
    let mut txn = case.typed.txn();
    txn.put(&case.key(7), &"odd".to_string())
        .put(&case.key(8), &"even".to_string())
        .delete(&case.key(2));
    let last = txn.commit().await.unwrap().revision;
    let view = timed("the mirror catching up", mirror.wait_for(last))
        .await
        .unwrap();
    assert!(view.revision() >= last);
    case.assert_exact(&view).await;
    let evens: Vec<u64> = view.lookup("parity", "even").map(|(k, _)| k.id).collect();
    assert_eq!(evens, [1, 4, 8]);
    assert_eq!(view.get(&case.key(7)).unwrap().value, "odd");
    assert!(view.get(&case.key(0)).is_none());
    let health = mirror.health();
    assert_eq!((health.relists, health.unreadable), (0, 1));
}

/// Concurrent writers: the mirror converges to the store, exactly, at its revision.
pub async fn mirror_converges_under_concurrent_writers(store: Arc<dyn Store>) {
    let case = Arc::new(Case::new(store));
    let mirror = case.mirror().await;
    let mut writers = Vec::new();
    for w in 0..4u64 {
        let case = Arc::clone(&case);
        writers.push(tokio::spawn(async move {
            let mut last = 0;
            for i in 0..40u64 {
                let id = (w * 7 + i * 3) % 16;
                last = match i % 4 {
                    0 => case.typed.delete(&case.key(id)).await.unwrap().revision,
                    1 => {
                        let mut txn = case.typed.txn();
                        txn.put(&case.key(id), &format!("{w}-{i}"))
                            .put(&case.key((id + 1) % 16), &format!("{w}-{i}"));
                        txn.commit().await.unwrap().revision
                    }
                    _ => case.put(id, &format!("{w}-{i}")).await,
                };
            }
            last
        }));
    }
    let mut last = 0;
    for writer in writers {
        last = last.max(writer.await.unwrap());
    }
    let view = timed("the mirror converging", mirror.wait_for(last))
        .await
        .unwrap();
    case.assert_exact(&view).await;
    assert_eq!(mirror.health().relists, 0);
}

/// Readers never see part of a transaction: every view holds all of a transaction's keys
/// at the same generation, or none of them.
pub async fn mirror_never_shows_half_a_transaction(store: Arc<dyn Store>) {
    let case = Arc::new(Case::new(store));
    let mirror = case.mirror().await;
    let done = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    for _ in 0..2 {
        let (mirror, done) = (mirror.clone(), Arc::clone(&done));
        readers.push(tokio::spawn(async move {
            let mut checks = 0u64;
            // At least one check, however fast the writer is.
            loop {
                let stop = done.load(Ordering::Acquire);
                let view = mirror.snapshot();
                let values: Vec<&str> = view.iter().map(|(_, v)| v.value.as_str()).collect();
                assert!(
                    values.is_empty()
                        || (values.len() == 5 && values.iter().all(|v| *v == values[0])),
                    "a view with part of a transaction at {}: {values:?}",
                    view.revision()
                );
                checks += 1;
                if stop {
                    break;
                }
                tokio::task::yield_now().await;
            }
            checks
        }));
    }
    let mut last = 0;
    for generation in 0..60 {
        let mut txn = case.typed.txn();
        for id in 0..5 {
            txn.put(&case.key(id), &format!("g{generation}"));
        }
        last = txn.commit().await.unwrap().revision;
    }
    let view = timed("the mirror catching up", mirror.wait_for(last))
        .await
        .unwrap();
    done.store(true, Ordering::Release);
    let mut checks = 0;
    for reader in readers {
        checks += reader.await.unwrap();
    }
    assert!(checks > 0);
    assert!(view.iter().all(|(_, v)| v.value == "g59"));
}

/// A subscription delivers every change once, in order, after it is visible.
pub async fn mirror_subscription_delivers_each_change_once(store: Arc<dyn Store>) {
    let case = Case::new(store);
    let mirror = case.mirror().await;
    let mut changes = mirror.subscribe();
    let mut expected = Vec::new();
    for i in 0..20u64 {
        let id = i % 6;
        if i % 5 == 4 {
            let revision = case.typed.delete(&case.key(id)).await.unwrap().revision;
            expected.push((revision, id, None));
        } else {
            let revision = case.put(id, &format!("v{i}")).await;
            expected.push((revision, id, Some(format!("v{i}"))));
        }
    }
    // A delete of an absent key is no change; drop what the store did not report.
    let last = expected.last().unwrap().0;
    let mut seen = Vec::new();
    let mut previous = 0;
    while previous < last {
        let batch = timed("a mirror batch", changes.next()).await.unwrap();
        assert_eq!(batch.cause, MirrorCause::Watch);
        assert!(batch.revision > previous, "batches out of order");
        previous = batch.revision;
        assert!(
            mirror.revision() >= batch.revision,
            "a change before its view"
        );
        for event in batch.events {
            match event {
                TypedEvent::Put { key, value } => {
                    seen.push((batch.revision, key.id, Some(value.value)))
                }
                TypedEvent::Delete { key } => seen.push((batch.revision, key.id, None)),
                TypedEvent::Unreadable { event, error } => panic!("{event:?}: {error}"),
            }
        }
    }
    // Deletes of keys that were already absent are not changes.
    let mut present = std::collections::BTreeSet::new();
    expected.retain(|(_, id, value)| match value {
        Some(_) => {
            present.insert(*id);
            true
        }
        None => present.remove(id),
    });
    assert_eq!(seen, expected);
}

/// `wait_for` a revision written outside the directory: the mirror confirms it reflects it.
pub async fn mirror_waits_for_a_write_outside_its_range(store: Arc<dyn Store>) {
    let case = Case::new(store.clone());
    case.put(1, "a").await;
    let mirror = case.mirror().await;
    let elsewhere = [root(), b"other".to_vec()].concat();
    let revision = store
        .put(&elsewhere, b"x", PutOptions::default())
        .await
        .unwrap()
        .revision;
    let view = timed("the confirmation", mirror.wait_for(revision))
        .await
        .unwrap();
    assert!(view.revision() >= revision);
    assert_eq!(view.len(), 1);
    case.assert_exact(&view).await;
    let health = mirror.health();
    assert_eq!(health.relists, 0);
    assert!(health.store_revision >= revision);
}

/// A periodic resync finds nothing to repair on a mirror that followed its watch.
pub async fn mirror_resync_finds_no_drift(store: Arc<dyn Store>) {
    let case = Case::new(store);
    case.put(1, "a").await;
    let mirror = case
        .typed
        .mirror(&case.dir())
        .unwrap()
        .resync_every(Duration::from_millis(20))
        .start()
        .await
        .unwrap();
    case.put(2, "b").await;
    timed("two resyncs", async {
        while mirror.health().resyncs < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let health = mirror.health();
    assert_eq!((health.repaired, health.relists), (0, 0));
}

/// Holds the next `watch` call until released.
#[derive(Default)]
struct HoldWatch {
    armed: AtomicBool,
    entered: Notify,
    release: Notify,
}

#[keyplane_core::raw::async_trait]
impl Interceptor for HoldWatch {
    async fn before(&self, call: Call) -> Result<()> {
        if call == Call::Watch && self.armed.swap(false, Ordering::AcqRel) {
            self.entered.notify_one();
            self.release.notified().await;
        }
        Ok(())
    }
}

/// A compaction past the revision the mirror listed at makes it list once more; it then
/// holds what was written meanwhile.
pub async fn mirror_relists_once_after_compaction(store: Arc<dyn Store>) {
    let hold = Arc::new(HoldWatch::default());
    hold.armed.store(true, Ordering::Release);
    let intercepted: Arc<dyn Store> = Arc::new(
        store
            .clone()
            .layer(FaultLayer::new(0).intercept(Arc::clone(&hold))),
    );
    let case = Case::new(store.clone());
    case.put(1, "before").await;
    let typed = TypedStore::new(intercepted);
    let builder = typed.mirror(&case.dir()).unwrap();
    let starting = tokio::spawn(builder.start());
    timed("the mirror's watch", hold.entered.notified()).await;
    case.put(2, "meanwhile").await;
    case.typed.delete(&case.key(1)).await.unwrap();
    let last = case.put(3, "meanwhile").await;
    store.compact(last).await.unwrap();
    hold.release.notify_one();
    let mirror = timed("the mirror starting", starting)
        .await
        .unwrap()
        .unwrap();
    let view = timed("the mirror catching up", mirror.wait_for(last))
        .await
        .unwrap();
    case.assert_exact(&view).await;
    assert_eq!(view.len(), 2);
    assert_eq!(mirror.health().relists, 1);
}

pub use super::mirror_collections::{
    mirror_with_collections_converges, mirror_with_collections_lists_then_follows,
    mirror_with_collections_never_shows_half_a_transaction,
};
