//! Publishing tenants and reading them back, on every backend: one transaction, conflicts
//! and bad input write nothing, a tenant too large for one transaction is refused, a missing
//! database configuration is `None` (§7.4), an empty primary domain is `""` (§7.6).

mod tenant_common;

use keyplane_core::keyspace::TypedStore;
use keyplane_core::{ErrorKind, Store};
use keyplane_schemas::tenant::{
    DatabaseConfig, Domains, FtpUsername, HostName, ServiceCode, TenantCode, TenantName,
    database_config, load_tenant, publish_tenant, put_database_config, tenant_by_code,
    tenant_by_ftp_user, tenant_by_host, tenant_by_name,
};
use std::sync::Arc;
use tenant_common::{ftp_user, tenant_keys, unique_tenant};

async fn a_published_tenant_reads_back_whole_and_through_every_index(store: Arc<dyn Store>) {
    let typed = TypedStore::new(Arc::clone(&store));
    let t = unique_tenant(3);
    let id = t.id();
    let revision = publish_tenant(&typed, &t).await.expect("publish");
    assert!(revision > 0);

    let mut loaded = load_tenant(&typed, id).await.unwrap().expect("published");
    loaded.ftp_users.sort_by(|a, b| a.username.cmp(&b.username));
    let mut expected = t.clone();
    expected
        .ftp_users
        .sort_by(|a, b| a.username.cmp(&b.username));
    expected
        .databases
        .sort_by(|a, b| a.service_code.cmp(&b.service_code));
    assert_eq!(loaded, expected);

    let code_key = TenantCode::new(t.meta.code.as_str()).unwrap();
    let code = tenant_by_code(&typed, &code_key);
    let code = code.await.unwrap().unwrap();
    assert_eq!((code.id, code.name.as_str()), (id, t.meta.name.as_str()));
    let name = TenantName::new(t.meta.name.as_str()).unwrap();
    let by_name = tenant_by_name(&typed, &name).await.unwrap().unwrap();
    assert_eq!(by_name.primary_domain, format!("t{id}.example.com"));
    for binding in &t.hosts {
        let host = HostName::new(binding.host.as_str()).unwrap();
        let index = tenant_by_host(&typed, &host).await.unwrap().unwrap();
        assert_eq!(
            (index.tenant_id, &index.host_type),
            (id, &binding.host_type)
        );
    }
    for user in &t.ftp_users {
        let username = FtpUsername::new(user.username.as_str()).unwrap();
        let owner = tenant_by_ftp_user(&typed, &username)
            .await
            .unwrap()
            .unwrap();
        assert_eq!((owner.tenant_id, &owner.code), (id, &t.meta.code));
    }
    // The name holds a space and a `/`: escaped, it stays one segment.
    let keys = tenant_keys(store.as_ref(), &t).await;
    let name_key =
        format!("jxt/tenants/_index/by-name/%E7%A7%9F%E6%88%B7%20{id}%2F%E6%B5%8B%E8%AF%95");
    assert!(keys.contains(&name_key), "{keys:#?}");
    // 3 domain keys, 3 databases, 3 FTP users, meta, storage; code, name, 3 FTP, 2 hosts.
    assert_eq!(keys.len(), 11 + 7, "{keys:#?}");
}

async fn a_conflicting_tenant_writes_nothing_and_names_the_taken_keys(store: Arc<dyn Store>) {
    let typed = TypedStore::new(Arc::clone(&store));
    let first = unique_tenant(2);
    publish_tenant(&typed, &first).await.unwrap();

    // Another tenant reusing the first one's code and one of its FTP usernames.
    let mut second = unique_tenant(2);
    second.meta.code = first.meta.code.clone();
    second.ftp_users[1].username = first.ftp_users[0].username.clone();
    let err = publish_tenant(&typed, &second).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyExists);
    let message = err.to_string();
    assert!(
        message.contains(&format!("by-code/{}", first.meta.code)),
        "{message}"
    );
    assert!(
        message.contains(&format!("ftp-user/{}", first.ftp_users[0].username)),
        "{message}"
    );
    assert!(!message.contains("by-name"), "{message}");
    assert_eq!(
        tenant_keys(store.as_ref(), &second).await,
        Vec::<String>::new()
    );
    assert_eq!(load_tenant(&typed, second.id()).await.unwrap(), None);

    // The same tenant twice: its id is taken.
    let err = publish_tenant(&typed, &first).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyExists);
    assert!(
        err.to_string()
            .contains(&format!("jxt/tenants/{}/meta", first.id()))
    );
}

