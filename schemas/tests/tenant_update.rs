//! Tenant updates on every backend: meta (its code and name indexes move, the FTP-user and
//! host entries follow), domains and hosts, storage, database configurations, FTP password
//! and rename; each one guarded transaction; bad input and taken names write nothing;
//! concurrent FTP renames keep usernames unique and the index exact.

use keyplane_core::keyspace::TypedStore;
use keyplane_core::{ErrorKind, Store};
use keyplane_schemas::tenant::*;
use std::collections::BTreeMap;
use std::sync::Arc;

mod tenant_common;
use tenant_common::*;

/// Every key of `t` (directory and the index entries naming it) with its value.
async fn entries(store: &dyn Store, t: &Tenant) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for key in tenant_keys(store, t).await {
        let entry = store.get(key.as_bytes()).await.unwrap().unwrap();
        out.insert(key, entry.value);
    }
    out
}

fn json(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes).unwrap()
}

async fn meta_change_moves_its_indexes(store: Arc<dyn Store>) {
    let typed = TypedStore::new(store.clone());
    let t = unique_tenant(2);
    let other = unique_tenant(1);
    publish_tenant(&typed, &t).await.unwrap();
    publish_tenant(&typed, &other).await.unwrap();
    let id = t.id();
    let before = entries(&*store, &t).await;

    let mut meta = t.meta.clone();
    meta.code = format!("{}_new", t.meta.code);
    meta.name = format!("{} (new)", t.meta.name);
    meta.billing_plan = "basic".into();
    update_meta(&typed, &meta).await.unwrap();
    let after = entries(&*store, &t).await;
    let old_code = format!("jxt/tenants/_index/by-code/{}", t.meta.code);
    let new_code = format!("jxt/tenants/_index/by-code/{}", meta.code);
    assert!(before.contains_key(&old_code) && !after.contains_key(&old_code));
    assert_eq!(json(&after[&new_code])["name"], meta.name.as_str());
    let names: Vec<&String> = after.keys().filter(|k| k.contains("/by-name/")).collect();
    assert_eq!(names.len(), 1);
    assert!(names[0].ends_with("%20%28new%29"), "{names:?}");
    for (key, value) in &after {
        if key.contains("/ftp-user/") {
            assert_eq!(json(value)["code"], meta.code.as_str(), "{key}");
            assert_eq!(json(value)["name"], meta.name.as_str(), "{key}");
        }
        if key.contains("/_index/host/") {
            assert_eq!(json(value)["code"], meta.code.as_str(), "{key}");
        }
    }
    // Data keys other than the meta keep their bytes.
    for (key, value) in &before {
        if key.starts_with(&format!("jxt/tenants/{id}/")) && !key.ends_with("/meta") {
            assert_eq!(after.get(key), Some(value), "{key}");
        }
    }
    assert_eq!(
        tenant_by_code(&typed, &TenantCode::new(meta.code.as_str()).unwrap())
            .await
            .unwrap()
            .unwrap()
            .id,
        id
    );

    // Another tenant's code is taken: nothing written.
    let mut clash = meta.clone();
    clash.code = other.meta.code.clone();
    let err = update_meta(&typed, &clash).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyExists, "{err}");
    assert_eq!(entries(&*store, &t).await, after);
    // A bad code: nothing written.
    let mut bad = meta.clone();
    bad.code = "not a code".into();
    let err = update_meta(&typed, &bad).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert_eq!(entries(&*store, &t).await, after);
    // The same meta again writes nothing.
    update_meta(&typed, &meta).await.unwrap();
    let unchanged = store
        .get(format!("jxt/tenants/{id}/meta").as_bytes())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        unchanged.version, 2,
        "written once by the change, not again"
    );
    // Another tenant's entries are untouched throughout.
    assert!(tenant_keys(&*store, &other).await.len() > 5);
}

