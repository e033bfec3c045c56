//! The README's quick start as a program: declare a schema, then write, read, list and watch
//! it through a store opened from a URL.
//!
//! ```sh
//! cargo run -p keyplane --example quickstart                          # in memory
//! KEYPLANE_URL=redb:///tmp/qs.redb cargo run -p keyplane --example quickstart
//! KEYPLANE_URL=redis://127.0.0.1:6379/0 cargo run -p keyplane --features redis --example quickstart
//! ```

use futures::StreamExt;
use keyplane::keyspace::{Json, Key, ListOptions, Prefix, TypedEvent, TypedStore};
use serde::{Deserialize, Serialize};

/// A tenant's metadata, stored as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Meta {
    code: String,
}

/// `jxt/tenants/{id}/meta`.
#[derive(Key, Debug, Clone, PartialEq, Eq)]
#[kv(template = "jxt/tenants/{id}/meta", value = Json<Meta>)]
struct MetaKey {
    id: u64,
}

/// `jxt/tenants/{id}/`: every key of one tenant.
#[derive(Prefix, Debug, Clone, PartialEq, Eq)]
#[kv(template = "jxt/tenants/{id}/", key = MetaKey)]
struct TenantDir {
    id: u64,
}

#[tokio::main]
async fn main() -> keyplane::Result<()> {
    let url = std::env::var("KEYPLANE_URL").unwrap_or_else(|_| "mem://".into());
    let store = TypedStore::new(keyplane::open(&url).await?);
    println!("store: {}", keyplane::raw::redact_url(&url));

    // Changes to tenant 1 from now on.
    let mut watch = store.watch(&TenantDir { id: 1 }, None).await?;

    let revision = store
        .put(
            &MetaKey { id: 1 },
            &Meta {
                code: "default".into(),
            },
        )
        .await?;
    store
        .put(
            &MetaKey { id: 10 },
            &Meta {
                code: "sales".into(),
            },
        )
        .await?;
    println!("put tenant 1 at revision {revision}");
    println!("get: {:?}", store.get(&MetaKey { id: 1 }).await?);

    // A typed prefix never over-matches: tenant 1's directory holds no key of tenant 10.
    let page = store
        .list(&TenantDir { id: 1 }, ListOptions::limit(100))
        .await?;
    for (key, value) in &page.items {
        println!("listed: {} = {:?}", key.encode(), value.value);
    }
    assert_eq!(page.items.len(), 1);

    // Create-if-absent, atomically, on any backend.
    let created = store
        .txn()
        .create(&MetaKey { id: 2 }, &Meta { code: "new".into() })
        .commit()
        .await?;
    println!("created tenant 2: {}", created.succeeded);

    let batch = watch.next().await.expect("the watch is open")?;
    for event in &batch.events {
        if let TypedEvent::Put { key, value } = event {
            println!("watched: {} = {:?}", key.encode(), value.value);
        }
    }
    Ok(())
}
