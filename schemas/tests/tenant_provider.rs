//! The tenant Provider on every backend: the same answers as the live lookups (§7.4–§7.6),
//! a tenant published in one transaction appears all at once, a deleted one disappears.

mod tenant_common;

use keyplane_core::Store;
use keyplane_core::keyspace::TypedStore;
use keyplane_schemas::tenant::{
    Domains, FtpUsername, HostName, KNOWN_SERVICES, ServiceCode, Tenant, TenantCode, TenantName,
    TenantProvider, TenantView, database_config, delete_tenant, load_tenant, publish_tenant,
    tenant_by_code, tenant_by_ftp_user, tenant_by_host, tenant_by_name,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tenant_common::unique_tenant;

const WAIT: Duration = Duration::from_secs(20);

/// `t` in the order a read gives it: databases by service code, FTP users by username, hosts
/// in domain order.
fn as_read(mut t: Tenant) -> Tenant {
    t.databases
        .sort_by(|a, b| a.service_code.cmp(&b.service_code));
    t.ftp_users.sort_by(|a, b| a.username.cmp(&b.username));
    let order: Vec<String> = t.domains.all().map(str::to_owned).collect();
    t.hosts
        .sort_by_key(|h| order.iter().position(|d| *d == h.host));
    t
}

async fn caught_up(provider: &TenantProvider, revision: i64) -> TenantView {
    tokio::time::timeout(WAIT, provider.wait_for(revision))
        .await
        .expect("the provider catching up")
        .unwrap()
}

/// Every lookup of `view` about tenant `t` agrees with the live-store lookup.
async fn agrees_with_the_store(view: &TenantView, typed: &TypedStore, t: &Tenant) {
    let id = t.id();
    assert_eq!(view.tenant(id), load_tenant(typed, id).await.unwrap());
    let code = TenantCode::new(t.meta.code.as_str()).unwrap();
    assert_eq!(
        view.tenant_by_code(&code),
        tenant_by_code(typed, &code).await.unwrap()
    );
    let name = TenantName::new(t.meta.name.as_str()).unwrap();
    assert_eq!(
        view.tenant_by_name(&name),
        tenant_by_name(typed, &name).await.unwrap()
    );
    for domain in t.domains.all() {
        let host = HostName::new(domain).unwrap();
        assert_eq!(
            view.tenant_by_host(&host),
            tenant_by_host(typed, &host).await.unwrap()
        );
    }
    for user in &t.ftp_users {
        let username = FtpUsername::new(user.username.as_str()).unwrap();
        assert_eq!(
            view.tenant_by_ftp_user(&username),
            tenant_by_ftp_user(typed, &username).await.unwrap()
        );
        assert!(view.is_ftp_username_taken(&user.username));
    }
    for service in KNOWN_SERVICES {
        let service = ServiceCode::new(service).unwrap();
        assert_eq!(
            view.service_database_config(id, &service),
            database_config(typed, id, &service).await.unwrap(),
            "§7.4 for {service}"
        );
    }
    let primary = t.domains.primary.clone().unwrap_or_default();
    assert_eq!(view.primary_domain(id), primary, "§7.6");
}

async fn the_provider_answers_as_the_live_lookups(store: Arc<dyn Store>) {
    let typed = TypedStore::new(Arc::clone(&store));
    let provider = TenantProvider::start(&typed).await.unwrap();
    let full = unique_tenant(3);
    let mut bare = unique_tenant(1);
    bare.domains = Domains::default();
    bare.hosts.clear();
    publish_tenant(&typed, &full).await.unwrap();
    let last = publish_tenant(&typed, &bare).await.unwrap();

    let view = caught_up(&provider, last).await;
    for t in [&full, &bare] {
        agrees_with_the_store(&view, &typed, t).await;
        assert!(view.tenant_ids().contains(&t.id()));
    }
    assert_eq!(view.primary_domain(bare.id()), "");
    assert!(!view.is_ftp_username_taken("nobody-uses-this-name"));
    assert!(!view.is_ftp_username_taken("not a username"));
    let missing = unique_tenant(0).id();
    assert_eq!(view.tenant(missing), None);

    // A provider started now lists what the first one followed.
    let late = TenantProvider::start(&typed).await.unwrap();
    let view = caught_up(&late, last).await;
    for t in [&full, &bare] {
        agrees_with_the_store(&view, &typed, t).await;
    }
}

async fn a_tenant_published_in_one_transaction_appears_all_at_once(store: Arc<dyn Store>) {
    let typed = TypedStore::new(Arc::clone(&store));
    let provider = TenantProvider::start(&typed).await.unwrap();
    let t = as_read(unique_tenant(3));
    let code = TenantCode::new(t.meta.code.as_str()).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (provider, done, t, code) =
            (provider.clone(), Arc::clone(&done), t.clone(), code.clone());
        tokio::spawn(async move {
            let (mut before, mut after) = (0u64, 0u64);
            // At least one check, however soon the writer is done.
            loop {
                let stop = done.load(Ordering::Acquire);
                let view = provider.view();
                match view.tenant(t.id()) {
                    None => {
                        assert!(
                            view.tenant_by_code(&code).is_none(),
                            "an index before its tenant"
                        );
                        before += 1;
                    }
                    Some(seen) => {
                        assert_eq!(seen, t, "a tenant seen in part");
                        assert!(
                            view.tenant_by_code(&code).is_some(),
                            "a tenant before its index"
                        );
                        after += 1;
                    }
                }
                if stop {
                    break;
                }
                tokio::task::yield_now().await;
            }
            (before, after)
        })
    };
    let revision = publish_tenant(&typed, &t).await.unwrap();
    let view = caught_up(&provider, revision).await;
    assert_eq!(
        view.tenant(t.id()),
        load_tenant(&typed, t.id()).await.unwrap()
    );
    // Let the reader see the published view at least once.
    tokio::time::timeout(WAIT, async {
        while provider.view().tenant(t.id()).is_none() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap();
    tokio::task::yield_now().await;
    done.store(true, Ordering::Release);
    let (before, after) = reader.await.unwrap();
    assert!(before + after > 0);
}

async fn a_deleted_tenant_disappears_from_the_provider(store: Arc<dyn Store>) {
    let typed = TypedStore::new(Arc::clone(&store));
    let t = unique_tenant(2);
    publish_tenant(&typed, &t).await.unwrap();
    let provider = TenantProvider::start(&typed).await.unwrap();
    assert_eq!(provider.view().tenant(t.id()), Some(as_read(t.clone())));
    assert!(delete_tenant(&typed, t.id()).await.unwrap().found);
    let revision = store.revision().await.unwrap();
    let view = caught_up(&provider, revision).await;
    assert_eq!(view.tenant(t.id()), None);
    let code = TenantCode::new(t.meta.code.as_str()).unwrap();
    assert_eq!(view.tenant_by_code(&code), None);
    for user in &t.ftp_users {
        assert!(!view.is_ftp_username_taken(&user.username));
    }
    assert_eq!(provider.health().relists, 0);
}

keyplane_tests::on_every_backend!(
    the_provider_answers_as_the_live_lookups,
    a_tenant_published_in_one_transaction_appears_all_at_once,
    a_deleted_tenant_disappears_from_the_provider,
);
