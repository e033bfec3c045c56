//! [`TenantProvider`]: the reading side of the tenant document (§7.4–§7.8). Every key under
//! `jxt/` lives in a [`Mirror`] kept current by a watch; lookups read one immutable view
//! ([`TenantView`]) without locks and without a round trip, and a tenant published in one
//! transaction appears in it all at once.

use super::keys::{
    CodeIndexKey, DatabaseConfigKey, FtpUserIndexKey, HostIndexKey, JsonDocument, NameIndexKey,
    TenantDir, TenantKeyspace,
};
use super::model::{Domains, HostBinding, Tenant};
use super::segments::{FtpUsername, HostName, ServiceCode, TenantCode, TenantName};
use super::values::{
    CodeIndex, DatabaseConfig, FtpConfig, FtpUserIndex, HostIndex, NameIndex, StorageConfig,
    TenantMeta,
};
use crate::ReaderOptions;
use keyplane_core::Result;
use keyplane_core::keyspace::{Key, Prefix, TypedStore, Versioned};
use keyplane_core::mirror::{Mirror, MirrorHealth, MirrorSnapshot};
use std::sync::Arc;
use std::time::Duration;

/// The decoded value of a key of the tenant keyspace, by template.
#[derive(Debug, Clone, PartialEq)]
pub enum TenantValue {
    /// `meta`.
    Meta(TenantMeta),
    /// `domain/primary`.
    PrimaryDomain(String),
    /// `domain/aliases`.
    DomainAliases(Vec<String>),
    /// `domain/internal`.
    InternalDomain(String),
    /// `database/{serviceCode}`.
    Database(DatabaseConfig),
    /// `ftp/{username}`.
    Ftp(FtpConfig),
    /// `storage`.
    Storage(StorageConfig),
    /// `_index/by-code/{code}`.
    CodeIndex(CodeIndex),
    /// `_index/by-name/{name}`.
    NameIndex(NameIndex),
    /// `_index/ftp-user/{username}`.
    FtpUserIndex(FtpUserIndex),
    /// `_index/host/{host}`.
    HostIndex(HostIndex),
    /// `jxt/common/...` and `jxt/platform/configs/{key}`: free-form JSON documents.
    Document(JsonDocument),
    /// `jxt/_health/sentinel`.
    Sentinel(String),
}

/// Decodes a value of the tenant keyspace with its template's codec.
pub(super) fn decode(key: &TenantKeyspace, bytes: &[u8]) -> Result<TenantValue> {
    use super::keys::*;
    use crate::decode_as as with;
    Ok(match key {
        TenantKeyspace::Meta(_) => TenantValue::Meta(with::<TenantMetaKey>(bytes)?),
        TenantKeyspace::PrimaryDomain(_) => {
            TenantValue::PrimaryDomain(with::<PrimaryDomainKey>(bytes)?)
        }
        TenantKeyspace::DomainAliases(_) => {
            TenantValue::DomainAliases(with::<DomainAliasesKey>(bytes)?)
        }
        TenantKeyspace::InternalDomain(_) => {
            TenantValue::InternalDomain(with::<InternalDomainKey>(bytes)?)
        }
        TenantKeyspace::Database(_) => TenantValue::Database(with::<DatabaseConfigKey>(bytes)?),
        TenantKeyspace::Ftp(_) => TenantValue::Ftp(with::<FtpConfigKey>(bytes)?),
        TenantKeyspace::Storage(_) => TenantValue::Storage(with::<StorageConfigKey>(bytes)?),
        TenantKeyspace::CodeIndex(_) => TenantValue::CodeIndex(with::<CodeIndexKey>(bytes)?),
        TenantKeyspace::NameIndex(_) => TenantValue::NameIndex(with::<NameIndexKey>(bytes)?),
        TenantKeyspace::FtpUserIndex(_) => {
            TenantValue::FtpUserIndex(with::<FtpUserIndexKey>(bytes)?)
        }
        TenantKeyspace::HostIndex(_) => TenantValue::HostIndex(with::<HostIndexKey>(bytes)?),
        TenantKeyspace::Resolver(_) => TenantValue::Document(with::<ResolverConfigKey>(bytes)?),
        TenantKeyspace::StorageDirectory(_) => {
            TenantValue::Document(with::<StorageDirectoryConfigKey>(bytes)?)
        }
        TenantKeyspace::PlatformConfig(_) => {
            TenantValue::Document(with::<PlatformConfigKey>(bytes)?)
        }
        TenantKeyspace::HealthSentinel(_) => {
            TenantValue::Sentinel(with::<HealthSentinelKey>(bytes)?)
        }
    })
}

