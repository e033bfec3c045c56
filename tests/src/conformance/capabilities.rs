//! `Capabilities`: the limits a backend declares are real.

use super::support::{expect_kind, key, put, root, snapshot};
use keyplane_core::{ErrorKind, PutOptions, Retention, Sharding, Store};
use std::sync::Arc;
use std::time::Duration;

/// The declared limits are sane and enforced: a value of `max_value_bytes` is stored, one byte
/// more is `InvalidValue` and writes nothing; TTLs round up to the granularity.
pub async fn capabilities_are_sane(store: Arc<dyn Store>) {
    let caps = store.capabilities().clone();
    assert!(!caps.backend.is_empty());
    assert!(
        caps.max_txn_ops >= 64,
        "max_txn_ops {} is below etcd's default",
        caps.max_txn_ops
    );
    assert!(
        caps.max_value_bytes >= 64 * 1024,
        "max_value_bytes {}",
        caps.max_value_bytes
    );
    assert!(!caps.ttl_granularity.is_zero());
    assert!(caps.ttl_granularity <= Duration::from_secs(1));
    if let Retention::Revisions(n) = caps.history_retention {
        assert!(
            n > 0,
            "a watch must be able to resume from at least one revision"
        );
    }
    assert_eq!(
        caps.round_ttl(caps.ttl_granularity).unwrap(),
        caps.ttl_granularity
    );
    assert!(caps.round_ttl(Duration::from_nanos(1)).unwrap() >= caps.ttl_granularity);

    let root = root();
    let k = key(&root, "big");
    if caps.max_value_bytes <= 8 << 20 {
        let max = vec![b'v'; caps.max_value_bytes];
        store.put(&k, &max, PutOptions::default()).await.unwrap();
        assert_eq!(store.get(&k).await.unwrap().unwrap().value.len(), max.len());
        let before = snapshot(&*store, &root).await;
        let over = vec![b'v'; caps.max_value_bytes + 1];
        expect_kind(
            store.put(&k, &over, PutOptions::default()).await,
            ErrorKind::InvalidValue,
        );
        assert_eq!(snapshot(&*store, &root).await, before);
    } else {
        // Limits this large are enforced by the same check; a test would only measure memory.
        put(&*store, &k, "small").await;
    }
}

/// A network backend names its server's version and its members, one of them (on a cluster,
/// one per shard) the leader or master, each reachable at an address; an embedded one has
/// neither.
pub async fn server_status_describes_the_server(store: Arc<dyn Store>) {
    let caps = store.capabilities().clone();
    let status = store.server_status().await.unwrap();
    if matches!(caps.backend, "memory" | "sled" | "redb") {
        assert_eq!(status.version, None);
        assert!(status.members.is_empty(), "{status:?}");
        return;
    }
    let version = status
        .version
        .as_deref()
        .expect("a server names its version");
    assert!(
        version.starts_with(|c: char| c.is_ascii_digit()) && version.contains('.'),
        "version {version:?}"
    );
    let leaders = status.members.iter().filter(|m| m.is_leader()).count();
    // A store of one group of a Redis Cluster is unsharded, and still shows every node.
    assert!(leaders >= 1, "no leader: {status:?}");
    if caps.sharding == Sharding::HashTagGroups {
        assert!(leaders > 1, "a cluster has several masters: {status:?}");
    }
    for member in &status.members {
        assert!(!member.name.is_empty(), "{status:?}");
        assert!(
            member.client_urls.iter().any(|u| u.contains(':')),
            "{status:?}"
        );
    }
}
