//! The `keyplane` facade: one dependency, every backend from a URL, derives through its path.

use keyplane::keyspace::{Key, Text, TypedStore};
use keyplane::{Backend, ErrorKind, PutOptions, Store};
use keyplane_tests::harness::{shared_etcd, shared_redis};
use std::sync::Arc;

/// `facade/{id}/value`, declared through the facade alone.
#[derive(Key, Debug, Clone, PartialEq, Eq)]
#[kv(template = "facade/{id}/value", value = Text)]
struct FacadeKey {
    id: u64,
}

/// Writes and reads one key through the contract and one through the typed layer.
async fn round_trip(store: Arc<dyn Store>) {
    let key = format!("facade-{}/plain", uuid::Uuid::new_v4());
    store
        .put(key.as_bytes(), b"v", PutOptions::default())
        .await
        .unwrap();
    assert_eq!(
        store.get(key.as_bytes()).await.unwrap().unwrap().value,
        b"v"
    );
    store.delete(key.as_bytes()).await.unwrap();
    let typed = TypedStore::new(store);
    let id = rand::random::<u64>();
    let typed_key = FacadeKey { id };
    typed.put(&typed_key, &"typed".to_string()).await.unwrap();
    assert_eq!(
        typed.get(&typed_key).await.unwrap().as_deref(),
        Some("typed")
    );
    typed.delete(&typed_key).await.unwrap();
}

#[tokio::test]
async fn every_url_form_opens_its_backend() {
    let dir = tempfile::tempdir().unwrap();
    let mut urls = vec![
        ("mem".to_string(), "mem://".to_string()),
        (
            "sled".to_string(),
            format!("sled://{}", dir.path().join("nested/db").display()),
        ),
    ];
    if let Some(etcd) = shared_etcd().await {
        let endpoint = etcd.endpoint();
        let endpoint = endpoint.trim_start_matches("http://");
        urls.push(("etcd".into(), format!("etcd://{endpoint}")));
    }
    if let Some(redis) = shared_redis().await {
        urls.push(("redis".into(), redis.url()));
    }
    for (name, url) in urls {
        let backend = Backend::open(&url)
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(backend.name(), name, "{url}");
        round_trip(backend.into_store()).await;
    }
}

