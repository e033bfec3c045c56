//! The Redis store's grouped reads: gets issued at the same moment share one `MULTI`/`EXEC`
//! of an `HMGET` and an `MGET`, and each sees exactly what it would alone. Batches are made to
//! form on purpose (a `CLIENT PAUSE` on a server of the test's own holds the first calls, so
//! every get issued meanwhile queues), and also form by themselves under load while other
//! writers keep changing the keys.

use futures::future::join_all;
use keyplane_core::{Entry, PutOptions, Store};
use keyplane_tests::harness::{
    key_root, own_redis_store, redis_command_calls, redis_commands, redis_connection,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The most gets a store sends alone at once; the rest queue behind them and share calls.
const ALONE: u64 = 16;

#[tokio::test]
async fn concurrent_gets_share_calls_and_each_sees_its_own_key() {
    let Some((server, store)) = own_redis_store().await else {
        return;
    };
    let root = key_root("grouped-gets");
    let mut con = redis_connection(&server.url()).await;
    // Keys the store wrote, one of them larger than a lone get checks by digest.
    let mut written: BTreeMap<String, Entry> = BTreeMap::new();
    for k in 0..48 {
        let key = format!("{root}own/{k}");
        let value = if k == 7 {
            vec![b'x'; 100 << 10]
        } else {
            format!("value {k}").into_bytes()
        };
        let put = store
            .put(key.as_bytes(), &value, PutOptions::default())
            .await
            .unwrap();
        written.insert(
            key.clone(),
            Entry {
                key: key.into_bytes(),
                value,
                create_revision: put.revision,
                mod_revision: put.revision,
                version: 1,
                lease: None,
            },
        );
    }
    // Keys other programs wrote or changed behind the store's back.
    let foreign = format!("{root}foreign");
    let set = format!("{root}set");
    let deleted = format!("{root}own/1");
    let overwritten = format!("{root}own/2");
    redis_commands(
        &mut con,
        &[
            &["SET", &foreign, "from another program"],
            &["SADD", &set, "a", "b"],
            &["DEL", &deleted],
            &["SET", &overwritten, "overwritten"],
        ],
    )
    .await;
    let absent = format!("{root}absent");
    let mut keys: Vec<String> = written.keys().cloned().collect();
    keys.extend([foreign.clone(), set.clone(), absent.clone()]);
    // Every key twice, so that a batch holds one key more than once.
    let keys: Vec<String> = keys.iter().chain(keys.iter()).cloned().collect();

    let before = redis_command_calls(&mut con, "hmget").await;
    redis_commands(&mut con, &[&["CLIENT", "PAUSE", "300", "ALL"]]).await;
    let got = join_all(keys.iter().map(|k| store.get(k.as_bytes()))).await;
    let batches = redis_command_calls(&mut con, "hmget").await - before;
    // All but the first ALONE queue behind the paused calls, in batches of at most 16.
    let queued = keys.len() as u64 - ALONE;
    assert!(
        batches >= queued.div_ceil(16),
        "{} gets issued together went in {batches} batches",
        keys.len()
    );

    for (key, got) in keys.iter().zip(got) {
        let got = got.unwrap_or_else(|e| panic!("get {key}: {e}"));
        if *key == absent || *key == set || *key == deleted {
            assert_eq!(got, None, "{key} holds no plain value");
        } else if *key == foreign {
            let entry = got.expect("another program's string is adopted and read");
            assert_eq!(entry.value, b"from another program");
            assert_eq!(entry.version, 1);
        } else if *key == overwritten {
            assert_eq!(got.expect("overwritten").value, b"overwritten");
        } else {
            assert_eq!(got.as_ref(), written.get(key), "{key}");
        }
    }
}

#[tokio::test]
async fn grouped_gets_under_concurrent_writes_pair_each_value_with_its_own_revision() {
    let Some((server, store)) = own_redis_store().await else {
        return;
    };
    let store = Arc::new(store);
    let root = key_root("grouped-torn");
    let mut con = redis_connection(&server.url()).await;
    let keys: Vec<String> = (0..8).map(|k| format!("{root}{k}")).collect();
    for key in &keys {
        store
            .put(key.as_bytes(), b"0", PutOptions::default())
            .await
            .unwrap();
    }
    // Writers rewrite the keys with values unique to each write, and record the revision
    // each value was written at; readers record every entry they read.
    let done = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = keys
        .iter()
        .cloned()
        .map(|key| {
            let (store, done) = (Arc::clone(&store), Arc::clone(&done));
            tokio::spawn(async move {
                let mut written = Vec::new();
                let mut i = 0u64;
                while !done.load(Ordering::Relaxed) {
                    i += 1;
                    let value = format!("{key}@{i}").into_bytes();
                    let put = store
                        .put(key.as_bytes(), &value, PutOptions::default())
                        .await
                        .unwrap();
                    written.push((value, put.revision));
                }
                (key, written)
            })
        })
        .collect();
    let before = redis_command_calls(&mut con, "hmget").await;
    let readers: Vec<_> = (0..64)
        .map(|t| {
            let (store, keys) = (Arc::clone(&store), keys.clone());
            tokio::spawn(async move {
                let mut read = Vec::new();
                for i in 0..400 {
                    let key = &keys[(t + i) % keys.len()];
                    read.push(store.get(key.as_bytes()).await.unwrap().expect("present"));
                }
                read
            })
        })
        .collect();
    let mut read = Vec::new();
    for reader in readers {
        read.extend(reader.await.unwrap());
    }
    done.store(true, Ordering::Relaxed);
    let mut revisions_of: BTreeMap<Vec<u8>, BTreeSet<(Vec<u8>, i64)>> = BTreeMap::new();
    for writer in writers {
        let (key, written) = writer.await.unwrap();
        revisions_of.insert(key.into_bytes(), written.into_iter().collect());
    }
    let batches = redis_command_calls(&mut con, "hmget").await - before;
    assert!(batches > 0, "64 readers never shared a call");
    for entry in read {
        let written = &revisions_of[&entry.key];
        if entry.value == b"0" {
            assert_eq!(entry.version, 1, "the first value is the first version");
            continue;
        }
        assert!(
            written.contains(&(entry.value.clone(), entry.mod_revision)),
            "{} read with revision {}, which wrote another value",
            String::from_utf8_lossy(&entry.value),
            entry.mod_revision
        );
    }
}
