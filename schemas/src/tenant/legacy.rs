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

use super::keys::{
    CodeIndexKey, DatabaseConfigKey, DomainAliasesKey, FtpConfigKey, FtpUserIndexKey,
    HealthSentinelKey, HostIndexKey, InternalDomainKey, NameIndexKey, PlatformConfigKey,
    PrimaryDomainKey, ResolverConfigKey, StorageConfigKey, StorageDirectoryConfigKey,
    TenantKeyspace, TenantMetaKey,
};
use super::legacy_keys::{
    LegacyCodeIndexKey, LegacyDatabaseKey, LegacyDomainAliasesKey, LegacyFtpArrayKey,
    LegacyFtpUserIndexKey, LegacyHealthSentinelKey, LegacyHostIndexKey, LegacyInternalDomainKey,
    LegacyMetaKey, LegacyNameIndexKey, LegacyPlatformConfigKey, LegacyPrimaryDomainKey,
    LegacyResolverConfigKey, LegacyStorageDirectoryConfigKey, LegacyStorageKey,
    TenantLegacyKeyspace,
};
use super::provider::{TenantValue, decode};
use super::segments::FtpUsername;
use keyplane_core::keyspace::{Key, Keyspace};
use keyplane_core::migrate::{Item, Mapping, Migration, MigrationRow, Value};
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

/// The value change of the rows that keep their bytes.
const SAME: &str = "bytes kept";

#[keyplane_core::raw::async_trait]
impl Migration for TenantLegacy {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn sources(&self) -> Vec<Vec<u8>> {
        vec![OLD.as_bytes().to_vec()]
    }

    fn rows(&self) -> Vec<MigrationRow> {
        vec![
            MigrationRow::of::<LegacyDatabaseKey, DatabaseConfigKey>(
                "bytes kept; `tenantId` and `serviceCode` added from the key when missing",
            ),
            MigrationRow::of::<LegacyMetaKey, TenantMetaKey>(SAME),
            MigrationRow::of::<LegacyPrimaryDomainKey, PrimaryDomainKey>(SAME),
            MigrationRow::of::<LegacyDomainAliasesKey, DomainAliasesKey>(SAME),
            MigrationRow::of::<LegacyInternalDomainKey, InternalDomainKey>(SAME),
            MigrationRow::of::<LegacyFtpArrayKey, FtpConfigKey>(
                "the array split, one key per user; `tenantId` added from the key when missing",
            ),
            MigrationRow::of::<LegacyStorageKey, StorageConfigKey>(SAME),
            MigrationRow::of::<LegacyCodeIndexKey, CodeIndexKey>(SAME),
            MigrationRow::of::<LegacyNameIndexKey, NameIndexKey>(SAME),
            MigrationRow::of::<LegacyFtpUserIndexKey, FtpUserIndexKey>(SAME),
            MigrationRow::of::<LegacyHostIndexKey, HostIndexKey>(SAME),
            MigrationRow::of::<LegacyResolverConfigKey, ResolverConfigKey>(SAME),
            MigrationRow::of::<LegacyStorageDirectoryConfigKey, StorageDirectoryConfigKey>(SAME),
            MigrationRow::of::<LegacyHealthSentinelKey, HealthSentinelKey>(SAME),
            MigrationRow::of::<LegacyPlatformConfigKey, PlatformConfigKey>(SAME),
        ]
    }

    async fn map(&self, old: &Item, _: &dyn Store) -> Result<Mapping> {
        Ok(map(old))
    }
}

fn map(old: &Item) -> Mapping {
    let Some(raw) = std::str::from_utf8(&old.key)
        .ok()
        .filter(|k| k.starts_with(OLD))
    else {
        return Mapping::NotOld;
    };
    let Value::Plain(bytes) = &old.value else {
        return Mapping::Unmappable("the old layout holds plain keys only".into());
    };
    let key = match TenantLegacyKeyspace::parse(raw) {
        Ok(key) => key,
        Err(e) => {
            return Mapping::Unmappable(format!(
                "no row of the document's §3 covers this key: {e}"
            ));
        }
    };
    use TenantLegacyKeyspace as Old;
    match key {
        Old::Database(k) => {
            let new = DatabaseConfigKey {
                id: k.id,
                service: k.code.clone(),
            };
            let fields = [
                ("tenantId", Json::from(k.id)),
                ("serviceCode", Json::from(k.code.as_str())),
            ];
            with_fields(&new.encode(), bytes, &fields).map_or_else(Mapping::Unmappable, one)
        }
        Old::FtpArray(k) => ftp_users(k.id, bytes),
        Old::Meta(k) => same(&TenantMetaKey { id: k.id }, bytes),
        Old::PrimaryDomain(k) => same(&PrimaryDomainKey { id: k.id }, bytes),
        Old::DomainAliases(k) => same(&DomainAliasesKey { id: k.id }, bytes),
        Old::InternalDomain(k) => same(&InternalDomainKey { id: k.id }, bytes),
        Old::Storage(k) => same(&StorageConfigKey { id: k.id }, bytes),
        Old::CodeIndex(k) => same(&CodeIndexKey { code: k.code }, bytes),
        Old::NameIndex(k) => same(&NameIndexKey { name: k.name }, bytes),
        Old::FtpUserIndex(k) => same(
            &FtpUserIndexKey {
                username: k.username,
            },
            bytes,
        ),
        Old::HostIndex(k) => same(&HostIndexKey { host: k.host }, bytes),
        Old::Resolver(_) => same(&ResolverConfigKey {}, bytes),
        Old::StorageDirectory(_) => same(&StorageDirectoryConfigKey {}, bytes),
        Old::HealthSentinel(_) => same(&HealthSentinelKey {}, bytes),
        Old::PlatformConfig(k) => same(&PlatformConfigKey { key: k.key }, bytes),
    }
}

fn one(item: Item) -> Mapping {
    Mapping::To(vec![item])
}

/// `bytes` unchanged under `new`, once `bytes` decode there and agree with it.
fn same<K: Key>(new: &K, bytes: &[u8]) -> Mapping {
    checked(&new.encode(), bytes.to_vec()).map_or_else(Mapping::Unmappable, one)
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
fn ftp_users(id: u64, bytes: &[u8]) -> Mapping {
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
        let username = match FtpUsername::new(name.clone()) {
            Ok(username) => username,
            Err(e) => {
                return Mapping::Unmappable(format!(
                    "the FTP username `{name}` is not a username of the new layout: {e}"
                ));
            }
        };
        let new = FtpConfigKey { id, username }.encode();
        if items.iter().any(|i| i.key == new.as_bytes()) {
            return Mapping::Unmappable(format!("the FTP user `{name}` appears twice"));
        }
        let element = match serde_json::to_vec(&user) {
            Ok(element) => element,
            Err(e) => return Mapping::Unmappable(e.to_string()),
        };
        match with_fields(&new, &element, &[("tenantId", Json::from(id))]) {
            Ok(item) => items.push(item),
            Err(reason) => return Mapping::Unmappable(format!("FTP user `{name}`: {reason}")),
        }
    }
    Mapping::To(items)
}
