//! One store of each backend, for tests that must run unchanged on all of them: `MemStore`,
//! `SledStore` and `RedbStore` (each in a temporary directory), `EtcdStore` and `RedisStore` (on the test binary's
//! shared harness servers).
//!
//! [`on_every_backend!`](crate::on_every_backend) turns one `async fn(Arc<dyn Store>)` into a
//! test per backend.

use crate::harness::{
    redis_connection, shared_etcd, shared_redis, shared_redis_cluster, shared_redis_sentinel,
};
use keyplane_core::Store;
use keyplane_etcd::{EtcdConfig, EtcdStore};
use keyplane_mem::MemStore;
use keyplane_redb::RedbStore;
use keyplane_redis::RedisStore;
use keyplane_sled::SledStore;
use std::sync::Arc;

/// A fresh `MemStore`.
pub async fn memory() -> Option<Arc<dyn Store>> {
    Some(Arc::new(MemStore::new()))
}

/// A fresh `SledStore` in its own temporary directory, removed when the last handle to the
/// store is dropped.
pub async fn sled() -> Option<Arc<dyn Store>> {
    Some(Arc::new(
        SledStore::temporary()
            .await
            .expect("open a sled store in a temporary directory"),
    ))
}

/// A fresh `RedbStore` in its own temporary directory, removed when the last handle to the
/// store is dropped.
pub async fn redb() -> Option<Arc<dyn Store>> {
    Some(Arc::new(
        RedbStore::temporary()
            .await
            .expect("open a redb store in a temporary directory"),
    ))
}

/// A `RedbStore` with buffered durability (commits without fsync, made durable every 50 ms)
/// in its own temporary directory: the path where writers commit on their own threads.
pub async fn redb_buffered() -> Option<Arc<dyn Store>> {
    Some(Arc::new(
        RedbStore::temporary_with(|config| {
            config.durability(keyplane_redb::Durability::Buffered {
                flush_interval: std::time::Duration::from_millis(50),
            })
        })
        .await
        .expect("open a buffered redb store in a temporary directory"),
    ))
}

/// An `EtcdStore` on this test binary's shared etcd (`None` after a SKIP line when etcd is
/// missing and servers are not required).
pub async fn etcd() -> Option<Arc<dyn Store>> {
    let server = shared_etcd().await?;
    let store = EtcdStore::open(EtcdConfig::new([server.endpoint()]))
        .await
        .expect("connect to the harness etcd");
    Some(Arc::new(store))
}

/// A `RedisStore` on this test binary's shared Redis (`None` after a SKIP line when
/// redis-server is missing and servers are not required).
pub async fn redis() -> Option<Arc<dyn Store>> {
    let server = shared_redis().await?;
    let store = RedisStore::from_url(&server.url())
        .await
        .expect("connect to the harness Redis");
    Some(Arc::new(store))
}

/// A `RedisStore` through this test binary's shared Sentinel deployment
/// (`redis+sentinel://`), writing to the master the sentinels name.
pub async fn redis_sentinel() -> Option<Arc<dyn Store>> {
    let deployment = shared_redis_sentinel().await?;
    let store = RedisStore::from_url(&deployment.url())
        .await
        .expect("connect through the harness sentinels");
    Some(Arc::new(store))
}

/// A `RedisStore` of one fresh co-location group on this test binary's shared Redis
/// Cluster ([`RedisStore::group`]), under a namespace that puts the group's hash tag in front
/// of every key (`{<uuid>}/`), so that any key a test writes is in the group.
pub async fn redis_cluster_group() -> Option<Arc<dyn Store>> {
    use keyplane_core::layer::StoreExt;
    let cluster = shared_redis_cluster().await?;
    let store = RedisStore::from_url(&cluster.url())
        .await
        .expect("connect to the harness Redis Cluster");
    let tag = uuid::Uuid::new_v4().simple().to_string();
    let group = store.group(tag.as_bytes()).expect("a group of the cluster");
    let namespace = keyplane_core::layer::NamespaceLayer::new(format!("{{{tag}}}/"))
        .expect("a namespace of the group");
    Some(Arc::new(group.layer(namespace)))
}

/// A fresh namespace prefix, `{tag}{uuid}{separator}`, after writing a decoy key just
/// outside it in `inner` (`{tag}{uuid}decoy`), so that a namespace that leaks shows.
///
/// # Panics
/// When the decoy cannot be written.
pub async fn prefix_with_decoy(inner: &dyn Store, tag: &str, separator: char) -> String {
    let root = format!("{tag}{}", uuid::Uuid::new_v4().simple());
    inner
        .put(
            format!("{root}decoy").as_bytes(),
            b"outside",
            keyplane_core::PutOptions::default(),
        )
        .await
        .expect("write the decoy outside the namespace");
    format!("{root}{separator}")
}

/// A `RedisStore` on this test binary's shared Redis and a raw connection to the same
/// server, for tests that read or write the store's keys as another program would (`None`
/// as for [`redis()`]).
pub async fn redis_with_connection() -> Option<(Arc<dyn Store>, redis::aio::MultiplexedConnection)>
{
    let server = shared_redis().await?;
    let store = redis().await?;
    Some((store, redis_connection(&server.url()).await))
}

/// Runs `$case` (a path to an `async fn(Arc<dyn Store>)`) as one test per backend:
/// `memory`, `sled`, `redb`, `etcd`, `redis`, in a module named after the case.
///
/// ```no_run
/// use keyplane_core::{PutOptions, Store};
/// use std::sync::Arc;
///
/// async fn publish_then_delete(store: Arc<dyn Store>) {
///     store.put(b"app/k", b"v", PutOptions::default()).await.unwrap();
///     assert!(store.delete(b"app/k").await.unwrap().existed());
/// }
/// keyplane_tests::on_every_backend!(publish_then_delete);
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! on_every_backend {
    ($($case:ident),+ $(,)?) => {
        $(
            mod $case {
                $crate::on_every_backend!(@backend $case, memory);
                $crate::on_every_backend!(@backend $case, sled);
                $crate::on_every_backend!(@backend $case, redb);
                $crate::on_every_backend!(@backend $case, etcd);
                $crate::on_every_backend!(@backend $case, redis);
            }
        )+
    };
    (@backend $case:ident, $backend:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $backend() {
            if let Some(store) = $crate::backends::$backend().await {
                super::$case(store).await;
            }
        }
    };
}