/// The tenant document's Provider: every key under `jxt/` mirrored, so that lookups cost no
/// round trip and take no lock. Cheap to clone.
///
/// ```
/// use keyplane_core::keyspace::TypedStore;
/// use keyplane_schemas::tenant::{example_tenant, publish_tenant, ServiceCode, TenantProvider};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
/// let provider = TenantProvider::start(&typed).await?;
///
/// let revision = publish_tenant(&typed, &example_tenant()).await?;
/// let view = provider.wait_for(revision).await?; // read your own write
/// let query = ServiceCode::new("evidence-query").unwrap();
/// assert_eq!(view.service_database_config(1, &query).unwrap().port, 3306);
/// let security = ServiceCode::new("security-management").unwrap();
/// assert_eq!(view.service_database_config(1, &security), None); // §7.4: (nil, false)
/// assert!(view.is_ftp_username_taken("default_ftp")); // §7.5
/// assert_eq!(view.tenant(1).unwrap().meta.code, "default");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct TenantProvider {
    mirror: Mirror<TenantKeyspace, TenantValue>,
}

impl TenantProvider {
    /// Mirrors `jxt/` through `store`, with a full resync every hour (§7.7's periodic
    /// refresh; the watch resumes from its revision and relists after a compaction).
    ///
    /// # Errors
    /// The first listing's and the watch's errors.
    pub async fn start(store: &TypedStore) -> Result<Self> {
        TenantProvider::start_with(store, ReaderOptions::default()).await
    }

    /// [`start`](Self::start) with another resync period.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub async fn start_with_resync(store: &TypedStore, resync: Duration) -> Result<Self> {
        TenantProvider::start_with(store, ReaderOptions::default().resync_every(resync)).await
    }

    /// [`start`](Self::start) with other options: the resync period (an hour unless set)
    /// and the listings' page size.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub async fn start_with(store: &TypedStore, options: ReaderOptions) -> Result<Self> {
        let builder = store
            .mirror_keyspace::<TenantKeyspace>()
            .decode_with(decode);
        let mirror = options
            .apply(builder, Duration::from_secs(3600))
            .start()
            .await?;
        Ok(TenantProvider { mirror })
    }

    /// The current view: every lookup on it sees the same revision.
    pub fn view(&self) -> TenantView {
        TenantView(self.mirror.snapshot())
    }

    /// The view once it reflects `revision` (the revision a write returned).
    ///
    /// # Errors
    /// `Unavailable` when the mirror has stopped.
    pub async fn wait_for(&self, revision: i64) -> Result<TenantView> {
        Ok(TenantView(self.mirror.wait_for(revision).await?))
    }

    /// The mirror's health: revision, lag, relists, resyncs, unreadable keys.
    pub fn health(&self) -> MirrorHealth {
        self.mirror.health()
    }

    /// The mirror underneath, for subscriptions.
    pub fn mirror(&self) -> &Mirror<TenantKeyspace, TenantValue> {
        &self.mirror
    }
}

/// One consistent view of the tenant configuration: what the store held at
/// [`revision`](Self::revision). Lookups are map reads; cheap to clone and to keep.
#[derive(Debug, Clone)]
pub struct TenantView(Arc<MirrorSnapshot<TenantKeyspace, TenantValue>>);

impl TenantView {
    /// The store revision the view reflects.
    pub fn revision(&self) -> i64 {
        self.0.revision()
    }

    fn value<K: Key>(&self, key: &K) -> Option<&TenantValue> {
        self.0
            .get_raw(key.encode().as_bytes())
            .map(|(_, v)| &v.value)
    }

    /// The tenant with code `code` (`_index/by-code`).
    pub fn tenant_by_code(&self, code: &TenantCode) -> Option<CodeIndex> {
        match self.value(&CodeIndexKey { code: code.clone() })? {
            TenantValue::CodeIndex(index) => Some(index.clone()),
            _ => None,
        }
    }

    /// The tenant named `name` (`_index/by-name`); its `primaryDomain` is `""` when the tenant
    /// has none (§7.6).
    pub fn tenant_by_name(&self, name: &TenantName) -> Option<NameIndex> {
        match self.value(&NameIndexKey { name: name.clone() })? {
            TenantValue::NameIndex(index) => Some(index.clone()),
            _ => None,
        }
    }