#[tokio::test]
async fn the_sled_directory_is_created_and_reopened() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sled://{}", dir.path().join("a/b").display());
    let store = keyplane::open(&url).await.unwrap();
    store
        .put(b"k", b"kept", PutOptions::default())
        .await
        .unwrap();
    drop(store);
    let mut reopened = None;
    // sled releases the directory lock a moment after the store is dropped.
    for _ in 0..200 {
        match keyplane::open(&url).await {
            Ok(store) => {
                reopened = Some(store);
                break;
            }
            Err(e) if e.kind() == ErrorKind::Unavailable => {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
    let store = reopened.expect("the directory opens again");
    assert_eq!(store.get(b"k").await.unwrap().unwrap().value, b"kept");
}

#[tokio::test]
async fn malformed_urls_are_config_errors() {
    for url in [
        "",
        "mem",
        "ftp://host",
        "mem://path",
        "sled://",
        "etcd://",
        "http://x",
    ] {
        let err = keyplane::open(url)
            .await
            .err()
            .unwrap_or_else(|| panic!("{url:?} opened"));
        assert_eq!(err.kind(), ErrorKind::Config, "{url:?}: {err}");
        assert!(
            err.to_string().contains("store URL") || url.starts_with("etcd"),
            "{url:?}: {err}"
        );
    }
}

/// Every name the facade has always had at its root is still there, and is the item of
/// keyplane-core it always was (wherever keyplane-core keeps it now).
#[test]
fn the_facade_keeps_every_root_name() {
    use std::any::type_name;
    macro_rules! same_types {
        ($($name:ident = $core:ty),* $(,)?) => {
            $(assert_eq!(
                type_name::<keyplane::$name>(),
                type_name::<$core>(),
                "keyplane::{}",
                stringify!($name)
            );)*
        };
    }
    use keyplane_core as core;
    same_types!(
        BulkProgress = core::recipes::BulkProgress,
        BulkReport = core::recipes::BulkReport,
        Capabilities = core::Capabilities,
        ForeignWrites = core::ForeignWrites,
        Retention = core::Retention,
        Sharding = core::Sharding,
        Support = core::Support,
        CollectionChange = core::CollectionChange,
        CollectionEvent = core::CollectionEvent,
        CollectionValue = core::CollectionValue,
        CollectionKind = core::CollectionKind,
        CollectionOp = core::CollectionOp,
        CollectionResult = core::CollectionResult,
        Continuation = core::Continuation,
        GroupRevisions = core::raw::GroupRevisions,
        Election = core::recipes::Election,
        Leader = core::recipes::Leader,
        Leadership = core::recipes::Leadership,
        Entry = core::Entry,
        Error = core::Error,
        ErrorKind = core::ErrorKind,
        LeaseKeeper = core::recipes::LeaseKeeper,
        LeaseGrant = core::LeaseGrant,
        LeaseId = core::LeaseId,
        LeaseInfo = core::LeaseInfo,
        Lock = core::recipes::Lock,
        LockGuard = core::recipes::LockGuard,
        MirrorCause = core::mirror::MirrorCause,
        MirrorHealth = core::mirror::MirrorHealth,
        CollectionEntry = core::CollectionEntry,
        KeyRange = core::KeyRange,
        RangeOptions = core::RangeOptions,
        RangeResult = core::RangeResult,
        DeletePrefixResult = core::DeletePrefixResult,
        DeleteResult = core::DeleteResult,
        PutOptions = core::PutOptions,
        PutResult = core::PutResult,
        Compare = core::Compare,
        CompareOp = core::CompareOp,
        CompareTarget = core::CompareTarget,
        OpResult = core::OpResult,
        Txn = core::Txn,
        TxnOp = core::TxnOp,
        TxnResponse = core::TxnResponse,
        Event = core::Event,
        WatchBatch = core::WatchBatch,
        WatchOptions = core::WatchOptions,
        WatchPosition = core::WatchPosition,
        WatchStream = core::WatchStream,
    );
    assert_eq!(
        type_name::<keyplane::Result<()>>(),
        type_name::<core::Result<()>>()
    );
    assert_eq!(
        type_name::<keyplane::Namespaced>(),
        type_name::<core::layer::Namespaced>()
    );
    type K = Vec<u8>;
    type V = Vec<u8>;
    assert_eq!(
        type_name::<keyplane::Mirror<K, V>>(),
        type_name::<core::mirror::Mirror<K, V>>()
    );
    assert_eq!(
        type_name::<keyplane::MirrorBatch<K, V>>(),
        type_name::<core::mirror::MirrorBatch<K, V>>()
    );
    assert_eq!(
        type_name::<keyplane::MirrorBuilder<K, V>>(),
        type_name::<core::mirror::MirrorBuilder<K, V>>()
    );
    assert_eq!(
        type_name::<keyplane::MirrorSnapshot<K, V>>(),
        type_name::<core::mirror::MirrorSnapshot<K, V>>()
    );
    assert_eq!(
        type_name::<keyplane::MirrorSubscription<K, V>>(),
        type_name::<core::mirror::MirrorSubscription<K, V>>()
    );
    assert_eq!(
        type_name::<keyplane::BulkLoader<'static, dyn keyplane::Store>>(),
        type_name::<core::recipes::BulkLoader<'static, dyn keyplane::Store>>()
    );
    // Functions and constants: the same values as keyplane-core's.
    assert_eq!(keyplane::MAX_KEY_LEN, core::raw::MAX_KEY_LEN);
    assert_eq!(keyplane::prefix_end(b"a/"), core::raw::prefix_end(b"a/"));
    assert_eq!(
        keyplane::escape_bytes(b"\0"),
        core::raw::escape_bytes(b"\0")
    );
    assert!(keyplane::validate_key(b"").is_err());
    assert!(keyplane::validate_prefix(b"", true).is_ok());
    assert_eq!(
        keyplane::redact_url("redis://u:secret@h:6379/0"),
        core::raw::redact_url("redis://u:secret@h:6379/0")
    );
    // Traits, macros and a generic function: these names resolve.
    #[allow(unused_imports)]
    use keyplane::{
        Key, Keyspace, Prefix, Segment, Separator, StoreExt, async_trait, delete_prefix_in_batches,
    };
    #[allow(unused_imports)]
    use keyplane::{changes::CollectionChange, collections::CollectionOp, intercept::Interceptor};
    fn layered<S: keyplane::StoreExt>(store: S) -> impl keyplane::Store {
        store.layer(keyplane::layer::ReadOnlyLayer)
    }
    let _ = layered(keyplane::mem::MemStore::new());
}
