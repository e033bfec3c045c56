//! Balancer operations on every backend: link and unlink (M:N), status changes fanned out
//! through the reverse index, atomic round robin under 1,000 concurrent picks, bulk load,
//! bad input, the example dataset.

use keyplane_core::keyspace::TypedStore;
use keyplane_core::{ErrorKind, Store};
use keyplane_schemas::balancer::*;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A cache under a root of its own for each case.
fn cache(store: Arc<dyn Store>) -> Balancer {
    let root = BalancerRoot::new(format!("bal{}", uuid::Uuid::new_v4().simple())).unwrap();
    Balancer::with_root(&TypedStore::new(store), root).unwrap()
}

fn active(id: u64) -> ApiKeyRecord {
    ApiKeyRecord {
        api_key: format!("sk-{id}"),
        status: KeyStatus::Active,
    }
}

/// One key in several groups, several keys in one group; unlink undoes one link only.
async fn link_and_unlink(store: Arc<dyn Store>) {
    let c = cache(store);
    for id in [1, 2, 3] {
        c.put_key(id, &active(id)).await.unwrap();
    }
    assert_eq!(c.key(1).await.unwrap(), Some(active(1)));
    for (key, group) in [(1, 10), (2, 10), (1, 20), (3, 20)] {
        assert!(c.link(key, group).await.unwrap());
    }
    assert!(
        !c.link(1, 10).await.unwrap(),
        "linking twice changes nothing"
    );
    assert_eq!(c.active_keys(10).await.unwrap(), [1, 2]);
    assert_eq!(c.active_keys(20).await.unwrap(), [1, 3]);
    assert_eq!(c.groups_of(1).await.unwrap(), [10, 20]);

    assert!(c.unlink(1, 10).await.unwrap());
    assert!(!c.unlink(1, 10).await.unwrap());
    assert_eq!(c.active_keys(10).await.unwrap(), [2]);
    assert_eq!(c.active_keys(20).await.unwrap(), [1, 3]);
    assert_eq!(c.groups_of(1).await.unwrap(), [20]);

    // A key that is not cached cannot be linked; nothing is written.
    let err = c.link(99, 10).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert_eq!(c.active_keys(10).await.unwrap(), [2]);
    assert!(c.groups_of(99).await.unwrap().is_empty());
}

/// Disabling removes the key from every group's active list through the reverse index;
/// enabling restores it; linking a disabled key records the link without listing it.
async fn status_fans_out_through_the_reverse_index(store: Arc<dyn Store>) {
    let c = cache(store);
    for id in [1, 2] {
        c.put_key(id, &active(id)).await.unwrap();
    }
    for group in [10, 20, 30] {
        c.link(1, group).await.unwrap();
        c.link(2, group).await.unwrap();
    }
    c.set_status(1, KeyStatus::Disabled).await.unwrap();
    assert_eq!(c.key(1).await.unwrap().unwrap().status, KeyStatus::Disabled);
    for group in [10, 20, 30] {
        assert_eq!(c.active_keys(group).await.unwrap(), [2]);
    }
    assert_eq!(
        c.groups_of(1).await.unwrap(),
        [10, 20, 30],
        "links are kept"
    );
    // Disabling twice changes nothing; a disabled key linked to a new group stays unlisted.
    c.set_status(1, KeyStatus::Disabled).await.unwrap();
    c.link(1, 40).await.unwrap();
    assert!(c.active_keys(40).await.unwrap().is_empty());

    // Re-activated, the key goes where the document's LPush puts it: the head.
    c.set_status(1, KeyStatus::Active).await.unwrap();
    for group in [10, 20, 30] {
        assert_eq!(c.active_keys(group).await.unwrap(), [1, 2]);
    }
    assert_eq!(c.active_keys(40).await.unwrap(), [1]);
    c.set_status(1, KeyStatus::Active).await.unwrap();
    assert_eq!(c.active_keys(10).await.unwrap(), [1, 2], "no duplicate");

    // put_key with a new status fans out the same way.
    c.put_key(
        2,
        &ApiKeyRecord {
            api_key: "sk-2b".into(),
            status: KeyStatus::Disabled,
        },
    )
    .await
    .unwrap();
    assert_eq!(c.active_keys(10).await.unwrap(), [1]);
    assert_eq!(c.key(2).await.unwrap().unwrap().api_key, "sk-2b");

    let err = c.set_status(77, KeyStatus::Active).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
}

/// Round robin: sequential picks cycle through the list; an empty group has none.
async fn picks_cycle_in_order(store: Arc<dyn Store>) {
    let c = cache(store);
    assert_eq!(c.pick(5).await.unwrap(), None);
    for id in [1, 2, 3] {
        c.put_key(id, &active(id)).await.unwrap();
        c.link(id, 5).await.unwrap();
    }
    let picks: Vec<u64> = {
        let mut v = Vec::new();
        for _ in 0..7 {
            v.push(c.pick(5).await.unwrap().unwrap());
        }
        v
    };
    assert_eq!(picks, [1, 2, 3, 1, 2, 3, 1]);
}

