//! The child process of the embedded stores' crash tests (tests/tests/redb_crash.rs,
//! sled_crash.rs, embedded_read_durability.rs): it opens the store of engine
//! `KV_CHILD_ENGINE` (`redb`, `sled`) in `KV_CHILD_DIR` and, by `KV_CHILD_MODE`, either makes
//! acknowledged writes until it is killed (`write`, `write-buffered`), makes 200 buffered
//! writes and then idles (`write-buffered-idle`), holds the store open
//! (`hold`), or has one writer count up one key while readers print what they read (`race`).
//! See `keyplane_tests::crash` for the lines it prints.

use keyplane_core::{Compare, PutOptions, Store, Txn, TxnOp};
use keyplane_tests::crash::{DIR_VAR, ENGINE_VAR, MODE_VAR, ROUND_VAR};
use keyplane_tests::embedded::Engine;
use std::sync::Arc;
use std::time::Duration;

/// One writer puts 1, 2, 3... to `race/{round}` while three readers get it, each printing
/// `READ n` when it reads a new value, until the process is killed.
async fn race(store: Arc<dyn Store>, round: usize) -> ! {
    let key = format!("race/{round}");
    for _ in 0..3 {
        let (store, key) = (Arc::clone(&store), key.clone());
        tokio::spawn(async move {
            let mut last = Vec::new();
            loop {
                if let Some(entry) = store.get(key.as_bytes()).await.unwrap()
                    && entry.value != last
                {
                    println!("READ {}", String::from_utf8_lossy(&entry.value));
                    last = entry.value;
                }
                tokio::task::yield_now().await;
            }
        });
    }
    for n in 1u64.. {
        store
            .put(
                key.as_bytes(),
                n.to_string().as_bytes(),
                PutOptions::default(),
            )
            .await
            .unwrap();
    }
    unreachable!("the writer counts until the process is killed")
}

/// Acknowledged writes, one after another, until the process is killed: a put (`ACK put KEY
/// VALUE`), a two-key transaction (`ACK pair PAIR VALUE`), a lease and a put on it (`ACK
/// grant ID`, `ACK leased ID KEY VALUE`), over and over; write `i` of round `r` names its
/// keys `c/r/i`, `p/r/i/a` and `p/r/i/b`, `l/r/i`.
async fn write(store: Arc<dyn Store>, round: usize) -> ! {
    for i in 0.. {
        let value = format!("v{round}.{i}");
        match i % 3 {
            0 => {
                let key = format!("c/{round}/{i}");
                store
                    .put(key.as_bytes(), value.as_bytes(), PutOptions::default())
                    .await
                    .unwrap();
                println!("ACK put {key} {value}");
            }
            1 => {
                let pair = format!("p/{round}/{i}");
                let (a, b) = (format!("{pair}/a"), format!("{pair}/b"));
                let resp = store
                    .txn(
                        Txn::new()
                            .when([Compare::absent(&a)])
                            .and_then([TxnOp::put(&a, &value), TxnOp::put(&b, &value)]),
                    )
                    .await
                    .unwrap();
                assert!(resp.succeeded);
                println!("ACK pair {pair} {value}");
            }
            _ => {
                let lease = store.lease_grant(Duration::from_secs(3600)).await.unwrap();
                println!("ACK grant {}", lease.id.0);
                let key = format!("l/{round}/{i}");
                store
                    .put(
                        key.as_bytes(),
                        value.as_bytes(),
                        PutOptions::default().lease(lease.id),
                    )
                    .await
                    .unwrap();
                println!("ACK leased {} {key} {value}", lease.id.0);
            }
        }
    }
    unreachable!("the writer writes until the process is killed")
}

/// Opens the store, waiting a moment while the database is in use. The tests run side by
/// side in one process, which starts children: a child started while another test's store
/// is open holds a copy of that database's descriptor, and so its lock, until it executes
/// this binary, which closes it.
async fn open(engine: Engine, dir: &std::path::Path, buffered: Option<Duration>) -> Arc<dyn Store> {
    let pauses = keyplane_core::retry::Backoff::requests().deadline(Some(Duration::from_secs(5)));
    let mut attempts = pauses.start();
    loop {
        match engine.open_with(dir, buffered).await {
            Ok(store) => return store,
            Err(e)
                if e.kind() == keyplane_core::ErrorKind::Unavailable && attempts.wait().await =>
            {
                drop(e);
            }
            Err(e) => panic!("child opens the store: {e}"),
        }
    }
}

fn main() {
    let dir = std::env::var(DIR_VAR).expect("run by the crash tests");
    let mode = std::env::var(MODE_VAR).expect("run by the crash tests");
    let engine = std::env::var(ENGINE_VAR)
        .ok()
        .and_then(|name| Engine::from_name(&name))
        .expect("run by the crash tests, with an engine");
    let round: usize = std::env::var(ROUND_VAR).map_or(0, |r| r.parse().unwrap());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let buffered = mode
        .starts_with("write-buffered")
        .then_some(Duration::from_millis(5));
    runtime.block_on(async move {
        let store = open(engine, std::path::Path::new(&dir), buffered).await;
        println!("\nREADY");
        match mode.as_str() {
            "hold" => std::future::pending::<()>().await,
            "race" => race(store, round).await,
            "write-buffered-idle" => {
                // Puts alone: nothing else (a lease's expiry) wakes the writer thread.
                for i in 0..200 {
                    let (key, value) = (format!("c/{round}/{i}"), format!("v{round}.{i}"));
                    store
                        .put(key.as_bytes(), value.as_bytes(), PutOptions::default())
                        .await
                        .unwrap();
                    println!("ACK put {key} {value}");
                }
                // Ten flush intervals with nothing to do.
                tokio::time::sleep(Duration::from_millis(50)).await;
                println!("IDLE");
                std::future::pending::<()>().await;
            }
            _ => write(store, round).await,
        }
    });
}
