//! The child process of the SledStore crash tests (tests/tests/sled_crash.rs,
//! tests/tests/sled_read_durability.rs): it opens the store in `KV_SLED_CHILD_DIR` and, by
//! `KV_SLED_CHILD_MODE`, either makes acknowledged writes until it is killed (`write`,
//! `write-buffered`), holds the store open (`hold`), or has one writer count up one key while
//! readers print what they read (`race`).

use keyplane_core::{Compare, PutOptions, Store, Txn, TxnOp};
use keyplane_sled::{Durability, SledConfig, SledStore};
use std::time::Duration;

const DIR_VAR: &str = "KV_SLED_CHILD_DIR";
const MODE_VAR: &str = "KV_SLED_CHILD_MODE";
const ROUND_VAR: &str = "KV_SLED_CHILD_ROUND";

/// One writer puts 1, 2, 3... to `race/{round}` while three readers get it, each printing
/// `READ n` when it reads a new value, until the process is killed.
async fn race(store: SledStore, round: usize) -> ! {
    let store = std::sync::Arc::new(store);
    let key = format!("race/{round}");
    for _ in 0..3 {
        let (store, key) = (std::sync::Arc::clone(&store), key.clone());
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

/// The child process: `write` makes acknowledged writes until killed, printing one `ACK` line
/// after each returns; `write-buffered` does the same with buffered durability; `hold` opens
/// the store and keeps it open until killed.
fn main() {
    let dir = std::env::var(DIR_VAR).expect("run by the crash tests");
    let mode = std::env::var(MODE_VAR).expect("run by the crash tests");
    let round: usize = std::env::var(ROUND_VAR).map_or(0, |r| r.parse().unwrap());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let config = match mode.as_str() {
        "write-buffered" => SledConfig::new(&dir).durability(Durability::Buffered {
            flush_interval: Duration::from_millis(5),
        }),
        _ => SledConfig::new(&dir),
    };
    runtime.block_on(async move {
        let store = SledStore::open(config)
            .await
            .expect("child opens the store");
        println!("\nREADY");
        if mode == "hold" {
            std::future::pending::<()>().await;
        }
        if mode == "race" {
            race(store, round).await;
        }
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
    });
}