/// 1,000 concurrent picks over a 10-key group: each key exactly 100 times.
async fn concurrent_picks_are_fair(store: Arc<dyn Store>) {
    let c = cache(store);
    let keys: Vec<LoadedKey> = (1..=10)
        .map(|id| LoadedKey {
            id,
            record: active(id),
            groups: vec![1],
        })
        .collect();
    c.load_keys(&keys).await.unwrap();
    assert_eq!(c.active_keys(1).await.unwrap().len(), 10);
    let tasks: Vec<_> = (0..1000)
        .map(|_| {
            let c = c.clone();
            tokio::spawn(async move { c.pick(1).await })
        })
        .collect();
    let mut counts: BTreeMap<u64, u32> = BTreeMap::new();
    for task in tasks {
        let id = task.await.unwrap().unwrap().expect("the group has keys");
        *counts.entry(id).or_default() += 1;
    }
    let expected: BTreeMap<u64, u32> = (1..=10).map(|id| (id, 100)).collect();
    assert_eq!(counts, expected);
    // 1,000 rotations of 10 items bring the list back to its order.
    assert_eq!(
        c.active_keys(1).await.unwrap(),
        (1..=10).collect::<Vec<_>>()
    );
}

/// Two independent handles (as two processes would have) picking concurrently still share
/// the keys exactly: on etcd their rotations race optimistically and are retried.
async fn picks_from_two_handles_are_fair(store: Arc<dyn Store>) {
    let a = cache(store.clone());
    let b = Balancer::with_root(&TypedStore::new(store), a.root().unwrap().clone()).unwrap();
    for id in 1..=10 {
        a.put_key(id, &active(id)).await.unwrap();
        a.link(id, 3).await.unwrap();
    }
    let tasks: Vec<_> = (0..200)
        .map(|i| {
            let c = if i % 2 == 0 { a.clone() } else { b.clone() };
            tokio::spawn(async move { c.pick(3).await })
        })
        .collect();
    let mut counts: BTreeMap<u64, u32> = BTreeMap::new();
    for task in tasks {
        *counts
            .entry(task.await.unwrap().unwrap().unwrap())
            .or_default() += 1;
    }
    assert_eq!(counts, (1..=10).map(|id| (id, 20)).collect());
}

/// Bulk load packs many keys per transaction and leaves the same state as one-by-one
/// writes: objects, reverse indexes, active lists in input order, disabled keys unlisted.
async fn bulk_load_is_batched(store: Arc<dyn Store>) {
    let c = cache(store);
    // 300 keys spread over 100 groups (two each, one given twice), every 7th disabled.
    let keys: Vec<LoadedKey> = (1..=300)
        .map(|id| LoadedKey {
            id,
            record: ApiKeyRecord {
                api_key: format!("sk-{id}"),
                status: if id % 7 == 0 {
                    KeyStatus::Disabled
                } else {
                    KeyStatus::Active
                },
            },
            groups: vec![id % 100, (id + 50) % 100, id % 100],
        })
        .collect();
    let report = c.load_keys(&keys).await.unwrap();
    assert_eq!(report.keys, 300);
    assert!(
        report.txns * 5 <= 300,
        "{} transactions for 300 keys",
        report.txns
    );
    for key in [&keys[0], &keys[6], &keys[150], &keys[299]] {
        assert_eq!(c.key(key.id).await.unwrap().as_ref(), Some(&key.record));
        let mut groups = key.groups.clone();
        groups.sort_unstable();
        groups.dedup();
        assert_eq!(c.groups_of(key.id).await.unwrap(), groups);
    }
    for group in [0, 1, 42, 99] {
        let expected: Vec<u64> = keys
            .iter()
            .filter(|k| k.record.status == KeyStatus::Active && k.groups.contains(&group))
            .map(|k| k.id)
            .collect();
        assert_eq!(
            c.active_keys(group).await.unwrap(),
            expected,
            "group {group}"
        );
    }
}

/// Keys that all share one group pack many to a transaction: one transaction pushes several
/// keys onto the group's list, in input order.
async fn bulk_load_into_one_group_is_batched(store: Arc<dyn Store>) {
    let c = cache(store);
    let keys: Vec<LoadedKey> = (1..=300)
        .map(|id| LoadedKey {
            id,
            record: active(id),
            groups: vec![7],
        })
        .collect();
    let report = c.load_keys(&keys).await.unwrap();
    assert_eq!(report.keys, 300);
    assert!(
        report.txns * 10 <= 300,
        "{} transactions for 300 keys in one group",
        report.txns
    );
    assert_eq!(
        c.active_keys(7).await.unwrap(),
        (1..=300).collect::<Vec<u64>>()
    );
    assert_eq!(c.groups_of(150).await.unwrap(), [7]);
}

