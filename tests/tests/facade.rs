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
            "redb".to_string(),
            format!("redb://{}", dir.path().join("nested/store.redb").display()),
        ),
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

/// The facade mirrors keyplane-core's layout: the contract at the root and each layer in its
/// module, each the item of keyplane-core. (`cargo xtask names` checks, from the facade's
/// documentation, that no item is on two paths.)
#[test]
fn the_facade_mirrors_the_core_layout() {
    use std::any::type_name;
    macro_rules! same_types {
        ($($path:path = $core:ty),* $(,)?) => {
            $(assert_eq!(
                type_name::<$path>(),
                type_name::<$core>(),
                "{}",
                stringify!($path)
            );)*
        };
    }
    use keyplane_core as core;
    type K = Vec<u8>;
    type V = Vec<u8>;
    same_types!(
        keyplane::Capabilities = core::Capabilities,
        keyplane::CollectionChange = core::CollectionChange,
        keyplane::CollectionOp = core::CollectionOp,
        keyplane::Entry = core::Entry,
        keyplane::Error = core::Error,
        keyplane::LeaseId = core::LeaseId,
        keyplane::RangeOptions = core::RangeOptions,
        keyplane::Txn = core::Txn,
        keyplane::WatchStream = core::WatchStream,
        keyplane::layer::Namespaced = core::layer::Namespaced,
        keyplane::layer::Call = core::layer::Call,
        keyplane::mirror::Mirror<K, V> = core::mirror::Mirror<K, V>,
        keyplane::mirror::MirrorCause = core::mirror::MirrorCause,
        keyplane::recipes::Lock = core::recipes::Lock,
        keyplane::recipes::BulkReport = core::recipes::BulkReport,
        keyplane::raw::GroupRevisions = core::raw::GroupRevisions,
        keyplane::tls::TlsConfig = core::tls::TlsConfig,
        keyplane::keyspace::Separator = core::keyspace::Separator,
    );
    assert_eq!(
        type_name::<keyplane::Result<()>>(),
        type_name::<core::Result<()>>()
    );
    assert_eq!(keyplane::raw::MAX_KEY_LEN, core::raw::MAX_KEY_LEN);
    assert!(keyplane::raw::validate_key(b"").is_err());
    // Traits, macros and a generic function: these names resolve in their modules.
    #[allow(unused_imports)]
    use keyplane::keyspace::{Key, Keyspace, Prefix, Segment};
    #[allow(unused_imports)]
    use keyplane::{layer::Interceptor, raw::async_trait, recipes::delete_prefix_in_batches};
    fn layered<S: keyplane::layer::StoreExt>(store: S) -> impl keyplane::Store {
        store.layer(keyplane::layer::ReadOnlyLayer)
    }
    let _ = layered(keyplane::mem::MemStore::new());
}