async fn bad_input_is_refused_before_anything_is_written(store: Arc<dyn Store>) {
    let typed = TypedStore::new(Arc::clone(&store));
    let good = unique_tenant(1);
    let mut cases = Vec::new();
    let mut t = good.clone();
    t.meta.code = "bad-code".to_owned(); // `-` is outside [a-zA-Z0-9_]
    cases.push(("meta.code", t));
    let mut t = good.clone();
    t.ftp_users[0].username = "bad/user".to_owned();
    cases.push(("ftpUsers.username", t));
    let mut t = good.clone();
    t.ftp_users[0].username = "..".to_owned();
    cases.push(("ftpUsers.username", t));
    let mut t = good.clone();
    t.ftp_users.push(t.ftp_users[0].clone());
    cases.push(("ftpUsers.username", t));
    let mut t = good.clone();
    t.ftp_users[0].tenant_id += 1;
    cases.push(("ftpUsers.tenantId", t));
    let mut t = good.clone();
    t.meta.name = String::new();
    cases.push(("meta.name", t));
    let mut t = good.clone();
    t.databases[0].service_code = "Evidence_Command".to_owned();
    cases.push(("databases.serviceCode", t));
    let mut t = good.clone();
    t.hosts[0].host = "elsewhere.example.com".to_owned();
    cases.push(("hosts", t));
    let mut t = good.clone();
    t.domains.primary = Some(String::new());
    cases.push(("domains", t));
    for (field, tenant) in cases {
        let err = publish_tenant(&typed, &tenant).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{field}: {err}");
        assert!(
            err.context()
                .iter()
                .any(|(k, v)| *k == "field" && v == field),
            "{field}: {err}"
        );
        assert_eq!(
            tenant_keys(store.as_ref(), &tenant).await,
            Vec::<String>::new()
        );
    }
    publish_tenant(&typed, &good)
        .await
        .expect("the valid tenant");
}

async fn a_tenant_too_large_for_one_transaction_is_refused(store: Arc<dyn Store>) {
    let typed = TypedStore::new(Arc::clone(&store));
    let max = store.capabilities().max_txn_ops;
    // Two operations per FTP user: more than the backend takes, and never split.
    let t = unique_tenant(max / 2 + 1);
    let err = publish_tenant(&typed, &t).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TxnTooLarge, "{err}");
    assert_eq!(tenant_keys(store.as_ref(), &t).await, Vec::<String>::new());

    // Just within the limit: published.
    let mut fits = unique_tenant(1);
    let fixed = 3 + 3 + 1 + fits.databases.len() + fits.hosts.len();
    let users = (max - fixed) / 2;
    fits.ftp_users = (0..users)
        .map(|i| ftp_user(fits.id(), &format!("u{}.{i}", fits.id())))
        .collect();
    publish_tenant(&typed, &fits)
        .await
        .expect("fits in one transaction");
}

async fn a_missing_database_config_is_none(store: Arc<dyn Store>) {
    let typed = TypedStore::new(Arc::clone(&store));
    let mut t = unique_tenant(0);
    t.databases
        .retain(|db| db.service_code == "evidence-command");
    let id = t.id();
    let query = ServiceCode::new("evidence-query").unwrap();
    // Neither the tenant nor the service: None.
    assert_eq!(database_config(&typed, id, &query).await.unwrap(), None);
    let config = DatabaseConfig {
        service_code: "evidence-query".to_owned(),
        ..t.databases[0].clone()
    };
    let err = put_database_config(&typed, &config).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert_eq!(database_config(&typed, id, &query).await.unwrap(), None);

    publish_tenant(&typed, &t).await.unwrap();
    // The tenant has another service's configuration, not this one: still None.
    assert_eq!(database_config(&typed, id, &query).await.unwrap(), None);
    let command = ServiceCode::new("evidence-command").unwrap();
    assert_eq!(
        database_config(&typed, id, &command)
            .await
            .unwrap()
            .as_ref(),
        Some(&t.databases[0])
    );
    put_database_config(&typed, &config).await.unwrap();
    assert_eq!(
        database_config(&typed, id, &query).await.unwrap(),
        Some(config)
    );
    let bad = DatabaseConfig {
        service_code: "bad/service".to_owned(),
        ..t.databases[0].clone()
    };
    let err = put_database_config(&typed, &bad).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

async fn a_tenant_without_domains_has_an_empty_primary_domain(store: Arc<dyn Store>) {
    let typed = TypedStore::new(Arc::clone(&store));
    let mut t = unique_tenant(1);
    t.domains = Domains::default();
    t.hosts.clear();
    publish_tenant(&typed, &t).await.unwrap();
    let name = TenantName::new(t.meta.name.as_str()).unwrap();
    let index = tenant_by_name(&typed, &name).await.unwrap().unwrap();
    assert_eq!(index.primary_domain, "");
    let raw_key = format!(
        "jxt/tenants/_index/by-name/{}",
        keyplane_core::keyspace::path_escape(&t.meta.name)
    );
    let raw = store.get(raw_key.as_bytes()).await.unwrap().unwrap();
    assert!(
        std::str::from_utf8(&raw.value)
            .unwrap()
            .ends_with(r#""primaryDomain":""}"#)
    );
    let keys = tenant_keys(store.as_ref(), &t).await;
    assert!(!keys.iter().any(|k| k.contains("/domain/")), "{keys:#?}");
    assert_eq!(load_tenant(&typed, t.id()).await.unwrap(), Some(t));
}

keyplane_tests::on_every_backend!(
    a_published_tenant_reads_back_whole_and_through_every_index,
    a_conflicting_tenant_writes_nothing_and_names_the_taken_keys,
    bad_input_is_refused_before_anything_is_written,
    a_tenant_too_large_for_one_transaction_is_refused,
    a_missing_database_config_is_none,
    a_tenant_without_domains_has_an_empty_primary_domain,
);
