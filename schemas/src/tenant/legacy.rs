//! `tenant-legacy`: the old layout of §3 (keys under `jxt//`, written by the Go client whose
//! `buildKey` doubled the separator, §4.1) into the layout of §2, as a [`Migration`].
//!
//! | old key (§3) | new key |
//! |---|---|
//! | `jxt//jxt/config/tenants/{id}/services/{code}/database` | `jxt/tenants/{id}/database/{code}` |
//! | `jxt//tenants/{id}/meta`, `domain/primary`, `domain/aliases`, `domain/internal`, `storage` | the same under `jxt/tenants/{id}/` |
//! | `jxt//tenants/{id}/ftp` (one JSON array) | `jxt/tenants/{id}/ftp/{username}`, one key per user |
//! | `jxt//tenants/by-code/{code}`, `by-name/{name}` | `jxt/tenants/_index/by-code/{code}`, `_index/by-name/{name}` |
//! | `jxt//ftp-users/{username}` | `jxt/tenants/_index/ftp-user/{username}` |
//! | `jxt//hosts/{host}` | `jxt/tenants/_index/host/{host}` |
//! | `jxt//common/resolver`, `common/storage-directory`, `_health/sentinel`, `platform/configs/{key}` | the same under `jxt/` |
//!
//! Values keep their bytes, except where the new layout needs a field the old one lacks:
//! - a service database config gets `tenantId` and `serviceCode` from its key when it has
//!   none (§2.2.2; the old key carried them, the old value need not);
//! - each user of the old FTP array becomes its own value, with `tenantId` from the key
//!   when the element has none (§2.2.3). The array may be the document's
//!   `{"ftpConfigs": [...]}` or a bare JSON array.
//!
//! A value whose field disagrees with its key (the schema's agreement, as typed puts check
//! it: a meta's `id`, a storage config's `tenantId`...), a new key that is not a key of the new
//! layout (for instance an index segment that is not escaped as §7.3 says), a value the new
//! layout cannot decode, and any other key under `jxt//` are reported as unmappable and left
//! alone.

use super::keys::TenantKeyspace;
use super::provider::{TenantValue, decode};
use keyplane_core::keyspace::Keyspace;
use keyplane_core::migrate::{Item, Mapping, Migration, Value};
use keyplane_core::{Result, Store};
use serde_json::Value as Json;

/// The old layout's prefix: the namespace `jxt/` followed by keys that began with `/`.
const OLD: &str = "jxt//";

/// The `tenant-legacy` migration.
///
/// ```
/// # #[tokio::main] async fn main() -> keyplane_core::Result<()> {
/// use keyplane_core::migrate::Migrator;
/// use keyplane_core::{PutOptions, Store};
/// use keyplane_schemas::tenant::TenantLegacy;
/// use std::sync::Arc;
///
/// let store: Arc<dyn Store> = Arc::new(keyplane_mem::MemStore::new());
/// let ftp = br#"{"ftpConfigs":[{"username":"default_ftp","passwordHash":"$2a$10$x","description":"","status":"active","homeDirectory":"/tenants/1","writePermission":true}]}"#;
/// store.put(b"jxt//tenants/1/ftp", ftp, PutOptions::default()).await?;
/// store.put(b"jxt//hosts/api.example.com", br#"{"tenantId":1,"code":"default","hostType":"frontend"}"#, PutOptions::default()).await?;
///
/// let migrator = Migrator::new(store.clone(), Arc::new(TenantLegacy));
/// assert_eq!(migrator.apply().await?.created, 2);
/// let user = store.get(b"jxt/tenants/1/ftp/default_ftp").await?.unwrap();
/// assert!(String::from_utf8_lossy(&user.value).contains(r#""tenantId":1"#)); // added from the key
/// assert!(store.get(b"jxt/tenants/_index/host/api.example.com").await?.is_some());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct TenantLegacy;

impl TenantLegacy {
    /// The migration's name.
    pub const NAME: &'static str = "tenant-legacy";
}

#[keyplane_core::async_trait]
impl Migration for TenantLegacy {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn sources(&self) -> Vec<Vec<u8>> {
        vec![OLD.as_bytes().to_vec()]
    }

    async fn map(&self, old: &Item, _: &dyn Store) -> Result<Mapping> {
        Ok(map(old))
    }
}

fn map(old: &Item) -> Mapping {
    let Some(rel) = std::str::from_utf8(&old.key)
        .ok()
        .and_then(|k| k.strip_prefix(OLD))
    else {
        return Mapping::NotOld;
    };
    let Value::Plain(bytes) = &old.value else {
        return Mapping::Unmappable("the old layout holds plain keys only".into());
    };
    let parts: Vec<&str> = rel.split('/').collect();
    match parts.as_slice() {
        ["jxt", "config", "tenants", id, "services", code, "database"] => {
            let new = format!("jxt/tenants/{id}/database/{code}");
            let fields = [
                ("tenantId", tenant_id(id)),
                ("serviceCode", Json::from(*code)),
            ];
            with_fields(&new, bytes, &fields).map_or_else(Mapping::Unmappable, one)
        }
        ["tenants", id, "ftp"] => ftp_users(id, bytes),
        ["tenants", id, rest @ ..]
            if matches!(
                rest,
                ["meta"] | ["storage"] | ["domain", "primary" | "aliases" | "internal"]
            ) && !matches!(*id, "by-code" | "by-name") =>
        {
            same(&format!("jxt/tenants/{id}/{}", rest.join("/")), bytes)
        }
        ["tenants", "by-code", code] => same(&format!("jxt/tenants/_index/by-code/{code}"), bytes),
        ["tenants", "by-name", name] => same(&format!("jxt/tenants/_index/by-name/{name}"), bytes),
        ["ftp-users", user] => same(&format!("jxt/tenants/_index/ftp-user/{user}"), bytes),
        ["hosts", host] => same(&format!("jxt/tenants/_index/host/{host}"), bytes),
        ["common", "resolver" | "storage-directory"] | ["_health", "sentinel"] => {
            same(&format!("jxt/{rel}"), bytes)
        }
        ["platform", "configs", name] => same(&format!("jxt/platform/configs/{name}"), bytes),
        _ => Mapping::Unmappable("no row of the document's §3 covers this key".into()),
    }
}

