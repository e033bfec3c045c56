//! Reading everything under `jxt/tenants/{id}/` at once.

use super::keys::{TenantDir, TenantKeyspace};
use super::model::Domains;
use super::segments::FtpUsername;
use super::values::{DatabaseConfig, FtpConfig, StorageConfig, TenantMeta};
use keyplane_core::keyspace::{Codec, Json, Keyspace, Prefix, Text};
use keyplane_core::raw::escape_bytes;
use keyplane_core::{Entry, Error, RangeOptions, Result};

/// Keys read per page of a tenant's directory.
const PAGE: usize = 256;

/// Everything found under one tenant's directory. Keys that are not keys of the layout and
/// values that do not decode are kept in `bad`, never dropped.
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    pub(crate) meta: Option<(TenantMeta, i64)>,
    pub(crate) domains: Domains,
    pub(crate) databases: Vec<DatabaseConfig>,
    pub(crate) ftp_usernames: Vec<FtpUsername>,
    pub(crate) ftp_users: Vec<FtpConfig>,
    pub(crate) storage: Option<StorageConfig>,
    /// How many keys the directory holds.
    pub(crate) keys: usize,
    /// The revision every page was read at.
    pub(crate) revision: i64,
    pub(crate) bad: Vec<Error>,
}

fn decode<C: Codec + Default>(entry: &Entry) -> Result<C::Value> {
    C::default()
        .decode(&entry.value)
        .map_err(|e| e.with_context("key", escape_bytes(&entry.key)))
}

impl Snapshot {
    /// Reads tenant `id`'s directory, page by page.
    pub(crate) async fn read(store: &dyn keyplane_core::Store, id: u64) -> Result<Self> {
        let prefix = TenantDir { id }.encode();
        let mut snapshot = Snapshot::default();
        let mut opts = RangeOptions::prefix(prefix.as_bytes()).limit(PAGE);
        loop {
            let page = store.range(opts.clone()).await?;
            snapshot.revision = page.revision;
            for entry in &page.entries {
                snapshot.keys += 1;
                if let Err(e) = snapshot.add(entry) {
                    snapshot.bad.push(e);
                }
            }
            match page.next {
                Some(next) => opts = opts.after(next),
                None => return Ok(snapshot),
            }
        }
    }

    fn add(&mut self, entry: &Entry) -> Result<()> {
        let raw = std::str::from_utf8(&entry.key).map_err(|e| {
            Error::invalid_key("the key is not UTF-8")
                .with_context("key", escape_bytes(&entry.key))
                .with_source(e)
        })?;
        match TenantKeyspace::parse(raw)? {
            TenantKeyspace::Meta(_) => {
                self.meta = Some((decode::<Json<TenantMeta>>(entry)?, entry.mod_revision));
            }
            TenantKeyspace::PrimaryDomain(_) => {
                self.domains.primary = Some(decode::<Text>(entry)?);
            }
            TenantKeyspace::DomainAliases(_) => {
                self.domains.aliases = decode::<Json<Vec<String>>>(entry)?;
            }
            TenantKeyspace::InternalDomain(_) => {
                self.domains.internal = Some(decode::<Text>(entry)?);
            }
            TenantKeyspace::Database(_) => {
                self.databases.push(decode::<Json<DatabaseConfig>>(entry)?);
            }
            TenantKeyspace::Ftp(key) => {
                self.ftp_usernames.push(key.username);
                self.ftp_users.push(decode::<Json<FtpConfig>>(entry)?);
            }
            TenantKeyspace::Storage(_) => {
                self.storage = Some(decode::<Json<StorageConfig>>(entry)?);
            }
            other => {
                return Err(Error::invalid_key(format!(
                    "`{}` keys do not belong in a tenant's directory",
                    other.template_source()
                ))
                .with_context("key", raw));
            }
        }
        Ok(())
    }
}
