//! The demo behind `cargo xtask demo`: a tenant's configuration keys written, listed, watched,
//! updated under a compare, locked and indexed in a set, all on `MemStore` through the
//! `Store` contract every backend implements.

use futures::StreamExt;
use kv_core::{
    CollectionOp, CollectionResult, Compare, CompareOp, Event, Lock, RangeOptions, Store, Txn,
    TxnOp, WatchOptions,
};
use kv_mem::MemStore;
use std::sync::Arc;
use std::time::Duration;

#[tokio::main]
async fn main() -> kv_core::Result<()> {
    let store: Arc<dyn Store> = Arc::new(MemStore::new());
    let caps = store.capabilities();
    println!(
        "store: {} (max {} ops per txn)",
        caps.backend, caps.max_txn_ops
    );

    // A watcher on tenant 1's directory, opened before any write.
    let start = store.revision().await? + 1;
    let mut watch = store
        .watch(WatchOptions::prefix("jxt/tenants/1/").from_revision(start))
        .await?;

    // Publish tenant 1 (and tenant 10, whose keys share the digits) in one transaction each.
    for (id, code) in [("1", "default"), ("10", "sales")] {
        let root = format!("jxt/tenants/{id}/");
        let txn = Txn::new()
            .when([Compare::absent(format!("{root}meta"))])
            .and_then([
                TxnOp::put(
                    format!("{root}meta"),
                    format!(r#"{{"id":{id},"code":"{code}"}}"#),
                ),
                TxnOp::put(
                    format!("{root}database/evidence-command"),
                    r#"{"host":"db1","port":5432}"#,
                ),
                TxnOp::put(format!("jxt/_index/by-code/{code}"), id),
            ]);
        let resp = store.txn(txn).await?;
        println!("published tenant {id}: revision {}", resp.revision);
    }

    // A compare-and-swap update: only if nobody changed the key since we read it.
    let db = store
        .get(b"jxt/tenants/1/database/evidence-command")
        .await?
        .expect("written above");
    let swapped = store
        .txn(
            Txn::new()
                .when([Compare::mod_revision(
                    &db.key,
                    CompareOp::Equal,
                    db.mod_revision,
                )])
                .and_then([TxnOp::put(&db.key, r#"{"host":"db2","port":5432}"#)]),
        )
        .await?;
    println!(
        "compare-and-swap of the database config: succeeded = {}",
        swapped.succeeded
    );

    // List tenant 1's directory: the trailing separator keeps tenant 10 out.
    println!("\nkeys under jxt/tenants/1/:");
    let page = store
        .range(RangeOptions::prefix("jxt/tenants/1/").limit(100))
        .await?;
    for entry in &page.entries {
        println!(
            "  {}  = {}  (version {}, mod revision {})",
            String::from_utf8_lossy(&entry.key),
            String::from_utf8_lossy(&entry.value),
            entry.version,
            entry.mod_revision
        );
    }

    // What the watcher saw: one batch per transaction that touched tenant 1.
    println!("\nwatch of jxt/tenants/1/:");
    for _ in 0..2 {
        let batch = tokio::time::timeout(Duration::from_secs(5), watch.next())
            .await
            .expect("the watch delivers both batches")
            .expect("the watch does not end")?;
        for event in &batch.events {
            let kind = if matches!(event, Event::Put { .. }) {
                "put"
            } else {
                "delete"
            };
            println!(
                "  revision {}: {kind} {}",
                batch.revision,
                String::from_utf8_lossy(event.key())
            );
        }
    }

    // A lock on a lease, with its fencing token, and a set of the tenants' codes.
    let lease = store.lease_grant(Duration::from_secs(10)).await?;
    let guard = Lock::new(store.clone(), "jxt/_locks/publish")?
        .lock(lease.id)
        .await?;
    println!(
        "\nlock {} held with fencing token {}",
        String::from_utf8_lossy(guard.key()),
        guard.fencing_token()
    );
    guard.unlock().await?;
    for code in ["default", "sales"] {
        let op = CollectionOp::SetAdd {
            key: b"jxt/_codes".to_vec(),
            member: code.into(),
        };
        store.collection(op).await?;
    }
    if let CollectionResult::Members(members) = store
        .collection(CollectionOp::SetMembers {
            key: b"jxt/_codes".to_vec(),
        })
        .await?
    {
        let members: Vec<_> = members.iter().map(|m| String::from_utf8_lossy(m)).collect();
        println!("set jxt/_codes: {members:?}");
    }
    let removed = store.delete_prefix(b"jxt/tenants/10/").await?;
    println!(
        "deleted tenant 10: {removed} keys; store revision {}",
        store.revision().await?
    );
    Ok(())
}