/// Keys in many groups each: batches near the backend's limit still commit whole.
async fn bulk_load_of_keys_in_many_groups(store: Arc<dyn Store>) {
    let c = cache(store);
    let keys: Vec<LoadedKey> = (1..=12)
        .map(|id| LoadedKey {
            id,
            record: active(id),
            groups: (0..20).map(|g| (id + g) % 30).collect(),
        })
        .collect();
    let report = c.load_keys(&keys).await.unwrap();
    assert_eq!(report.keys, 12);
    for group in 0..30 {
        let expected: Vec<u64> = keys
            .iter()
            .filter(|k| k.groups.contains(&group))
            .map(|k| k.id)
            .collect();
        assert_eq!(
            c.active_keys(group).await.unwrap(),
            expected,
            "group {group}"
        );
    }
    assert_eq!(c.groups_of(3).await.unwrap().len(), 20);
}

/// Bad input is refused before anything is written.
async fn bad_input_writes_nothing(store: Arc<dyn Store>) {
    let c = cache(store);
    let empty = ApiKeyRecord {
        api_key: String::new(),
        status: KeyStatus::Active,
    };
    assert_eq!(
        c.put_key(1, &empty).await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let twice = vec![
        LoadedKey {
            id: 5,
            record: active(5),
            groups: vec![1],
        },
        LoadedKey {
            id: 6,
            record: empty.clone(),
            groups: vec![1],
        },
    ];
    assert_eq!(
        c.load_keys(&twice).await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let dup = vec![
        LoadedKey {
            id: 5,
            record: active(5),
            groups: vec![1],
        },
        LoadedKey {
            id: 5,
            record: active(5),
            groups: vec![2],
        },
    ];
    assert_eq!(
        c.load_keys(&dup).await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(c.key(1).await.unwrap(), None);
    assert_eq!(c.key(5).await.unwrap(), None);
    assert!(c.active_keys(1).await.unwrap().is_empty());
}

/// The example: 3 groups of 5 keys, some shared.
async fn example_dataset(store: Arc<dyn Store>) {
    let c = cache(store);
    let report = write_example(&c).await.unwrap();
    assert_eq!(report.keys, 11);
    for (group, keys) in EXAMPLE_GROUPS {
        assert_eq!(c.active_keys(group).await.unwrap(), keys);
    }
    assert_eq!(c.groups_of(4).await.unwrap(), [1, 2]);
    assert_eq!(c.groups_of(8).await.unwrap(), [2, 3]);
    assert_eq!(c.groups_of(1).await.unwrap(), [1]);
}

/// `removeStoreCacheForKey`: the key leaves every group's active list, its reverse index and
/// its object go, in one transaction; other keys stay; a link racing the removal never
/// leaves the key in a list.
async fn remove_key_clears_every_structure(store: Arc<dyn Store>) {
    let c = cache(store);
    write_example(&c).await.unwrap();
    assert!(c.remove_key(5).await.unwrap());
    assert_eq!(c.active_keys(1).await.unwrap(), [1, 2, 3, 4]);
    assert_eq!(c.active_keys(2).await.unwrap(), [4, 6, 7, 8]);
    assert_eq!(c.key(5).await.unwrap(), None);
    assert!(c.groups_of(5).await.unwrap().is_empty());
    assert!(!c.remove_key(5).await.unwrap(), "removing twice");
    assert_eq!(c.groups_of(4).await.unwrap(), [1, 2]);

    // A link and a removal of one key, racing: the key ends in no list and no index.
    for round in 0..5u64 {
        let id = 100 + round;
        c.put_key(id, &active(id)).await.unwrap();
        c.link(id, 1).await.unwrap();
        let (linker, remover) = (c.clone(), c.clone());
        let link = tokio::spawn(async move { linker.link(id, 3).await });
        let remove = tokio::spawn(async move { remover.remove_key(id).await });
        let linked = link.await.unwrap();
        assert!(remove.await.unwrap().unwrap());
        // The link either came first (and was removed with the key) or found it gone.
        if let Err(e) = linked {
            assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
        }
        for group in [1, 3] {
            assert!(
                !c.active_keys(group).await.unwrap().contains(&id),
                "round {round}"
            );
        }
        assert!(c.groups_of(id).await.unwrap().is_empty(), "round {round}");
    }
}

keyplane_tests::on_every_backend!(
    remove_key_clears_every_structure,
    link_and_unlink,
    status_fans_out_through_the_reverse_index,
    picks_cycle_in_order,
    concurrent_picks_are_fair,
    picks_from_two_handles_are_fair,
    bulk_load_is_batched,
    bulk_load_into_one_group_is_batched,
    bulk_load_of_keys_in_many_groups,
    bad_input_writes_nothing,
    example_dataset,
);
