//! [`Mirror`](keyplane_core::Mirror): a typed local copy of a directory, kept current by a
//! watch, on every backend.

use super::support::{EVENT_TIMEOUT, root};
use futures::StreamExt;
use keyplane_core::intercept::{Call, Intercepted, Interceptor};
use keyplane_core::keyspace::{Key, Prefix, Text, TypedEvent, TypedStore};
use keyplane_core::{
    CollectionChange, CollectionKind, CollectionOp, CollectionResult, CollectionValue, MirrorCause,
    MirrorSnapshot, PutOptions, RangeOptions, Result, Store, Txn, TxnOp,
};
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
    id: u64,
}

/// The directory of items.
#[derive(Prefix, Debug, Clone, PartialEq)]
#[kv(template = "{root}/mirror/", key = ItemKey)]
pub struct ItemsDir {
    root: Root,
}

struct Case {
    typed: TypedStore,
    root: Root,
}

impl Case {
    fn new(store: Arc<dyn Store>) -> Self {
        let raw = String::from_utf8(root()).expect("an ASCII root");
        Case {
            typed: TypedStore::new(store),
            root: Root::new(raw.trim_end_matches('/')).expect("a valid root"),
        }
    }

    fn key(&self, id: u64) -> ItemKey {
        ItemKey {
            root: self.root.clone(),
            id,
        }
    }

    /// A mirror of the case's directory, with the default settings.
    async fn mirror(&self) -> keyplane_core::Mirror<ItemKey, String> {
        self.typed
            .mirror(&self.dir())
            .unwrap()
            .start()
            .await
            .unwrap()
    }

    fn dir(&self) -> ItemsDir {
        ItemsDir {
            root: self.root.clone(),
        }
    }

    async fn put(&self, id: u64, value: &str) -> i64 {
        self.typed
            .put(&self.key(id), &value.to_string())
            .await
            .unwrap()
    }

