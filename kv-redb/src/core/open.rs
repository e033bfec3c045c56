//! Opening a store's database file: redb's own open (which locks the file and recovers it
//! after a crash), the tables, the layout version, and the writer state recovered from the
//! tables.

use super::codec::{
    COMPACT_KEY, FORMAT_KEY, FORMAT_VERSION, LEASE_SEQ_KEY, LeaseRecord, REVISION_KEY, corrupted,
};
use super::state::{LeaseIndex, Writer};
use super::tables::{KV, LEASES, LOG, META, Tables, meta_i64};
use crate::config::RedbConfig;
use crate::error::{RedbResult, map_error};
use keyplane_contract::{Error, ErrorKind, Result};
use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata};

/// Opens (or creates) the database file of `config`, and the directories above it that are
/// missing, creating the tables and checking the layout version.
pub(crate) fn open_db(config: &RedbConfig) -> Result<redb::Database> {
    let path = config.path.display().to_string();
    if let Some(parent) = config.path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| {
            Error::new(
                ErrorKind::Backend,
                "cannot create the directory of the redb database file",
            )
            .with_source(e)
            .with_context("path", &path)
        })?;
    }
    let db = redb::Builder::new()
        .set_cache_size(usize::try_from(config.cache_size).unwrap_or(usize::MAX))
        .create(&config.path)
        .map_err(|e| map_error("open", e).with_context("path", &path))?;
    let txn = db.begin_write().redb("open")?;
    {
        let mut t = Tables::open(&txn)?;
        match meta_i64(&t.meta, FORMAT_KEY)? {
            Some(FORMAT_VERSION) => {}
            Some(version) => {
                return Err(Error::new(
                    ErrorKind::Corrupted,
                    format!(
                        "the redb database was written with layout version {version}; this \
                         build reads layout version {FORMAT_VERSION}"
                    ),
                )
                .with_context("path", &path));
            }
            None => {
                let empty = t.kv.is_empty().redb("open")? && t.log.is_empty().redb("open")?;
                if !empty {
                    return Err(corrupted(
                        "the database holds data but no layout version; it was not written \
                         by this store",
                    )
                    .with_context("path", &path));
                }
                t.meta.insert(FORMAT_KEY, FORMAT_VERSION).redb("open")?;
            }
        }
    }
    txn.commit().redb("open")?;
    Ok(db)
}

/// The writer state as the tables hold it.
pub(crate) fn recover(db: &redb::Database) -> Result<Writer> {
    let txn = db.begin_read().redb("open")?;
    let meta = txn.open_table(META).redb("open")?;
    let log = txn.open_table(LOG).redb("open")?;
    let leases_table = txn.open_table(LEASES).redb("open")?;
    // Opened so that a file without it fails here rather than on the first read.
    txn.open_table(KV).redb("open")?;
    let revision = meta_i64(&meta, REVISION_KEY)?.unwrap_or(0);
    let log_floor = match log.first().redb("open")? {
        Some((first, _)) => first.value(),
        None => revision + 1,
    };
    let compact_floor = meta_i64(&meta, COMPACT_KEY)?
        .unwrap_or(1)
        .max(log_floor.min(revision))
        .max(1);
    let mut leases = LeaseIndex::default();
    for kv in leases_table.iter().redb("open")? {
        let (id, record) = kv.redb("open")?;
        leases.insert(id.value(), LeaseRecord::decode(record.value())?);
    }
    Ok(Writer {
        leases,
        lease_seq: meta_i64(&meta, LEASE_SEQ_KEY)?.unwrap_or(0),
        revision,
        compact_floor,
        log_floor,
    })
}
