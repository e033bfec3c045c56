//! The consistency check: entries, log, leases and counters agree with each other, in one
//! snapshot.

use crate::core::Shared;
use crate::core::codec::{
    LEASE_SEQ_KEY, LeaseRecord, REVISION_KEY, corrupted, decode_entry, decode_events, read_be,
};
use crate::core::tables::{KV, LEASE_KEYS, LEASES, LOG, META, meta_i64};
use crate::error::RedbResult;
use keyplane_contract::raw::escape_bytes;
use keyplane_contract::raw::layout;
use keyplane_contract::{Event, Result};
use redb::ReadableTable;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;

/// Checks every invariant of the layout; the first violation is a `Corrupted` error.
pub(crate) fn check(shared: &Shared) -> Result<()> {
    let txn = shared.read("check_consistency")?;
    let meta = txn.open_table(META).redb("check_consistency")?;
    let revision = meta_i64(&meta, REVISION_KEY)?.unwrap_or(0);
    let floor = shared.compact_floor.load(Ordering::Acquire);
    let oldest = crate::core::oldest(revision, floor, shared.config.history_retention);

    // The log: contiguous from its first record to the current revision.
    let mut log: BTreeMap<i64, Vec<Event>> = BTreeMap::new();
    let mut expected = None;
    for kv in txn
        .open_table(LOG)
        .redb("check_consistency")?
        .iter()
        .redb("check_consistency")?
    {
        let (rev, value) = kv.redb("check_consistency")?;
        let rev = rev.value();
        if let Some(expected) = expected
            && expected != rev
        {
            return Err(corrupted(format!(
                "the event log jumps from revision {} to {rev}",
                expected - 1
            )));
        }
        expected = Some(rev + 1);
        if rev >= oldest {
            log.insert(rev, decode_events(rev, value.value())?.events);
        }
    }
    match log.last_key_value() {
        Some((&last, _)) if last != revision => {
            return Err(corrupted(format!(
                "the log ends at {last}, the store is at {revision}"
            )));
        }
        None if revision > 0 && oldest <= revision => {
            return Err(corrupted(format!("no log record of revision {revision}")));
        }
        _ => {}
    }
    if log
        .first_key_value()
        .is_some_and(|(&first, _)| first != oldest)
    {
        return Err(corrupted(format!(
            "the log does not start at the oldest retained revision {oldest}"
        )));
    }

    // Leases: ids up to the last granted; attachments point to live leases.
    let mut leases = BTreeSet::new();
    for kv in txn
        .open_table(LEASES)
        .redb("check_consistency")?
        .iter()
        .redb("check_consistency")?
    {
        let (id, value) = kv.redb("check_consistency")?;
        LeaseRecord::decode(value.value())?;
        leases.insert(id.value());
    }
    let lease_seq = meta_i64(&meta, LEASE_SEQ_KEY)?.unwrap_or(0);
    if leases.last().is_some_and(|&max| max > lease_seq) {
        return Err(corrupted("a lease id above the last id granted"));
    }
    let mut attachments = BTreeSet::new();
    for kv in txn
        .open_table(LEASE_KEYS)
        .redb("check_consistency")?
        .iter()
        .redb("check_consistency")?
    {
        let (key, ()) = kv
            .map(|(k, v)| (k.value().to_vec(), v.value()))
            .redb("check_consistency")?;
        if key.len() < 8 {
            return Err(corrupted("a lease attachment shorter than its lease id"));
        }
        let id = read_be(&key[..8])?;
        if !leases.contains(&id) {
            return Err(corrupted(format!(
                "keys attached to a missing lease {id:x}"
            )));
        }
        attachments.insert((id, key[8..].to_vec()));
    }

    // Entries: metadata within the revision; leases attached; the last write in the log.
    for kv in txn
        .open_table(KV)
        .redb("check_consistency")?
        .iter()
        .redb("check_consistency")?
    {
        let (key, value) = kv.redb("check_consistency")?;
        let key = key.value();
        if layout::is_reserved(key) {
            continue;
        }
        let entry = decode_entry(key, value.value(), false)?;
        let ctx = || escape_bytes(key);
        if entry.version < 1
            || entry.create_revision < 1
            || entry.create_revision > entry.mod_revision
            || entry.mod_revision > revision
        {
            return Err(corrupted(format!("bad metadata {entry:?}")).with_context("key", ctx()));
        }
        if let Some(id) = entry.lease
            && !attachments.remove(&(id.0, key.to_vec()))
        {
            return Err(corrupted(format!("the key's lease {id} does not list it"))
                .with_context("key", ctx()));
        }
        if let Some(events) = log.get(&entry.mod_revision) {
            let logged = events
                .iter()
                .any(|e| matches!(e, Event::Put { entry: logged, .. } if *logged == entry));
            if !logged {
                return Err(
                    corrupted("the key's last write is not in the log").with_context("key", ctx())
                );
            }
        }
    }
    if let Some((id, key)) = attachments.into_iter().next() {
        return Err(corrupted(format!(
            "lease {id:x} lists a key that is not attached to it"
        ))
        .with_context("key", escape_bytes(&key)));
    }
    Ok(())
}
