//! The consistency check: data, log, leases and metadata agree with each other.

use crate::core::Core;
use crate::core::codec::{
    LeaseRecord, attachment_key, corrupted, decode_entry, decode_log_record, lease_key, read_be,
};
use crate::error::map_error;
use keyplane_contract::raw::escape_bytes;
use keyplane_contract::raw::layout;
use keyplane_contract::{Event, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::PoisonError;

/// Checks every invariant of the layout; the first violation is a `Corrupted` error.
pub(crate) fn check(inner: &Core) -> Result<()> {
    // Hold off writers so that the trees are read in one state.
    let w = inner.lock_writer();
    let _pruning = inner.pruning.lock().unwrap_or_else(PoisonError::into_inner);
    let _gate = inner.gate.write().unwrap_or_else(PoisonError::into_inner);
    let t = &inner.trees;
    let revision = inner.revision();
    let oldest = inner.oldest();

    // The log: contiguous from its first record to the current revision.
    let mut log: BTreeMap<i64, Vec<Event>> = BTreeMap::new();
    let mut expected = None;
    for kv in t.log.iter() {
        let (key, value) = kv.map_err(|e| map_error("check_consistency", e))?;
        for logged in decode_log_record(&key, &value)? {
            let rev = logged.revision;
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
                log.insert(rev, logged.events);
            }
        }
    }
    match log.last_key_value() {
        Some((&last, _)) if last != revision => {
            return Err(corrupted(format!(
                "the log ends at {last}, the store is at {revision}"
            )));
        }
        None if revision > 0 => {
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

    // Leases: records in the tree match the index; attachments point to live entries.
    let mut leases = BTreeSet::new();
    let mut attachments = BTreeSet::new();
    for kv in t.leases.iter() {
        let (key, value) = kv.map_err(|e| map_error("check_consistency", e))?;
        match key.first() {
            Some(b'L') => {
                let id = read_be(&key[1..])?;
                let record = LeaseRecord::decode(&value)?;
                if w.leases.get(id) != Some(record) {
                    return Err(corrupted(format!(
                        "lease {id:x} differs from the lease index"
                    )));
                }
                leases.insert(id);
            }
            Some(b'K') if key.len() >= 9 => {
                attachments.insert((read_be(&key[1..9])?, key[9..].to_vec()));
            }
            _ => return Err(corrupted("an unknown record in the leases tree")),
        }
    }
    if leases.len() != w.leases.len() {
        return Err(corrupted("the lease index holds leases the tree does not"));
    }
    if leases.last().is_some_and(|&max| max > w.lease_seq) {
        return Err(corrupted("a lease id above the last id granted"));
    }
    for (id, _) in &attachments {
        if !leases.contains(id) {
            return Err(corrupted(format!(
                "keys attached to a missing lease {id:x}"
            )));
        }
    }

    // Data: metadata within the revision; leases attached; the last write in the log.
    for kv in t.data.iter() {
        let (key, value) = kv.map_err(|e| map_error("check_consistency", e))?;
        if layout::is_reserved(&key) {
            continue;
        }
        let entry = decode_entry(&key, &value, false)?;
        let ctx = || escape_bytes(&key);
        if entry.version < 1
            || entry.create_revision < 1
            || entry.create_revision > entry.mod_revision
            || entry.mod_revision > revision
        {
            return Err(corrupted(format!("bad metadata {entry:?}")).with_context("key", ctx()));
        }
        if let Some(id) = entry.lease {
            if !attachments.remove(&(id.0, key.to_vec())) {
                return Err(corrupted(format!("the key's lease {id} does not list it"))
                    .with_context("key", ctx()));
            }
            if t.leases
                .get(lease_key(id.0))
                .map_err(|e| map_error("check_consistency", e))?
                .is_none()
            {
                return Err(corrupted(format!("the key's lease {id} does not exist"))
                    .with_context("key", ctx()));
            }
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
        .with_context("key", escape_bytes(&key))
        .with_context("attachment", escape_bytes(&attachment_key(id, &key))));
    }
    Ok(())
}
