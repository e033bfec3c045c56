//! The Redis store's group commit bounds a batch by its work, not only by its count: a call
//! holds the server for all the writes it carries, so writes that may each hold it near the
//! budget of one transaction (`RedisConfig::max_prefix_delete_keys`) never share a call,
//! while small writes still do. Batches are made to form as in `redis_group_commit.rs`: a
//! `CLIENT PAUSE ... WRITE` holds the first calls, and what is issued meanwhile queues; the
//! slow log, set to keep every command, shows what each call carried.

use futures::future::join_all;
use keyplane_core::{OpResult, PutOptions, Store, Txn, TxnOp};
use keyplane_redis::{RedisConfig, RedisStore};
use keyplane_tests::harness::{RedisServer, key_root, redis_commands, redis_connection};
use std::collections::BTreeSet;

/// Prefix deletes issued together, and the keys each removes.
const DELETES: usize = 16;
const KEYS: usize = 60;
/// Small writes issued with them.
const PUTS: usize = 32;

#[tokio::test]
async fn prefix_deletes_never_share_a_call_beyond_one_transactions_budget() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    // Two of these prefix deletes together remove more than one transaction may.
    let mut config = RedisConfig::new(server.url());
    config.max_prefix_delete_keys = 100;
    // One `SCAN` step covers the database, so that the prefix deletes, which first adopt
    // what other programs wrote under their prefixes, reach the group commit together.
    config.reconcile_scan_count = 100_000;
    let store = RedisStore::open(config).await.expect("connect");
    let root = key_root("gc-weight");
    let dir = |d: usize| format!("{root}d{d}/");
    for d in 0..DELETES {
        join_all((0..KEYS).map(|k| {
            let (store, key) = (&store, format!("{}{k}", dir(d)));
            async move {
                store
                    .put(key.as_bytes(), b"v", PutOptions::default())
                    .await
                    .unwrap()
            }
        }))
        .await;
    }
    let mut con = redis_connection(&server.url()).await;
    // Every command goes to the slow log, with its first arguments: what each call carried.
    redis_commands(
        &mut con,
        &[
            &["CONFIG", "SET", "slowlog-log-slower-than", "0"],
            &["CONFIG", "SET", "slowlog-max-len", "100000"],
            &["SLOWLOG", "RESET"],
            &["CLIENT", "PAUSE", "300", "WRITE"],
        ],
    )
    .await;
    let deletes = join_all((0..DELETES).map(|d| {
        let (store, prefix) = (&store, dir(d));
        async move {
            store
                .txn(Txn::new().and_then([TxnOp::delete_prefix(prefix)]))
                .await
                .unwrap()
        }
    }));
    let puts = join_all((0..PUTS).map(|i| {
        let (store, key) = (&store, format!("{root}small/{i}"));
        async move {
            store
                .put(key.as_bytes(), b"v", PutOptions::default())
                .await
                .unwrap()
        }
    }));
    let (deletes, puts) = futures::join!(deletes, puts);
    for response in &deletes {
        assert!(response.succeeded);
        assert!(
            matches!(response.results[..], [OpResult::Delete { deleted }] if deleted == KEYS as u64),
            "each prefix delete removes its {KEYS} keys: {:?}",
            response.results
        );
    }
    assert_eq!(puts.len(), PUTS);
    let calls = calls(&mut con).await;
    // No call carried two prefix deletes (two of them are more than a transaction may do),
    // and the small writes still shared calls.
    let most = calls
        .iter()
        .map(|c| c.prefix_deletes.len())
        .max()
        .unwrap_or(0);
    assert!(
        most <= 1,
        "a call carried {most} prefix deletes of {KEYS} keys each, with a budget of 100 keys: \
         a batch exceeded one transaction's work"
    );
    assert!(
        calls.iter().any(|c| count(&c.args, "put") > 1),
        "the small writes no longer share calls"
    );
}

/// A function call in the slow log.
struct Call {
    /// Its first 32 arguments, as the slow log keeps them.
    args: Vec<Vec<u8>>,
    /// The prefixes whose deletes it ran: a prefix delete first counts its keys in the index
    /// (`ZLEXCOUNT`), a command the slow log shows, as each command a function runs, just
    /// before the call itself.
    prefix_deletes: BTreeSet<Vec<u8>>,
}

/// Every function call in the slow log, oldest first.
async fn calls(con: &mut redis::aio::MultiplexedConnection) -> Vec<Call> {
    let entries: Vec<redis::Value> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .query_async(con)
        .await
        .expect("SLOWLOG GET");
    let mut calls = Vec::new();
    let mut prefix_deletes = BTreeSet::new();
    for entry in entries.into_iter().rev() {
        let redis::Value::Array(fields) = entry else {
            panic!("a slow log entry is an array");
        };
        let args: Vec<Vec<u8>> = fields
            .get(3)
            .and_then(|args| redis::from_redis_value(args.clone()).ok())
            .expect("a slow log entry has its arguments");
        let name = args.first().map(|n| n.to_ascii_uppercase());
        match name.as_deref() {
            Some(b"FCALL") => calls.push(Call {
                args,
                prefix_deletes: std::mem::take(&mut prefix_deletes),
            }),
            Some(b"ZLEXCOUNT") if args.len() > 2 => {
                prefix_deletes.insert(args[2].clone());
            }
            _ => {}
        }
    }
    calls
}

/// How many writes of `name` a call's arguments show.
fn count(args: &[Vec<u8>], name: &str) -> usize {
    args.iter()
        .filter(|a| a.as_slice() == name.as_bytes())
        .count()
}
