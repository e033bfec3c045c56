//! Tenants with unique ids, codes, names, FTP usernames and hosts, so that scenario tests
//! never collide on the shared etcd and Redis servers.

#![allow(dead_code)]

use keyplane_core::{Entry, RangeOptions, Store};
use keyplane_schemas::tenant::{FtpConfig, HostBinding, Tenant, example_tenant};
use std::hash::{BuildHasher, Hasher};

/// A random number, different in every call and every process.
pub fn random() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(std::process::id().into());
    hasher.finish()
}

/// A fresh tenant id: never `1`, the example's.
pub fn fresh_id() -> u64 {
    random() % 1_000_000_000_000 + 1_000
}

/// An FTP user of tenant `id`.
pub fn ftp_user(id: u64, username: &str) -> FtpConfig {
    FtpConfig {
        tenant_id: id,
        username: username.to_owned(),
        password_hash: "$2a$10$abcdefghijklmnopqrstuv".to_owned(),
        description: format!("FTP user {username}"),
        status: "active".to_owned(),
        home_directory: format!("/tenants/{id}"),
        write_permission: true,
    }
}

/// The example tenant of §6.1 moved to a fresh id, with a unique code, a name that needs
/// escaping (space, `/`, Chinese), unique domains and `ftp_users` unique FTP users.
pub fn unique_tenant(ftp_users: usize) -> Tenant {
    let id = fresh_id();
    let mut t = example_tenant();
    t.meta.id = id;
    t.meta.code = format!("t_{id}");
    t.meta.name = format!("租户 {id}/测试");
    t.domains.primary = Some(format!("t{id}.example.com"));
    t.domains.aliases = vec![format!("api.t{id}.example.com")];
    t.domains.internal = Some(format!("t{id}.internal:8443"));
    for db in &mut t.databases {
        db.tenant_id = id;
    }
    t.ftp_users = (0..ftp_users)
        .map(|i| ftp_user(id, &format!("u{id}.{i}-ftp")))
        .collect();
    if let Some(storage) = &mut t.storage {
        storage.tenant_id = id;
    }
    t.hosts = vec![
        HostBinding {
            host: format!("api.t{id}.example.com"),
            host_type: "frontend".to_owned(),
        },
        HostBinding {
            host: format!("t{id}.internal:8443"),
            host_type: "internal".to_owned(),
        },
    ];
    t
}

/// Every entry under `prefix`, in order, read page by page.
pub async fn entries_under(store: &dyn Store, prefix: &str) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut opts = RangeOptions::prefix(prefix.as_bytes()).limit(100);
    loop {
        let page = store.range(opts.clone()).await.expect("range");
        entries.extend(page.entries);
        match page.next {
            Some(next) => opts = opts.after(next),
            None => return entries,
        }
    }
}

fn key_text(entry: &Entry) -> String {
    String::from_utf8(entry.key.clone()).expect("UTF-8 key")
}

/// Every key under `prefix`, in order.
pub async fn keys_under(store: &dyn Store, prefix: &str) -> Vec<String> {
    let entries = entries_under(store, prefix).await;
    entries.iter().map(key_text).collect()
}

/// Every key of tenant `t`: its directory and the index entries that name it (read with
/// their values, as other tests write indexes of their own tenants meanwhile).
pub async fn tenant_keys(store: &dyn Store, t: &Tenant) -> Vec<String> {
    let id = t.id();
    let mut keys = keys_under(store, &format!("jxt/tenants/{id}/")).await;
    for entry in entries_under(store, "jxt/tenants/_index/").await {
        let value: serde_json::Value = serde_json::from_slice(&entry.value).expect("JSON");
        let owner = value.get("tenantId").or_else(|| value.get("id"));
        if owner.and_then(serde_json::Value::as_u64) == Some(id) {
            keys.push(key_text(&entry));
        }
    }
    keys
}
