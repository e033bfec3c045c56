//! A watch that resumes where it stopped: a reader keeps the revision of the last batch it
//! handled, and after a restart (its process, its connection) opens the watch again from the
//! next revision, missing nothing and seeing nothing twice. A revision the store no longer
//! retains is `Compacted`: the reader relists, then watches on from the listing's revision.
//!
//! ```sh
//! cargo run -p keyplane --example watch_resume
//! ```

use futures::StreamExt;
use keyplane::ErrorKind;
use keyplane::keyspace::{Key, ListOptions, Prefix, Text, TypedEvent, TypedStore};

/// `flags/{name}`.
#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "flags/{id}", value = Text)]
struct FlagKey {
    id: u64,
}

/// `flags/`.
#[derive(Prefix, Debug, Clone, PartialEq)]
#[kv(template = "flags/", key = FlagKey)]
struct Flags {}

#[tokio::main]
async fn main() -> keyplane::Result<()> {
    let store = TypedStore::new(keyplane::open("mem://").await?);
    let mut handled = store.revision().await?;

    // First run: the reader handles one batch, then stops.
    let mut watch = store.watch(&Flags {}, Some(handled + 1)).await?;
    store.put(&FlagKey { id: 1 }, &"on".to_string()).await?;
    let batch = watch.next().await.expect("the watch is open")?;
    handled = batch.revision;
    println!("handled up to revision {handled}");
    drop(watch);

    // Meanwhile, other writers go on.
    store.put(&FlagKey { id: 2 }, &"on".to_string()).await?;
    store.put(&FlagKey { id: 1 }, &"off".to_string()).await?;

    // Second run: resume after the last batch handled; each change arrives once, in order.
    let mut watch = store.watch(&Flags {}, Some(handled + 1)).await?;
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let batch = watch.next().await.expect("the watch is open")?;
        for event in batch.events {
            if let TypedEvent::Put { key, value } = event {
                seen.push((key.id, value.value));
            }
        }
        handled = batch.revision;
    }
    println!("resumed and saw {seen:?}");
    assert_eq!(seen, [(2, "on".to_string()), (1, "off".to_string())]);

    // A revision compacted away cannot be resumed: relist, then watch from the listing.
    store.store().compact(handled).await?;
    match store.watch(&Flags {}, Some(1)).await {
        Err(e) if matches!(e.kind(), ErrorKind::Compacted { .. }) => {
            let page = store.list(&Flags {}, ListOptions::limit(1000)).await?;
            println!(
                "revision 1 is compacted: relisted {} flags at revision {}",
                page.items.len(),
                page.revision
            );
            let _watch = store.watch(&Flags {}, Some(page.revision + 1)).await?;
        }
        Err(e) => return Err(e),
        Ok(_) => println!("the store still retains revision 1"),
    }
    Ok(())
}