/// The tenant id segment as a JSON number (a string when it is not one: the new key's
/// check then refuses it).
fn tenant_id(id: &str) -> Json {
    id.parse::<u64>()
        .map_or_else(|_| Json::from(id), Json::from)
}

fn one(item: Item) -> Mapping {
    Mapping::To(vec![item])
}

/// `bytes` unchanged under `new`, once `new` is a key of the new layout and `bytes` decode
/// there.
fn same(new: &str, bytes: &[u8]) -> Mapping {
    checked(new, bytes.to_vec()).map_or_else(Mapping::Unmappable, one)
}

/// The new item, checked: its key parses in the new layout and its value decodes there.
fn checked(new: &str, bytes: Vec<u8>) -> std::result::Result<Item, String> {
    let key = TenantKeyspace::parse(new)
        .map_err(|e| format!("`{new}` is not a key of the new layout: {e}"))?;
    let value =
        decode(&key, &bytes).map_err(|e| format!("the value does not decode for `{new}`: {e}"))?;
    agrees(&key, &value).map_err(|why| format!("the value disagrees with `{new}`: {why}"))?;
    Ok(Item::plain(new, bytes))
}

/// The schema's key/value agreement ([`Key::check_value`](keyplane_core::keyspace::Key::check_value)).
fn agrees(key: &TenantKeyspace, value: &TenantValue) -> std::result::Result<(), String> {
    use keyplane_core::keyspace::Key;
    match (key, value) {
        (TenantKeyspace::Meta(k), TenantValue::Meta(v)) => k.check_value(v),
        (TenantKeyspace::Database(k), TenantValue::Database(v)) => k.check_value(v),
        (TenantKeyspace::Ftp(k), TenantValue::Ftp(v)) => k.check_value(v),
        (TenantKeyspace::Storage(k), TenantValue::Storage(v)) => k.check_value(v),
        _ => Ok(()),
    }
}

/// `bytes` (a JSON object) with `fields` added where missing, under `new`; an error when a
/// field is present with another value.
fn with_fields(
    new: &str,
    bytes: &[u8],
    fields: &[(&str, Json)],
) -> std::result::Result<Item, String> {
    let mut object: serde_json::Map<String, Json> =
        serde_json::from_slice(bytes).map_err(|e| format!("not a JSON object: {e}"))?;
    let mut added = false;
    for (field, value) in fields {
        match object.get(*field) {
            Some(present) if present == value => {}
            Some(present) => {
                return Err(format!("its `{field}` is {present}, its key says {value}"));
            }
            None => {
                object.insert((*field).to_owned(), value.clone());
                added = true;
            }
        }
    }
    let bytes = if added {
        serde_json::to_vec(&object).map_err(|e| e.to_string())?
    } else {
        bytes.to_vec()
    };
    checked(new, bytes)
}

/// The old FTP array of tenant `id`, one new key per user.
fn ftp_users(id: &str, bytes: &[u8]) -> Mapping {
    let users = match serde_json::from_slice::<Json>(bytes) {
        Ok(Json::Array(users)) => users,
        Ok(Json::Object(mut object)) => match object.remove("ftpConfigs") {
            Some(Json::Array(users)) => users,
            _ => return Mapping::Unmappable("an FTP object without an `ftpConfigs` array".into()),
        },
        _ => return Mapping::Unmappable("the FTP value is not a JSON array".into()),
    };
    let mut items: Vec<Item> = Vec::with_capacity(users.len());
    for user in users {
        let Some(name) = user
            .get("username")
            .and_then(Json::as_str)
            .map(str::to_owned)
        else {
            return Mapping::Unmappable("an FTP user without a `username`".into());
        };
        let new = format!("jxt/tenants/{id}/ftp/{name}");
        if items.iter().any(|i| i.key == new.as_bytes()) {
            return Mapping::Unmappable(format!("the FTP user `{name}` appears twice"));
        }
        let element = match serde_json::to_vec(&user) {
            Ok(element) => element,
            Err(e) => return Mapping::Unmappable(e.to_string()),
        };
        match with_fields(&new, &element, &[("tenantId", tenant_id(id))]) {
            Ok(item) => items.push(item),
            Err(reason) => return Mapping::Unmappable(format!("FTP user `{name}`: {reason}")),
        }
    }
    Mapping::To(items)
}
