//! The balancer's whole lifecycle on every backend: an idempotent rebuild from the source
//! (warm == cold, a changed source drops what it no longer has), concurrent rebuilds of one
//! group, removing a group, and repairing planted duplicate, stray and missing list entries.

use keyplane_core::keyspace::{Key, Keyspace, TypedStore};
use keyplane_core::{CollectionOp, RangeOptions, Store};
use keyplane_schemas::balancer::*;
use std::collections::BTreeMap;
use std::sync::Arc;

fn cache(store: Arc<dyn Store>) -> Balancer {
    let root = BalancerRoot::new(format!("bal{}", uuid::Uuid::new_v4().simple())).unwrap();
    Balancer::with_root(&TypedStore::new(store), root).unwrap()
}

fn key(id: u64, status: KeyStatus, groups: &[u64]) -> LoadedKey {
    LoadedKey {
        id,
        record: ApiKeyRecord {
            api_key: format!("sk-{id}"),
            status,
        },
        groups: groups.to_vec(),
    }
}

/// The source: ten keys over three groups, two of them disabled.
fn source() -> Vec<LoadedKey> {
    (1..=10)
        .map(|id| {
            let status = if id % 5 == 0 {
                KeyStatus::Disabled
            } else {
                KeyStatus::Active
            };
            let groups: Vec<u64> = [100, 200, 300]
                .into_iter()
                .filter(|g| id % (g / 100) == 0 || *g == 100)
                .collect();
            key(id, status, &groups)
        })
        .collect()
}

/// Everything the cache holds: each collection of the balancer with its contents, in order.
async fn contents(c: &Balancer) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for prefix in ["key:", "group:"] {
        let page = c
            .typed()
            .store()
            .range(RangeOptions::prefix(prefix).with_collections())
            .await
            .unwrap();
        for coll in page.collections {
            let name = String::from_utf8(coll.key.clone()).unwrap();
            let items = match BalancerKeyspace::parse(&name).unwrap() {
                BalancerKeyspace::Object(k) => {
                    let r = c.key(k.id).await.unwrap().unwrap();
                    vec![r.api_key, r.status.to_string()]
                }
                BalancerKeyspace::Groups(k) => c
                    .groups_of(k.id)
                    .await
                    .unwrap()
                    .iter()
                    .map(u64::to_string)
                    .collect(),
                BalancerKeyspace::Active(k) => c
                    .active_keys(k.id)
                    .await
                    .unwrap()
                    .iter()
                    .map(u64::to_string)
                    .collect(),
            };
            out.insert(name, items);
        }
    }
    out
}

async fn a_warm_rebuild_equals_a_cold_load(store: Arc<dyn Store>) {
    let cold = cache(store.clone());
    cold.load_keys(&source()).await.unwrap();
    let expected = contents(&cold).await;

    let warm = cache(store.clone());
    warm.load_keys(&source()).await.unwrap();
    // Life goes on: picks rotate, a key is disabled, a stray link, a duplicate.
    warm.pick(100).await.unwrap();
    warm.set_status(1, KeyStatus::Disabled).await.unwrap();
    warm.link(2, 300).await.unwrap();
    warm.load_keys(&[key(99, KeyStatus::Active, &[100, 400])])
        .await
        .unwrap();
    let report = warm.rebuild(&source()).await.unwrap();
    assert!(!report.unchanged());
    assert_eq!(
        (report.keys_removed, report.groups_removed),
        (1, 1),
        "{report:?}"
    );
    assert_eq!(contents(&warm).await, expected);

    // Again: nothing to write.
    let again = warm.rebuild(&source()).await.unwrap();
    assert!(again.unchanged(), "{again:?}");
    assert_eq!(contents(&warm).await, expected);

    // From an empty cache, a rebuild is a load.
    let fresh = cache(store.clone());
    fresh.rebuild(&source()).await.unwrap();
    assert_eq!(contents(&fresh).await, expected);
}

