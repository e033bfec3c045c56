//! Deleting tenants: in one transaction when it fits, on every backend; finishing an
//! interrupted deletion by running it again; indexes first and data last when the backend
//! takes fewer operations per transaction than the tenant needs (§7.2).

mod tenant_common;

use keyplane_core::keyspace::TypedStore;
use keyplane_core::layer::{Call, Fault, FaultLayer, StoreExt};
use keyplane_core::{ErrorKind, PutOptions, Store};
use keyplane_mem::{MemConfig, MemStore};
use keyplane_schemas::tenant::HostName;
use keyplane_schemas::tenant::{
    FtpUsername, HostBinding, add_ftp_user, delete_tenant, load_tenant, publish_tenant,
    tenant_by_ftp_user, tenant_by_host,
};
use std::sync::Arc;
use tenant_common::{keys_under, tenant_keys, unique_tenant};
use tokio::sync::Barrier;

async fn a_deleted_tenant_leaves_no_key_and_no_index(store: Arc<dyn Store>) {
    let typed = TypedStore::new(Arc::clone(&store));
    let t = unique_tenant(3);
    let neighbour = unique_tenant(1);
    publish_tenant(&typed, &t).await.unwrap();
    publish_tenant(&typed, &neighbour).await.unwrap();
    let before = tenant_keys(store.as_ref(), &neighbour).await;

    let done = delete_tenant(&typed, t.id()).await.unwrap();
    assert!(done.found);
    // code, name, 3 FTP users, 2 hosts; one transaction marks the tenant, one deletes it.
    assert_eq!((done.indexes_deleted, done.transactions), (7, 2));
    assert_eq!(tenant_keys(store.as_ref(), &t).await, Vec::<String>::new());
    assert_eq!(load_tenant(&typed, t.id()).await.unwrap(), None);
    assert_eq!(tenant_keys(store.as_ref(), &neighbour).await, before);

    // Again: nothing left, nothing done.
    let again = delete_tenant(&typed, t.id()).await.unwrap();
    assert_eq!((again.found, again.transactions), (false, 0));
    // The freed code, name, usernames and hosts can be published again.
    publish_tenant(&typed, &t).await.expect("republish");
}

async fn an_interrupted_deletion_is_finished_by_running_it_again(store: Arc<dyn Store>) {
    let typed = TypedStore::new(Arc::clone(&store));
    let t = unique_tenant(3);
    publish_tenant(&typed, &t).await.unwrap();
    // A deletion that stopped after the FTP-user indexes and one host index (§7.2's order).
    for user in &t.ftp_users {
        let key = format!("jxt/tenants/_index/ftp-user/{}", user.username);
        assert!(store.delete(key.as_bytes()).await.unwrap().existed());
    }
    let host = format!("jxt/tenants/_index/host/{}", t.hosts[0].host);
    assert!(store.delete(host.as_bytes()).await.unwrap().existed());

    let done = delete_tenant(&typed, t.id()).await.unwrap();
    assert!(done.found);
    assert_eq!(done.indexes_deleted, 3); // one host, code, name
    assert_eq!(tenant_keys(store.as_ref(), &t).await, Vec::<String>::new());
    assert!(!delete_tenant(&typed, t.id()).await.unwrap().found);
}

async fn indexes_that_another_tenant_took_over_are_kept(store: Arc<dyn Store>) {
    let typed = TypedStore::new(Arc::clone(&store));
    let t = unique_tenant(1);
    publish_tenant(&typed, &t).await.unwrap();
    // Half-deleted: the FTP-user and host indexes are gone ...
    let username = t.ftp_users[0].username.clone();
    let ftp_index = format!("jxt/tenants/_index/ftp-user/{username}");
    store.delete(ftp_index.as_bytes()).await.unwrap();
    let host = t.hosts[0].host.clone();
    store
        .delete(format!("jxt/tenants/_index/host/{host}").as_bytes())
        .await
        .unwrap();
    // ... and another tenant claimed that username and host meanwhile.
    let mut other = unique_tenant(1);
    other.ftp_users[0].username = username.clone();
    other.domains.aliases.push(host.clone());
    other.hosts.push(HostBinding {
        host: host.clone(),
        host_type: "frontend".to_owned(),
    });
    publish_tenant(&typed, &other).await.unwrap();

    delete_tenant(&typed, t.id()).await.unwrap();
    assert_eq!(tenant_keys(store.as_ref(), &t).await, Vec::<String>::new());
    let owner_key = FtpUsername::new(username.as_str()).unwrap();
    let owner = tenant_by_ftp_user(&typed, &owner_key);
    assert_eq!(owner.await.unwrap().unwrap().tenant_id, other.id());
    let server_key = HostName::new(host.as_str()).unwrap();
    let server = tenant_by_host(&typed, &server_key);
    assert_eq!(server.await.unwrap().unwrap().tenant_id, other.id());
}

