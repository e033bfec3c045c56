//! The foreign-writer cases on EtcdStore: another program writes the same keys through a raw
//! `etcd-client`, as `etcdctl` would.

use etcd_client::KvClient;
use keyplane_core::raw::async_trait;
use keyplane_core::{Event, Store, WatchOptions};
use keyplane_etcd::{EtcdConfig, EtcdStore};
use keyplane_tests::conformance::foreign::{RawWriter, next_events};
use keyplane_tests::harness::{key_root, shared_etcd};
use std::sync::Arc;

/// A raw etcd client: plain puts, deletes and gets.
struct EtcdRaw {
    kv: KvClient,
}

#[async_trait]
impl RawWriter for EtcdRaw {
    async fn set(&self, key: &[u8], value: &[u8]) {
        self.kv
            .clone()
            .put(key, value, None)
            .await
            .expect("raw put");
    }

    async fn del(&self, key: &[u8]) -> bool {
        let resp = self.kv.clone().delete(key, None).await.expect("raw delete");
        resp.deleted() > 0
    }

    async fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        let resp = self.kv.clone().get(key, None).await.expect("raw get");
        resp.kvs().first().map(|kv| kv.value().to_vec())
    }

    /// etcd's own history records every write: nothing to do.
    async fn settle(&self, _prefix: &[u8]) {}
}

async fn setup() -> Option<(Arc<dyn Store>, Arc<dyn RawWriter>)> {
    let server = shared_etcd().await?;
    let store = EtcdStore::open(EtcdConfig::new([server.endpoint()]))
        .await
        .expect("connect to the harness etcd");
    let client = etcd_client::Client::connect([server.endpoint()], None)
        .await
        .expect("connect a raw etcd client");
    let raw = EtcdRaw {
        kv: client.kv_client(),
    };
    Some((Arc::new(store), Arc::new(raw)))
}

keyplane_tests::foreign_suite!(setup);

/// A foreign delete reaches a watch started before it, with the deleted entry as `prev`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_delete_reaches_watch_with_prev() {
    let Some((store, raw)) = setup().await else {
        return;
    };
    let root = key_root("ct");
    let k = format!("{root}k").into_bytes();
    raw.set(&k, b"v").await;
    let before = store.get(&k).await.unwrap().expect("the foreign key");
    let start = store.revision().await.unwrap() + 1;
    let mut watch = store
        .watch(WatchOptions::prefix(&root).from_revision(start).with_prev())
        .await
        .unwrap();
    assert!(raw.del(&k).await, "the raw delete found the key");
    let events = next_events(&mut watch, 1).await;
    match &events[..] {
        [
            Event::Delete {
                key,
                prev: Some(prev),
            },
        ] => {
            assert_eq!(key, &k);
            assert_eq!(
                prev, &before,
                "prev is the entry as it was before the delete"
            );
        }
        other => panic!("expected a delete with prev, got {other:?}"),
    }
}