async fn a_changed_source_drops_what_it_no_longer_has(store: Arc<dyn Store>) {
    let c = cache(store);
    c.rebuild(&source()).await.unwrap();
    // Key 3 leaves, key 4 leaves group 200, group 300 goes, key 11 arrives.
    let changed: Vec<LoadedKey> = source()
        .into_iter()
        .filter(|k| k.id != 3)
        .map(|mut k| {
            k.groups.retain(|g| *g != 300 && !(k.id == 4 && *g == 200));
            k
        })
        .chain([key(11, KeyStatus::Active, &[200])])
        .collect();
    let report = c.rebuild(&changed).await.unwrap();
    assert_eq!(
        (report.keys_removed, report.groups_removed),
        (1, 1),
        "{report:?}"
    );
    assert_eq!(c.key(3).await.unwrap(), None);
    assert!(c.groups_of(3).await.unwrap().is_empty());
    assert!(c.active_keys(300).await.unwrap().is_empty());
    assert_eq!(c.groups_of(4).await.unwrap(), [100]);
    assert_eq!(c.active_keys(200).await.unwrap(), [2, 6, 8, 11]);
    let reference = cache(c.typed().store().clone());
    reference.load_keys(&changed).await.unwrap();
    assert_eq!(contents(&c).await, contents(&reference).await);
}

/// Several rebuilds of the same source at once end in that source's cache: no list entry
/// twice, none lost. Loading instead of rebuilding (push without rewriting) duplicates them.
async fn concurrent_rebuilds_of_one_group(store: Arc<dyn Store>) {
    let c = cache(store.clone());
    let keys: Vec<LoadedKey> = (1..=12)
        .map(|id| key(id, KeyStatus::Active, &[7]))
        .collect();
    c.load_keys(&keys[..4]).await.unwrap();
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let (c, keys) = (c.clone(), keys.clone());
            tokio::spawn(async move { c.rebuild(&keys).await })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    assert_eq!(
        c.active_keys(7).await.unwrap(),
        (1..=12).collect::<Vec<_>>()
    );
    let reference = cache(store);
    reference.load_keys(&keys).await.unwrap();
    assert_eq!(contents(&c).await.len(), contents(&reference).await.len());
}

async fn removing_a_group(store: Arc<dyn Store>) {
    let c = cache(store);
    c.load_keys(&source()).await.unwrap();
    // Group 200's members in the source: 2, 4, 6, 8, 10 (10 disabled, so not listed).
    assert!(c.remove_group(200, &[2, 4, 6, 8, 10]).await.unwrap());
    assert!(c.active_keys(200).await.unwrap().is_empty());
    for id in [2, 4, 6, 8, 10] {
        assert!(!c.groups_of(id).await.unwrap().contains(&200), "key {id}");
    }
    assert_eq!(c.active_keys(100).await.unwrap(), [1, 2, 3, 4, 6, 7, 8, 9]);
    let after = contents(&c).await;
    assert!(!c.remove_group(200, &[2, 4, 6, 8, 10]).await.unwrap());
    assert_eq!(contents(&c).await, after);
}

async fn repair_fixes_planted_list_entries(store: Arc<dyn Store>) {
    let c = cache(store);
    c.load_keys(&source()).await.unwrap();
    let expected = contents(&c).await;
    let list = |g: u64| Key::encode(&c.active_key(g)).into_bytes();
    let raw = c.typed().store().clone();
    // A duplicate (2 twice in group 100), a stray (disabled key 5 in group 100), and a
    // missing entry (4 dropped from group 200), as another program might leave them.
    for (group, id) in [(100, "2"), (100, "5")] {
        raw.collection(CollectionOp::ListPush {
            key: list(group),
            value: id.into(),
        })
        .await
        .unwrap();
    }
    raw.collection(CollectionOp::ListRemove {
        key: list(200),
        value: b"4".to_vec(),
    })
    .await
    .unwrap();
    let report = c.repair().await.unwrap();
    assert_eq!(report.duplicates, [(100, 2)]);
    assert_eq!(report.strays, [(100, 5)]);
    assert_eq!(report.missing, [(200, 4)]);
    assert_eq!(c.active_keys(100).await.unwrap(), [1, 2, 3, 4, 6, 7, 8, 9]);
    assert_eq!(
        c.active_keys(200).await.unwrap(),
        [2, 6, 8, 4],
        "the missing key joins the end"
    );
    assert!(c.repair().await.unwrap().clean());
    // Only the order of group 200 differs from a fresh load.
    let mut fixed = contents(&c).await;
    let mut want = expected.clone();
    for v in fixed.values_mut().chain(want.values_mut()) {
        v.sort();
    }
    assert_eq!(fixed, want);
}

keyplane_tests::on_every_backend!(
    a_warm_rebuild_equals_a_cold_load,
    a_changed_source_drops_what_it_no_longer_has,
    concurrent_rebuilds_of_one_group,
    removing_a_group,
    repair_fixes_planted_list_entries,
);
