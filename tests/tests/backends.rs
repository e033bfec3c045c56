//! `on_every_backend!` runs one case on every backend, each a real store.

use keyplane_core::{PutOptions, RangeOptions, Store};
use keyplane_tests::harness::key_root;
use std::sync::Arc;

async fn the_same_code_runs_on_every_backend(store: Arc<dyn Store>) {
    let root = key_root("backends");
    let key = format!("{root}a/1");
    let put = store
        .put(key.as_bytes(), b"v", PutOptions::default())
        .await
        .unwrap();
    let entry = store.get(key.as_bytes()).await.unwrap().expect("written");
    assert_eq!(entry.value, b"v");
    assert_eq!(entry.mod_revision, put.revision);
    let page = store
        .range(RangeOptions::prefix(format!("{root}a/")))
        .await
        .unwrap();
    assert_eq!(page.entries.len(), 1);
    assert!(["memory", "sled", "redb", "etcd", "redis"].contains(&store.capabilities().backend));
}

keyplane_tests::on_every_backend!(the_same_code_runs_on_every_backend);