    /// The directory as the store holds it at `revision`: raw key → (value, mod revision).
    async fn listing(&self, revision: i64) -> BTreeMap<Vec<u8>, (Vec<u8>, i64)> {
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
    async fn assert_exact(&self, view: &MirrorSnapshot<ItemKey, String>) {
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

async fn timed<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
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

#[keyplane_core::async_trait]
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
    let intercepted: Arc<dyn Store> =
        Arc::new(Intercepted::new(store.clone(), ArcHold(Arc::clone(&hold))));
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

/// The interceptor, shared with the case.
struct ArcHold(Arc<HoldWatch>);

#[keyplane_core::async_trait]
impl Interceptor for ArcHold {
    async fn before(&self, call: Call) -> Result<()> {
        self.0.before(call).await
    }
}

/// The key of collection `id` of the case (it parses as an [`ItemKey`]).
fn collection_key(case: &Case, id: u64) -> Vec<u8> {
    case.key(id).encode().into_bytes()
}

/// A mirror with collections.
async fn collection_mirror(case: &Case) -> keyplane_core::Mirror<ItemKey, String> {
    case.typed
        .mirror(&case.dir())
        .unwrap()
        .with_collections()
        .start()
        .await
        .unwrap()
}

/// Every collection under the case's directory, read now (the store must be quiet): raw key
/// and kind → contents.
async fn read_collections(case: &Case) -> BTreeMap<(Vec<u8>, CollectionKind), CollectionValue> {
    let store = case.typed.store();
    let prefix = case.dir().encode().into_bytes();
    let page = store
        .range(RangeOptions::prefix(&prefix).with_collections())
        .await
        .unwrap();
    assert!(page.next.is_none(), "one page holds the case's keys");
    let mut all = BTreeMap::new();
    for c in page.collections {
        let contents = match c.kind {
            CollectionKind::Set => match store
                .collection(CollectionOp::SetMembers { key: c.key.clone() })
                .await
                .unwrap()
            {
                CollectionResult::Members(m) => CollectionValue::Set(m.into_iter().collect()),
                other => panic!("{other:?}"),
            },
            CollectionKind::Map => match store
                .collection(CollectionOp::MapGetAll { key: c.key.clone() })
                .await
                .unwrap()
            {
                CollectionResult::Fields(f) => CollectionValue::Map(f.into_iter().collect()),
                other => panic!("{other:?}"),
            },
            CollectionKind::List => match store
                .collection(CollectionOp::ListRange {
                    key: c.key.clone(),
                    start: 0,
                    stop: -1,
                })
                .await
                .unwrap()
            {
                CollectionResult::Items(i) => CollectionValue::List(i),
                other => panic!("{other:?}"),
            },
        };
        all.insert((c.key, c.kind), contents);
    }
    all
}

/// The collections a view holds, as [`read_collections`] gives them.
fn mirrored_collections(
    view: &MirrorSnapshot<ItemKey, String>,
) -> BTreeMap<(Vec<u8>, CollectionKind), CollectionValue> {
    view.collections()
        .map(|(k, c)| ((k.encode().into_bytes(), c.kind()), c.clone()))
        .collect()
}

fn set_add(key: &[u8], member: &str) -> TxnOp {
    TxnOp::Collection(CollectionOp::SetAdd {
        key: key.to_vec(),
        member: member.as_bytes().to_vec(),
    })
}

fn list_push(key: &[u8], item: &str) -> TxnOp {
    TxnOp::Collection(CollectionOp::ListPush {
        key: key.to_vec(),
        value: item.as_bytes().to_vec(),
    })
}

/// A mirror with collections loads the sets, maps and lists of its range with the plain
/// keys, then follows their changes (a deleted one disappears), and its subscribers get the
/// collection changes of each transaction.
pub async fn mirror_with_collections_lists_then_follows(store: Arc<dyn Store>) {
    let case = Case::new(store.clone());
    case.put(0, "plain").await;
    let (set, map, list) = (
        collection_key(&case, 1),
        collection_key(&case, 2),
        collection_key(&case, 3),
    );
    store
        .txn(Txn::new().and_then([
            set_add(&set, "a"),
            set_add(&set, "b"),
            TxnOp::Collection(CollectionOp::MapPut {
                key: map.clone(),
                field: b"f".to_vec(),
                value: b"v".to_vec(),
            }),
            list_push(&list, "x"),
            list_push(&list, "y"),
        ]))
        .await
        .unwrap();
    let mirror = collection_mirror(&case).await;
    let view = mirror.snapshot();
    assert_eq!(view.len(), 1);
    assert_eq!(view.collection_count(), 3);
    assert_eq!(mirrored_collections(&view), read_collections(&case).await);
    let members: Vec<&[u8]> = view
        .set(&case.key(1))
        .unwrap()
        .iter()
        .map(Vec::as_slice)
        .collect();
    assert_eq!(members, [&b"a"[..], b"b"]);
    assert_eq!(view.map(&case.key(2)).unwrap()[&b"f"[..]], b"v");
    assert_eq!(
        view.list(&case.key(3)).unwrap(),
        [b"x".to_vec(), b"y".to_vec()]
    );
    assert!(view.set(&case.key(3)).is_none(), "a list is not a set");

    let mut changes = mirror.subscribe();
    let written = store
        .txn(Txn::new().and_then([
            TxnOp::put(collection_key(&case, 0), "changed"),
            set_add(&set, "c"),
            TxnOp::Collection(CollectionOp::ListRotate { key: list.clone() }),
            TxnOp::delete(&map),
        ]))
        .await
        .unwrap()
        .revision;
    let view = timed("the mirror catching up", mirror.wait_for(written))
        .await
        .unwrap();
    assert_eq!(mirrored_collections(&view), read_collections(&case).await);
    assert!(view.map(&case.key(2)).is_none(), "a deleted map disappears");
    assert_eq!(
        view.list(&case.key(3)).unwrap(),
        [b"y".to_vec(), b"x".to_vec()]
    );
    assert_eq!(view.get(&case.key(0)).unwrap().value, "changed");
    let batch = timed("the subscription", changes.next()).await.unwrap();
    assert_eq!((batch.revision, batch.events.len()), (written, 1));
    let described: Vec<(u64, CollectionChange)> = batch
        .collections
        .iter()
        .map(|e| {
            (
                ItemKey::parse(std::str::from_utf8(&e.key).unwrap())
                    .unwrap()
                    .id,
                e.change.clone(),
            )
        })
        .collect();
    assert!(described.contains(&(
        1,
        CollectionChange::SetAdd {
            member: b"c".to_vec()
        }
    )));
    assert!(described.contains(&(
        3,
        CollectionChange::ListRotate {
            item: b"x".to_vec()
        }
    )));
    assert!(described.contains(&(2, CollectionChange::Deleted)));
    let health = mirror.health();
    assert_eq!((health.relists, health.collections), (0, 2));
}

/// With collections too, readers never see part of a transaction, including while the
/// mirror loads under a running writer: each transaction sets a counter and adds one member
/// to a set and one item to a list, so every view has as many members and items as the
/// counter says.
pub async fn mirror_with_collections_never_shows_half_a_transaction(store: Arc<dyn Store>) {
    let case = Arc::new(Case::new(store.clone()));
    let (set, list, counter) = (
        collection_key(&case, 1),
        collection_key(&case, 2),
        collection_key(&case, 0),
    );
    let generation = move |g: u64| {
        Txn::new().and_then([
            TxnOp::put(&counter, g.to_string()),
            set_add(&set, &format!("m{g}")),
            list_push(&list, &format!("i{g}")),
        ])
    };
    for g in 1..=10 {
        store.txn(generation(g)).await.unwrap();
    }
    let writer = {
        let store = store.clone();
        tokio::spawn(async move {
            let mut last = 0;
            for g in 11..=80 {
                last = store.txn(generation(g)).await.unwrap().revision;
                tokio::task::yield_now().await;
            }
            last
        })
    };
    // Loaded while the writer runs.
    let mirror = collection_mirror(&case).await;
    let check = |view: &MirrorSnapshot<ItemKey, String>| {
        let count: usize = view
            .get(&case.key(0))
            .map_or(0, |v| v.value.parse().unwrap());
        let members = view.set(&case.key(1)).map_or(0, |s| s.len());
        let items = view.list(&case.key(2)).map_or(0, <[_]>::len);
        assert_eq!(
            (members, items),
            (count, count),
            "a view with part of a transaction at {}",
            view.revision()
        );
    };
    // At least one view while the writer may still run: a fast writer can finish before
    // this task is first polled.
    let mut checks = 0u64;
    loop {
        check(&mirror.snapshot());
        checks += 1;
        if writer.is_finished() {
            break;
        }
        tokio::task::yield_now().await;
    }
    let last = writer.await.unwrap();
    let view = timed("the mirror catching up", mirror.wait_for(last))
        .await
        .unwrap();
    check(&view);
    assert!(checks > 0);
    assert_eq!(view.set(&case.key(1)).unwrap().len(), 80);
    assert_eq!(mirrored_collections(&view), read_collections(&case).await);
}

/// Concurrent writers on sets, maps, lists and plain keys, the mirror started in the
/// middle: it converges to exactly what the store holds.
pub async fn mirror_with_collections_converges(store: Arc<dyn Store>) {
    let case = Arc::new(Case::new(store.clone()));
    let write = |case: Arc<Case>, w: u64| async move {
        let store = case.typed.store().clone();
        let mut last = 0;
        for i in 0..30u64 {
            let id = (w * 5 + i * 3) % 9;
            let key = collection_key(&case, id);
            let member = format!("v{}", i % 4).into_bytes();
            let op = match id % 3 {
                0 if i % 3 == 0 => CollectionOp::SetRemove { key, member },
                0 => CollectionOp::SetAdd { key, member },
                1 if i % 4 == 0 => CollectionOp::MapDelete { key, field: member },
                1 => CollectionOp::MapPut {
                    key,
                    field: member,
                    value: format!("{w}-{i}").into_bytes(),
                },
                _ if i % 5 == 0 => CollectionOp::ListRemove { key, value: member },
                _ if i % 5 == 1 => CollectionOp::ListRotate { key },
                _ => CollectionOp::ListPush { key, value: member },
            };
            let plain = TxnOp::put(collection_key(&case, 10 + w), format!("{i}"));
            last = store
                .txn(Txn::new().and_then([TxnOp::Collection(op), plain]))
                .await
                .unwrap()
                .revision;
        }
        last
    };
    let early: Vec<_> = (0..2)
        .map(|w| tokio::spawn(write(Arc::clone(&case), w)))
        .collect();
    let mirror = collection_mirror(&case).await;
    let late: Vec<_> = (2..4)
        .map(|w| tokio::spawn(write(Arc::clone(&case), w)))
        .collect();
    let mut last = 0;
    for writer in early.into_iter().chain(late) {
        last = last.max(writer.await.unwrap());
    }
    let view = timed("the mirror converging", mirror.wait_for(last))
        .await
        .unwrap();
    assert_eq!(mirrored_collections(&view), read_collections(&case).await);
    case.assert_exact(&view).await;
    assert_eq!(mirror.health().relists, 0);
}