async fn domains_hosts_storage_and_databases(store: Arc<dyn Store>) {
    let typed = TypedStore::new(store.clone());
    let t = unique_tenant(0);
    publish_tenant(&typed, &t).await.unwrap();
    let id = t.id();
    let mut domains = t.domains.clone();
    let extra = format!("cdn.t{id}.example.com");
    domains.aliases.push(extra.clone());
    let hosts = vec![
        HostBinding {
            host: extra.clone(),
            host_type: "cdn".into(),
        },
        t.hosts[0].clone(),
    ];
    set_domains(&typed, id, &domains, &hosts).await.unwrap();
    let keys = entries(&*store, &t).await;
    let host_keys: Vec<&String> = keys
        .keys()
        .filter(|k| k.contains("/_index/host/"))
        .collect();
    assert_eq!(host_keys.len(), 2, "{host_keys:?}");
    assert_eq!(
        json(&keys[&format!("jxt/tenants/_index/host/{extra}")])["hostType"],
        "cdn"
    );
    assert!(
        !keys.contains_key(&format!("jxt/tenants/_index/host/t{id}.internal%3A8443")),
        "the dropped host left the index"
    );
    // A host that is not one of the domains is refused.
    let err = set_domains(
        &typed,
        id,
        &t.domains,
        &[HostBinding {
            host: extra.clone(),
            host_type: "cdn".into(),
        }],
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");

    set_storage(&typed, id, None).await.unwrap();
    assert!(
        store
            .get(format!("jxt/tenants/{id}/storage").as_bytes())
            .await
            .unwrap()
            .is_none()
    );
    let mut db = t.databases[0].clone();
    db.port = 3307;
    set_database_config(&typed, id, &db).await.unwrap();
    let service = ServiceCode::new(db.service_code.as_str()).unwrap();
    assert_eq!(
        database_config(&typed, id, &service)
            .await
            .unwrap()
            .unwrap()
            .port,
        3307
    );
    assert!(
        remove_database_config(&typed, id, &db.service_code)
            .await
            .unwrap()
    );
    assert!(
        !remove_database_config(&typed, id, &db.service_code)
            .await
            .unwrap()
    );
    assert_eq!(database_config(&typed, id, &service).await.unwrap(), None);
    let err = remove_database_config(&typed, id, "Bad Code")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let err = set_storage(&typed, fresh_id(), None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
}

async fn ftp_password_and_rename(store: Arc<dyn Store>) {
    let typed = TypedStore::new(store.clone());
    let t = unique_tenant(2);
    let other = unique_tenant(1);
    publish_tenant(&typed, &t).await.unwrap();
    publish_tenant(&typed, &other).await.unwrap();
    let id = t.id();
    let user = t.ftp_users[0].username.clone();
    let index_key = format!("jxt/tenants/_index/ftp-user/{user}");
    let index_before = store.get(index_key.as_bytes()).await.unwrap().unwrap();
    change_ftp_password(&typed, id, &user, "$2a$10$changed")
        .await
        .unwrap();
    let ftp = store
        .get(format!("jxt/tenants/{id}/ftp/{user}").as_bytes())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(json(&ftp.value)["passwordHash"], "$2a$10$changed");
    assert_eq!(
        store
            .get(index_key.as_bytes())
            .await
            .unwrap()
            .unwrap()
            .mod_revision,
        index_before.mod_revision,
        "a password change leaves the index alone"
    );

    let renamed = format!("{user}.renamed");
    rename_ftp_user(&typed, id, &user, &renamed).await.unwrap();
    let keys = entries(&*store, &t).await;
    assert!(!keys.contains_key(&index_key));
    assert!(!keys.contains_key(&format!("jxt/tenants/{id}/ftp/{user}")));
    let moved = json(&keys[&format!("jxt/tenants/{id}/ftp/{renamed}")]);
    assert_eq!(
        (moved["username"].as_str(), moved["passwordHash"].as_str()),
        (Some(renamed.as_str()), Some("$2a$10$changed"))
    );
    assert_eq!(
        json(&keys[&format!("jxt/tenants/_index/ftp-user/{renamed}")])["tenantId"],
        id
    );

    // Taken by another tenant, or unknown, or invalid: nothing written.
    let taken = other.ftp_users[0].username.clone();
    let err = rename_ftp_user(&typed, id, &renamed, &taken)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyExists, "{err}");
    let err = rename_ftp_user(&typed, id, "nobody", "someone")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    let err = rename_ftp_user(&typed, id, &renamed, "bad name")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert_eq!(entries(&*store, &t).await, keys);
}

async fn adding_an_ftp_user_leaves_the_meta_alone(store: Arc<dyn Store>) {
    let typed = TypedStore::new(store.clone());
    let t = unique_tenant(0);
    publish_tenant(&typed, &t).await.unwrap();
    let meta_key = format!("jxt/tenants/{}/meta", t.id());
    let before = store.get(meta_key.as_bytes()).await.unwrap().unwrap();
    add_ftp_user(&typed, &ftp_user(t.id(), &format!("u{}.added", t.id())))
        .await
        .unwrap();
    let after = store.get(meta_key.as_bytes()).await.unwrap().unwrap();
    assert_eq!(after.mod_revision, before.mod_revision);
}

/// Tenants renaming their users to the same names at once: of each group of renames to one
/// name exactly one wins; afterwards every index entry names the tenant that has the user,
/// and every user has its entry. A rename that read, then wrote without compares would
/// leave two tenants with one username, or an index entry pointing at the wrong one.
async fn concurrent_ftp_renames_keep_usernames_unique(store: Arc<dyn Store>) {
    let typed = TypedStore::new(store.clone());
    let tenants: Vec<Tenant> = (0..3).map(|_| unique_tenant(3)).collect();
    for t in &tenants {
        publish_tenant(&typed, t).await.unwrap();
    }
    let shared: Vec<String> = (0..3)
        .map(|i| format!("shared{}.{i}", tenants[0].id()))
        .collect();
    let mut tasks = Vec::new();
    for t in &tenants {
        for (user, target) in t.ftp_users.iter().zip(&shared) {
            let (typed, id, from, to) =
                (typed.clone(), t.id(), user.username.clone(), target.clone());
            tasks.push(tokio::spawn(async move {
                (
                    to.clone(),
                    rename_ftp_user(&typed, id, &from, &to).await.map(|_| id),
                )
            }));
        }
    }
    let mut winners: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for task in tasks {
        let (to, result) = task.await.unwrap();
        match result {
            Ok(id) => winners.entry(to).or_default().push(id),
            Err(e) => assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}"),
        }
    }
    for name in &shared {
        assert_eq!(
            winners.get(name).map(Vec::len),
            Some(1),
            "{name}: {winners:?}"
        );
    }
    for t in &tenants {
        let loaded = load_tenant(&typed, t.id()).await.unwrap().unwrap();
        assert_eq!(loaded.ftp_users.len(), 3);
        for user in &loaded.ftp_users {
            let index = store
                .get(format!("jxt/tenants/_index/ftp-user/{}", user.username).as_bytes())
                .await
                .unwrap()
                .expect("every user has its index entry");
            assert_eq!(json(&index.value)["tenantId"], t.id());
        }
        // And no entry names this tenant for a user it does not have.
        let owned: Vec<String> = tenant_keys(&*store, t)
            .await
            .into_iter()
            .filter(|k| k.contains("/ftp-user/"))
            .collect();
        assert_eq!(owned.len(), 3, "{owned:?}");
    }
}