async fn a_deletion_racing_ftp_user_additions_leaves_no_orphan_index(store: Arc<dyn Store>) {
    const ADDERS: usize = 4;
    let typed = TypedStore::new(Arc::clone(&store));
    let t = unique_tenant(2);
    let id = t.id();
    publish_tenant(&typed, &t).await.unwrap();
    let barrier = Arc::new(Barrier::new(ADDERS + 1));
    let deleter = {
        let (typed, barrier) = (typed.clone(), Arc::clone(&barrier));
        tokio::spawn(async move {
            barrier.wait().await;
            delete_tenant(&typed, id).await
        })
    };
    let mut adders = Vec::new();
    let usernames: Vec<String> = (0..ADDERS).map(|i| format!("late{i}.{id}")).collect();
    for username in &usernames {
        let config = tenant_common::ftp_user(id, username);
        let (typed, barrier) = (typed.clone(), Arc::clone(&barrier));
        adders.push(tokio::spawn(async move {
            barrier.wait().await;
            add_ftp_user(&typed, &config).await
        }));
    }
    assert!(deleter.await.unwrap().expect("delete").found);
    for adder in adders {
        // Added before the deletion (and deleted with the tenant), or refused after it.
        if let Err(e) = adder.await.unwrap() {
            assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
        }
    }
    assert_eq!(tenant_keys(store.as_ref(), &t).await, Vec::<String>::new());
    for username in &usernames {
        let key = FtpUsername::new(username.as_str()).unwrap();
        assert_eq!(tenant_by_ftp_user(&typed, &key).await.unwrap(), None);
    }
}

keyplane_tests::on_every_backend!(
    a_deleted_tenant_leaves_no_key_and_no_index,
    an_interrupted_deletion_is_finished_by_running_it_again,
    indexes_that_another_tenant_took_over_are_kept,
    a_deletion_racing_ftp_user_additions_leaves_no_orphan_index,
);

async fn small_store(max_txn_ops: usize) -> Arc<MemStore> {
    Arc::new(
        MemStore::open(MemConfig::default().max_txn_ops(max_txn_ops))
            .await
            .unwrap(),
    )
}

#[tokio::test]
async fn a_tenant_larger_than_one_transaction_is_deleted_indexes_first() {
    // Publishing takes 22 operations, within 32; deleting its 9 index entries and its data
    // in one transaction would take 10, more than 8.
    let store = small_store(32).await;
    let typed = TypedStore::new(store.clone());
    let t = unique_tenant(5);
    publish_tenant(&typed, &t).await.unwrap();

    let small = small_store(8).await;
    let small_typed = TypedStore::new(small.clone());
    for entry in keys_under(store.as_ref(), "jxt/").await {
        let value = store.get(entry.as_bytes()).await.unwrap().unwrap().value;
        small
            .put(entry.as_bytes(), &value, PutOptions::default())
            .await
            .unwrap();
    }
    let done = delete_tenant(&small_typed, t.id()).await.unwrap();
    // The mark, 9 index entries (code, name, 5 FTP users, 2 hosts) in batches of 8, then
    // the data.
    assert_eq!((done.indexes_deleted, done.transactions), (9, 4));
    assert_eq!(
        keys_under(small.as_ref(), "jxt/").await,
        Vec::<String>::new()
    );
}

#[tokio::test]
async fn a_deletion_cut_off_between_transactions_is_resumed() {
    let inner = small_store(4).await;
    let mut t = unique_tenant(0);
    t.databases.truncate(1);
    t.storage = None;
    t.hosts.truncate(1);
    // Publish needs 3 + 3 domains + 1 database + 1 host = 8 ops: publish on a roomier store.
    let roomy = small_store(16).await;
    publish_tenant(&TypedStore::new(roomy.clone()), &t)
        .await
        .unwrap();
    let users: Vec<String> = (0..6).map(|i| format!("u{}.{i}", t.id())).collect();
    for user in &users {
        let config = tenant_common::ftp_user(t.id(), user);
        keyplane_schemas::tenant::add_ftp_user(&TypedStore::new(roomy.clone()), &config)
            .await
            .unwrap();
    }
    for key in keys_under(roomy.as_ref(), "jxt/").await {
        let value = roomy.get(key.as_bytes()).await.unwrap().unwrap().value;
        inner
            .put(key.as_bytes(), &value, PutOptions::default())
            .await
            .unwrap();
    }
    let all = keys_under(inner.as_ref(), "jxt/").await;
    // 6 FTP users, 1 host, code and name: 9 index entries, in batches of at most 4.
    // Transactions fail, as on a lost connection, once `budget` have been sent.
    let cut_off = |budget| {
        let faults = FaultLayer::new(0).with(Fault::unavailable().on([Call::Txn]).after(budget));
        TypedStore::new(Arc::new(inner.clone().layer(faults)))
    };
    let err = delete_tenant(&cut_off(2), t.id()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    // Cut off after the mark and the first batch: four FTP-user indexes are gone, the data
    // is whole.
    let left = keys_under(inner.as_ref(), "jxt/").await;
    assert_eq!(left.len(), all.len() - 4);
    assert_eq!(left.iter().filter(|k| k.contains("/ftp-user/")).count(), 2);
    let dir = keys_under(inner.as_ref(), &format!("jxt/tenants/{}/", t.id())).await;
    assert_eq!(dir.len(), 1 + 3 + 1 + 6);

    // Cut off once more after one batch, then run to the end.
    delete_tenant(&cut_off(1), t.id()).await.unwrap_err();
    assert_eq!(
        keys_under(inner.as_ref(), "jxt/").await.len(),
        all.len() - 8
    );
    let done = delete_tenant(&TypedStore::new(inner.clone()), t.id())
        .await
        .unwrap();
    // Only the name index was left: it and the data fit in one transaction.
    assert_eq!((done.indexes_deleted, done.transactions), (1, 1));
    assert_eq!(
        keys_under(inner.as_ref(), "jxt/").await,
        Vec::<String>::new()
    );
}
