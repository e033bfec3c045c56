//! The tables of a store's database file and the `kv` table as the emulation's ordered
//! state.
//!
//! - `kv`: every live key → its encoded entry; the members of collections under the
//!   reserved layout (`\0`...) → their raw values. One B-tree, so a range is one ordered scan.
//! - `log`: revision → the encoded events of that revision (for watches, reads at a past
//!   revision and the consistency check); records below the retained history are removed.
//! - `leases`: lease id → its TTL and wall-clock deadline.
//! - `lease_keys`: lease id (8 bytes big-endian) and key → nothing: the keys attached to each
//!   lease, listed by a scan of its id.
//! - `meta`: the layout version, the revision, the compaction point and the last lease id.
//!
//! The encodings of the values are in [`codec`](super::codec).

use crate::error::{RedbResult, map_error};
use keyplane_contract::Result;
use keyplane_contract::raw::emulation::OrderedState;
use redb::{ReadableTable, TableDefinition};

/// Live keys and collection members.
pub(crate) const KV: TableDefinition<'_, &[u8], &[u8]> = TableDefinition::new("kv");
/// The event log, by revision.
pub(crate) const LOG: TableDefinition<'_, i64, &[u8]> = TableDefinition::new("log");
/// Lease records, by id.
pub(crate) const LEASES: TableDefinition<'_, i64, &[u8]> = TableDefinition::new("leases");
/// The keys attached to each lease.
pub(crate) const LEASE_KEYS: TableDefinition<'_, &[u8], ()> = TableDefinition::new("lease_keys");
/// The store's counters.
pub(crate) const META: TableDefinition<'_, &str, i64> = TableDefinition::new("meta");

/// The tables of one write transaction, opened once for all its writes (redb lets a table
/// be open once per transaction at a time).
pub(crate) struct Tables<'t> {
    pub(crate) kv: redb::Table<'t, &'static [u8], &'static [u8]>,
    pub(crate) log: redb::Table<'t, i64, &'static [u8]>,
    pub(crate) leases: redb::Table<'t, i64, &'static [u8]>,
    pub(crate) lease_keys: redb::Table<'t, &'static [u8], ()>,
    pub(crate) meta: redb::Table<'t, &'static str, i64>,
}

impl<'t> Tables<'t> {
    /// Opens (creating when missing) every table in `txn`.
    pub(crate) fn open(txn: &'t redb::WriteTransaction) -> Result<Self> {
        Ok(Tables {
            kv: txn.open_table(KV).redb("open_table")?,
            log: txn.open_table(LOG).redb("open_table")?,
            leases: txn.open_table(LEASES).redb("open_table")?,
            lease_keys: txn.open_table(LEASE_KEYS).redb("open_table")?,
            meta: txn.open_table(META).redb("open_table")?,
        })
    }
}

/// A meta counter, or `None` when it was never written.
pub(crate) fn meta_i64(
    meta: &impl ReadableTable<&'static str, i64>,
    key: &str,
) -> Result<Option<i64>> {
    Ok(meta
        .get(key)
        .map_err(|e| map_error("read_metadata", e))?
        .map(|v| v.value()))
}

/// The keys attached to lease `id`.
pub(crate) fn attached_keys(
    lease_keys: &impl ReadableTable<&'static [u8], ()>,
    id: i64,
) -> Result<Vec<Vec<u8>>> {
    let (lo, hi) = (id.to_be_bytes(), (id + 1).to_be_bytes());
    let mut keys = Vec::new();
    for kv in lease_keys
        .range::<&[u8]>(&lo[..]..&hi[..])
        .redb("lease_keys")?
    {
        let (k, _) = kv.redb("lease_keys")?;
        keys.push(k.value()[8..].to_vec());
    }
    Ok(keys)
}

/// A `kv` table (of a read or a write transaction) as the emulation's [`OrderedState`].
pub(crate) struct KvState<'a, T>(pub(crate) &'a T);

impl<T: ReadableTable<&'static [u8], &'static [u8]>> KvState<'_, T> {
    /// How many keys lie in `[start, end)` (to the table's end without `end`), counted
    /// without reading them out.
    pub(crate) fn count_span(&self, start: &[u8], end: Option<&[u8]>) -> Result<u64> {
        let scan = match end {
            Some(end) => self.0.range::<&[u8]>(start..end),
            None => self.0.range::<&[u8]>(start..),
        }
        .redb("range")?;
        let mut n = 0;
        for kv in scan {
            kv.redb("range")?;
            n += 1;
        }
        Ok(n)
    }
}

impl<T: ReadableTable<&'static [u8], &'static [u8]>> OrderedState for KvState<'_, T> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self
            .0
            .get(key)
            .map_err(|e| map_error("read", e))?
            .map(|v| v.value().to_vec()))
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: Option<usize>,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        if start >= end {
            return Ok(Vec::new());
        }
        self.0
            .range::<&[u8]>(start..end)
            .redb("read")?
            .take(limit.unwrap_or(usize::MAX))
            .map(|kv| {
                kv.map(|(k, v)| (k.value().to_vec(), v.value().to_vec()))
                    .redb("read")
            })
            .collect()
    }

    fn last(&self, start: &[u8], end: &[u8]) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        if start >= end {
            return Ok(None);
        }
        self.0
            .range::<&[u8]>(start..end)
            .redb("read")?
            .next_back()
            .transpose()
            .map(|kv| kv.map(|(k, v)| (k.value().to_vec(), v.value().to_vec())))
            .redb("read")
    }

    fn count(&self, start: &[u8], end: &[u8]) -> Result<u64> {
        if start >= end {
            return Ok(0);
        }
        self.count_span(start, Some(end))
    }
}
