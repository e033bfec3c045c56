//! Mirror lookups: a typed `get`, a `get_raw` and a secondary-index lookup in a mirror of
//! 100,000 keys, against a `HashMap<Vec<u8>, String>` holding the same keys (the floor: what
//! a hash lookup of the encoded key costs), each on 1,000 keys drawn across the range, one
//! untimed pass then 20 timed ones, median of the rounds.

use crate::measure::{Budget, Goal, MIN_ROUNDS, Measure, Pair, Report, multi_thread};
use keyplane_core::Store;
use keyplane_core::keyspace::{Key, TypedStore};
use keyplane_core::recipes::BulkLoader;
use keyplane_mem::MemStore;
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use crate::items::{ItemKey, Items, Root};

const KEYS: u64 = 100_000;
/// Keys per value of the secondary index.
const PER_BUCKET: u64 = 10;

/// Nanoseconds per call of `f` on each of `n` probes, over 20 passes after one untimed pass
/// (so that no row pays for the first touch of the round's keys, whichever runs first).
fn per_call(n: usize, mut f: impl FnMut(usize) -> bool) -> f64 {
    for i in 0..n {
        assert!(black_box(f(i)));
    }
    let started = Instant::now();
    for _ in 0..20 {
        for i in 0..n {
            assert!(black_box(f(i)));
        }
    }
    started.elapsed().as_nanos() as f64 / (20 * n) as f64
}

/// Takes one sample of ours and one of the floor, ours first when `ours_first`, so that
/// neither side always runs on the caches the other left.
fn in_turn(
    ours_first: bool,
    (ours, floor): (&mut Vec<f64>, &mut Vec<f64>),
    [take_ours, take_floor]: [&mut dyn FnMut() -> f64; 2],
) {
    if ours_first {
        ours.push(take_ours());
        floor.push(take_floor());
    } else {
        floor.push(take_floor());
        ours.push(take_ours());
    }
}

pub fn run(budget: Budget, report: &mut Report) {
    let rt = multi_thread();
    let root = Root::new("bench").unwrap();
    let key = |id: u64| ItemKey {
        root: root.clone(),
        id,
    };
    let mirror = rt.block_on(async {
        let store: Arc<dyn Store> = Arc::new(MemStore::new());
        BulkLoader::new(store.as_ref())
            .load(
                (0..KEYS).map(|id| (key(id).encode().into_bytes(), format!("v{id}").into_bytes())),
            )
            .await
            .unwrap();
        TypedStore::new(store)
            .mirror(&Items { root: root.clone() })
            .unwrap()
            .heartbeat(None)
            .index("bucket", |k: &ItemKey, _| {
                vec![(k.id / PER_BUCKET).to_string()]
            })
            .start()
            .await
            .unwrap()
    });
    let floor: HashMap<Vec<u8>, String> = (0..KEYS)
        .map(|id| (key(id).encode().into_bytes(), format!("v{id}")))
        .collect();
    let rounds = if budget.quick { MIN_ROUNDS } else { 9 };
    let (mut typed, mut raw, mut index) = (Vec::new(), Vec::new(), Vec::new());
    let (mut floor_typed, mut floor_raw, mut floor_index) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds as u64 {
        let ids: Vec<u64> = (0..1_000u64)
            .map(|i| (i * 7919 + round * 104_729) % KEYS)
            .collect();
        let keys: Vec<ItemKey> = ids.iter().map(|&id| key(id)).collect();
        let raws: Vec<Vec<u8>> = keys.iter().map(|k| k.encode().into_bytes()).collect();
        let view = mirror.snapshot();
        let first = round % 2 == 0;
        in_turn(
            first,
            (&mut typed, &mut floor_typed),
            [
                &mut || per_call(keys.len(), |i| view.get(&keys[i]).is_some()),
                &mut || {
                    per_call(keys.len(), |i| {
                        floor.contains_key(keys[i].encode().as_bytes())
                    })
                },
            ],
        );
        in_turn(
            first,
            (&mut raw, &mut floor_raw),
            [
                &mut || per_call(raws.len(), |i| view.get_raw(&raws[i]).is_some()),
                &mut || per_call(raws.len(), |i| floor.contains_key(&raws[i])),
            ],
        );
        let buckets: Vec<String> = ids.iter().map(|id| (id / PER_BUCKET).to_string()).collect();
        let bucket_raws: Vec<Vec<Vec<u8>>> = ids
            .iter()
            .map(|id| {
                let first = id / PER_BUCKET * PER_BUCKET;
                (first..first + PER_BUCKET)
                    .map(|id| key(id).encode().into_bytes())
                    .collect()
            })
            .collect();
        in_turn(
            first,
            (&mut index, &mut floor_index),
            [
                &mut || {
                    per_call(buckets.len(), |i| {
                        view.lookup("bucket", &buckets[i]).count() == PER_BUCKET as usize
                    })
                },
                &mut || {
                    per_call(bucket_raws.len(), |i| {
                        bucket_raws[i].iter().all(|raw| floor.contains_key(raw))
                    })
                },
            ],
        );
    }
    let note = "100,000 keys; raw: a HashMap<Vec<u8>, String> of the same encoded keys";
    report.add(
        Measure::paired(
            "Mirror typed get (100,000 keys) vs HashMap get of the encoded key",
            Pair::of(typed, floor_typed),
            "ns",
            Goal::Within(100.0),
        )
        .note(note),
    );
    report.add(
        Measure::paired(
            "Mirror get_raw (100,000 keys) vs HashMap get",
            Pair::of(raw, floor_raw),
            "ns",
            Goal::Within(60.0),
        )
        .note(note),
    );
    report.add(
        Measure::paired(
            "Mirror index lookup of 10 keys vs 10 HashMap gets",
            Pair::of(index, floor_index),
            "ns",
            Goal::Info,
        )
        .note("a secondary index whose every value finds 10 of the 100,000 keys"),
    );
}
