//! FTP users on every backend: usernames unique across tenants under real concurrency
//! (§7.5), adding and removing one user (§7.1), bad input refused.

mod tenant_common;

use keyplane_core::keyspace::TypedStore;
use keyplane_core::{ErrorKind, Store};
use keyplane_schemas::tenant::{
    FtpUsername, add_ftp_user, load_tenant, publish_tenant, remove_ftp_user, tenant_by_ftp_user,
};
use std::sync::Arc;
use tenant_common::{ftp_user, keys_under, random, unique_tenant};
use tokio::sync::Barrier;

const CONTENDERS: usize = 8;

fn shared_username() -> String {
    format!("shared.{}-ftp", random())
}

async fn of_tenants_published_at_once_with_one_ftp_username_exactly_one_wins(
    store: Arc<dyn Store>,
) {
    let typed = TypedStore::new(Arc::clone(&store));
    let username = shared_username();
    let barrier = Arc::new(Barrier::new(CONTENDERS));
    let mut tasks = Vec::new();
    for _ in 0..CONTENDERS {
        let mut t = unique_tenant(2);
        t.ftp_users[1].username = username.clone();
        let (typed, barrier) = (typed.clone(), Arc::clone(&barrier));
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            (t.id(), publish_tenant(&typed, &t).await)
        }));
    }
    let mut winners = Vec::new();
    let mut losers = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            (id, Ok(_)) => winners.push(id),
            (id, Err(e)) => {
                assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");
                losers.push(id);
            }
        }
    }
    assert_eq!(winners.len(), 1, "winners {winners:?}");
    let owner_key = FtpUsername::new(username.as_str()).unwrap();
    let owner = tenant_by_ftp_user(&typed, &owner_key);
    assert_eq!(owner.await.unwrap().unwrap().tenant_id, winners[0]);
    for id in losers {
        assert_eq!(load_tenant(&typed, id).await.unwrap(), None);
        let left = keys_under(store.as_ref(), &format!("jxt/tenants/{id}/")).await;
        assert_eq!(left, Vec::<String>::new());
    }
}

async fn of_concurrent_adds_of_one_ftp_username_exactly_one_wins(store: Arc<dyn Store>) {
    let typed = TypedStore::new(Arc::clone(&store));
    let username = shared_username();
    // Half the contenders in one tenant, the others each in their own.
    let shared = unique_tenant(1);
    publish_tenant(&typed, &shared).await.unwrap();
    let mut ids = vec![shared.id(); CONTENDERS / 2];
    for _ in CONTENDERS / 2..CONTENDERS {
        let t = unique_tenant(1);
        publish_tenant(&typed, &t).await.unwrap();
        ids.push(t.id());
    }
    let mut tenants = ids.clone();
    tenants.dedup();
    let barrier = Arc::new(Barrier::new(CONTENDERS));
    let mut tasks = Vec::new();
    for id in ids {
        let config = ftp_user(id, &username);
        let (typed, barrier) = (typed.clone(), Arc::clone(&barrier));
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            (id, add_ftp_user(&typed, &config).await)
        }));
    }
    let mut winners = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            (id, Ok(_)) => winners.push(id),
            (_, Err(e)) => assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}"),
        }
    }
    assert_eq!(winners.len(), 1, "winners {winners:?}");
    let owner_key = FtpUsername::new(username.as_str()).unwrap();
    let owner = tenant_by_ftp_user(&typed, &owner_key);
    let owner = owner.await.unwrap().unwrap();
    assert_eq!(owner.tenant_id, winners[0]);
    // Exactly one FTP key of that name exists, in the winner's directory.
    let mut holders = 0;
    for id in tenants {
        let key = format!("jxt/tenants/{id}/ftp/{username}");
        if store.get(key.as_bytes()).await.unwrap().is_some() {
            assert_eq!(id, winners[0]);
            holders += 1;
        }
    }
    assert_eq!(holders, 1);
}

async fn adding_and_removing_an_ftp_user_keeps_its_index_in_step(store: Arc<dyn Store>) {
    let typed = TypedStore::new(Arc::clone(&store));
    let t = unique_tenant(1);
    let id = t.id();
    publish_tenant(&typed, &t).await.unwrap();
    let name = format!("extra.{id}");
    let username = FtpUsername::new(name.as_str()).unwrap();
    add_ftp_user(&typed, &ftp_user(id, &name)).await.unwrap();
    let owner = tenant_by_ftp_user(&typed, &username)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((owner.tenant_id, &owner.name), (id, &t.meta.name));
    // Adding it again, to this tenant: taken.
    let err = add_ftp_user(&typed, &ftp_user(id, &name))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyExists);

    assert!(remove_ftp_user(&typed, id, &name).await.unwrap());
    assert_eq!(tenant_by_ftp_user(&typed, &username).await.unwrap(), None);
    assert!(!remove_ftp_user(&typed, id, &name).await.unwrap());

    // Removing the last user leaves the `ftp/` directory empty, with no placeholder (§7.1).
    assert!(
        remove_ftp_user(&typed, id, &t.ftp_users[0].username)
            .await
            .unwrap()
    );
    let ftp_dir = keys_under(store.as_ref(), &format!("jxt/tenants/{id}/ftp/")).await;
    assert_eq!(ftp_dir, Vec::<String>::new());
    let loaded = load_tenant(&typed, id).await.unwrap().unwrap();
    assert!(loaded.ftp_users.is_empty());
    assert_eq!(loaded.meta, t.meta);

    // Another tenant's user is not removed through this one, nor its index.
    let other = unique_tenant(1);
    publish_tenant(&typed, &other).await.unwrap();
    let theirs = other.ftp_users[0].username.clone();
    assert!(!remove_ftp_user(&typed, id, &theirs).await.unwrap());
    let owner_key = FtpUsername::new(theirs.as_str()).unwrap();
    let owner = tenant_by_ftp_user(&typed, &owner_key);
    assert_eq!(owner.await.unwrap().unwrap().tenant_id, other.id());
}

async fn bad_ftp_input_is_refused(store: Arc<dyn Store>) {
    let typed = TypedStore::new(Arc::clone(&store));
    let t = unique_tenant(0);
    let id = t.id();
    // No such tenant.
    let err = add_ftp_user(&typed, &ftp_user(id, &format!("nobody.{id}")))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    publish_tenant(&typed, &t).await.unwrap();
    for bad in ["", ".", "..", "a b", "a/b", "用户", "a:b"] {
        let err = add_ftp_user(&typed, &ftp_user(id, bad)).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{bad:?}");
        let err = remove_ftp_user(&typed, id, bad).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{bad:?}");
    }
    let ftp_dir = keys_under(store.as_ref(), &format!("jxt/tenants/{id}/ftp/")).await;
    assert_eq!(ftp_dir, Vec::<String>::new());
}

keyplane_tests::on_every_backend!(
    of_tenants_published_at_once_with_one_ftp_username_exactly_one_wins,
    of_concurrent_adds_of_one_ftp_username_exactly_one_wins,
    adding_and_removing_an_ftp_user_keeps_its_index_in_step,
    bad_ftp_input_is_refused,
);