keyplane_tests::on_every_backend!(
    meta_change_moves_its_indexes,
    domains_hosts_storage_and_databases,
    ftp_password_and_rename,
    adding_an_ftp_user_leaves_the_meta_alone,
    concurrent_ftp_renames_keep_usernames_unique,
);

/// The schema declares which fields of a value repeat its key (`meta.id`,
/// `database.tenantId`/`serviceCode`, `ftp.tenantId`/`username`, `storage.tenantId`); typed
/// puts and transactions refuse a value that disagrees, and write nothing.
#[tokio::test]
async fn typed_puts_refuse_values_that_disagree_with_their_key() {
    let typed = TypedStore::new(Arc::new(keyplane_mem::MemStore::new()));
    let start = typed.store().revision().await.unwrap();
    let t = unique_tenant(1);
    let mut meta = t.meta.clone();
    meta.id += 1;
    let err = typed
        .put(&TenantMetaKey { id: t.id() }, &meta)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidValue, "{err}");
    let user = t.ftp_users[0].clone();
    let mut txn = typed.txn();
    txn.put(
        &FtpConfigKey {
            id: t.id(),
            username: FtpUsername::new("someone.else").unwrap(),
        },
        &user,
    );
    let err = txn.commit().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidValue, "{err}");
    assert_eq!(
        typed.store().revision().await.unwrap(),
        start,
        "nothing written"
    );
    // A tenant whose parts disagree is refused before anything is sent.
    let mut bad = t.clone();
    bad.databases[0].tenant_id += 1;
    assert_eq!(
        publish_tenant(&typed, &bad).await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}
