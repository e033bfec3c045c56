//! `load_tenant` reads at one revision: a write landing between its reads (here, right after
//! its first page) is not seen, so a tenant is never returned half old and half new.

mod tenant_common;

use keyplane_core::keyspace::{Key, TypedStore};
use keyplane_core::layer::{Call, FaultLayer, Interceptor, StoreExt};
use keyplane_core::raw::async_trait;
use keyplane_core::{Result, Store};
use keyplane_mem::MemStore;
use keyplane_schemas::tenant::{HostIndexKey, HostName, load_tenant, publish_tenant};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tenant_common::unique_tenant;

/// After the first range read it is armed for, deletes one host index entry, as another
/// program would between two reads.
struct DeleteAfterFirstRange {
    store: Arc<MemStore>,
    key: Vec<u8>,
    armed: AtomicBool,
}

#[async_trait]
impl Interceptor for DeleteAfterFirstRange {
    async fn after(&self, call: Call, _succeeded: bool) -> Result<()> {
        if call == Call::Range && self.armed.swap(false, Ordering::SeqCst) {
            self.store.delete(&self.key).await?;
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_write_between_its_reads_is_not_seen() {
    let inner = Arc::new(MemStore::new());
    let tenant = unique_tenant(1);
    let typed = TypedStore::new(inner.clone());
    publish_tenant(&typed, &tenant).await.unwrap();
    let host = tenant.hosts[0].host.clone();
    let key = HostIndexKey {
        host: HostName::new(host.as_str()).unwrap(),
    }
    .encode()
    .into_bytes();
    let watched = Arc::new(inner.clone().layer(FaultLayer::new(0).intercept(
        DeleteAfterFirstRange {
            store: inner.clone(),
            key: key.clone(),
            armed: AtomicBool::new(true),
        },
    )));
    let read = load_tenant(&TypedStore::new(watched), tenant.id())
        .await
        .unwrap()
        .unwrap();
    assert!(
        inner.get(&key).await.unwrap().is_none(),
        "the delete happened"
    );
    // The tenant as it was when the read began: the host binding is still there.
    assert!(
        read.hosts.iter().any(|h| h.host == host),
        "{:?}",
        read.hosts
    );
    // Read again now: the binding is gone.
    let now = load_tenant(&typed, tenant.id()).await.unwrap().unwrap();
    assert!(now.hosts.iter().all(|h| h.host != host));
}