    /// The tenant serving `host` (`_index/host`).
    pub fn tenant_by_host(&self, host: &HostName) -> Option<HostIndex> {
        match self.value(&HostIndexKey { host: host.clone() })? {
            TenantValue::HostIndex(index) => Some(index.clone()),
            _ => None,
        }
    }

    /// The tenant owning the FTP username (`_index/ftp-user`).
    pub fn tenant_by_ftp_user(&self, username: &FtpUsername) -> Option<FtpUserIndex> {
        let key = FtpUserIndexKey {
            username: username.clone(),
        };
        match self.value(&key)? {
            TenantValue::FtpUserIndex(index) => Some(index.clone()),
            _ => None,
        }
    }

    /// Whether any tenant uses the FTP username (§7.5); a username that cannot be one (bad
    /// characters) is not taken.
    pub fn is_ftp_username_taken(&self, username: &str) -> bool {
        FtpUsername::new(username).is_ok_and(|u| self.tenant_by_ftp_user(&u).is_some())
    }

    /// The database configuration of `service` of tenant `tenant_id`; `None` when the service
    /// has none, whether or not the tenant has others (§7.4).
    pub fn service_database_config(
        &self,
        tenant_id: u64,
        service: &ServiceCode,
    ) -> Option<DatabaseConfig> {
        let key = DatabaseConfigKey {
            id: tenant_id,
            service: service.clone(),
        };
        match self.value(&key)? {
            TenantValue::Database(config) => Some(config.clone()),
            _ => None,
        }
    }

    /// The tenant's primary domain, `""` when it has none (§7.6).
    pub fn primary_domain(&self, tenant_id: u64) -> String {
        self.domains(tenant_id).primary.unwrap_or_default()
    }

    /// The tenant's domains (none configured: the default, empty).
    pub fn domains(&self, tenant_id: u64) -> Domains {
        let mut domains = Domains::default();
        for (_, value) in self.dir(tenant_id) {
            add_domain(&mut domains, &value.value);
        }
        domains
    }

    fn dir(
        &self,
        tenant_id: u64,
    ) -> impl Iterator<Item = (&TenantKeyspace, &Versioned<TenantValue>)> + use<'_> {
        let prefix = TenantDir { id: tenant_id }.encode().into_bytes();
        self.0.iter_prefix(&prefix)
    }

    /// The ids of every tenant with a meta, in key order.
    pub fn tenant_ids(&self) -> Vec<u64> {
        let prefix = b"jxt/tenants/";
        self.0
            .iter_prefix(prefix)
            .filter_map(|(key, _)| match key {
                TenantKeyspace::Meta(meta) => Some(meta.id),
                _ => None,
            })
            .collect()
    }

    /// Tenant `id` whole, as [`load_tenant`](super::load_tenant) reads it from the store:
    /// databases by service code, FTP users by username, hosts in domain order. `None` when
    /// it has no meta.
    pub fn tenant(&self, id: u64) -> Option<Tenant> {
        let mut meta = None;
        let (mut databases, mut ftp_users, mut storage) = (Vec::new(), Vec::new(), None);
        let mut domains = Domains::default();
        for (_, value) in self.dir(id) {
            match &value.value {
                TenantValue::Meta(m) => meta = Some(m.clone()),
                TenantValue::Database(d) => databases.push(d.clone()),
                TenantValue::Ftp(f) => ftp_users.push(f.clone()),
                TenantValue::Storage(s) => storage = Some(s.clone()),
                other => add_domain(&mut domains, other),
            }
        }
        let hosts = domains
            .all()
            .filter_map(|domain| {
                let host = HostName::new(domain).ok()?;
                let index = self.tenant_by_host(&host)?;
                (index.tenant_id == id).then(|| HostBinding {
                    host: domain.to_owned(),
                    host_type: index.host_type,
                })
            })
            .collect();
        Some(Tenant {
            meta: meta?,
            domains,
            databases,
            ftp_users,
            storage,
            hosts,
        })
    }

    /// How many keys under `jxt/` the view could not read (not a key of the layout, or a
    /// value that does not decode).
    pub fn unreadable(&self) -> usize {
        self.0.unreadable().count()
    }
}

/// Sets the domain `value` holds, if it is one.
fn add_domain(domains: &mut Domains, value: &TenantValue) {
    match value {
        TenantValue::PrimaryDomain(d) => domains.primary = Some(d.clone()),
        TenantValue::DomainAliases(a) => domains.aliases = a.clone(),
        TenantValue::InternalDomain(d) => domains.internal = Some(d.clone()),
        _ => {}
    }
}
