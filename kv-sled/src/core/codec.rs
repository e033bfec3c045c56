//! The on-disk encodings of the four trees.
//!
//! - data: user key → [`encode_entry`] (32-byte header: create revision, mod revision,
//!   version, lease; then the value). Reserved collection keys (`\0`...) hold raw values.
//! - log: the last revision of a record (8 bytes big-endian) → the [`encode_events`] of each
//!   of the record's consecutive revisions, oldest first, one after another (a revision's
//!   events and the sizes of the collections it deleted). A group commit logs its
//!   revisions in one record (at most about [`LOG_RECORD_BYTES`], a larger revision alone):
//!   the log tree is sled's costliest write, as its keys only grow. Layout version 1 kept one
//!   revision per record, which version 2 reads as it is.
//! - leases: `L` id → [`LeaseRecord`]; `K` id key → empty (the key is attached to the lease).
//! - meta: [`FORMAT_KEY`], [`COMPACT_KEY`], [`LEASE_SEQ_KEY`] → 8 bytes big-endian.

use keyplane_contract::raw::emulation::{DeletedSize, Logged};
use keyplane_contract::raw::{decode_changes, encode_changes};
use keyplane_contract::{
    CollectionEvent, CollectionKind, Entry, Error, ErrorKind, Event, LeaseId, Result,
};

/// The layout version this build writes.
pub(crate) const FORMAT_VERSION: u64 = 2;
/// The oldest layout version this build reads (and upgrades on open: a version 1 log is a
/// version 2 log whose records hold one revision each).
pub(crate) const OLDEST_FORMAT_VERSION: u64 = 1;
/// A log record takes the next revision of its group while it is smaller than this.
pub(crate) const LOG_RECORD_BYTES: usize = 64 << 10;
/// Meta key of the layout version.
pub(crate) const FORMAT_KEY: &[u8] = b"format_version";
/// Meta key of the oldest revision an explicit compaction kept.
pub(crate) const COMPACT_KEY: &[u8] = b"compact_revision";
/// Meta key of the last lease id granted.
pub(crate) const LEASE_SEQ_KEY: &[u8] = b"lease_seq";

const HEADER: usize = 32;

pub(crate) fn corrupted(what: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Corrupted, format!("sled store: {what}"))
}

/// A revision or id as a tree key: big-endian, so byte order is numeric order.
pub(crate) fn be(n: i64) -> [u8; 8] {
    n.to_be_bytes()
}

pub(crate) fn read_be(bytes: &[u8]) -> Result<i64> {
    let arr: [u8; 8] = bytes
        .try_into()
        .map_err(|_| corrupted(format!("expected 8 bytes, found {}", bytes.len())))?;
    Ok(i64::from_be_bytes(arr))
}

/// Encodes an entry's metadata and value (the key is the tree key).
pub(crate) fn encode_entry(e: &Entry) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + e.value.len());
    put_meta(&mut out, e);
    out.extend_from_slice(&e.value);
    out
}

/// Decodes an entry stored under `key`; `keys_only` leaves the value empty.
pub(crate) fn decode_entry(key: &[u8], bytes: &[u8], keys_only: bool) -> Result<Entry> {
    if bytes.len() < HEADER {
        return Err(corrupted("a data record is shorter than its header")
            .with_context("key", keyplane_contract::raw::escape_bytes(key)));
    }
    let (header, value) = bytes.split_at(HEADER);
    Ok(entry_of(key, header, if keys_only { &[] } else { value }))
}

/// The entry of `key` with a [`HEADER`]-byte `header` and `value`.
fn entry_of(key: &[u8], header: &[u8], value: &[u8]) -> Entry {
    let field = |i: usize| i64::from_be_bytes(header[i * 8..i * 8 + 8].try_into().expect("8"));
    let lease = field(3);
    Entry {
        key: key.to_vec(),
        value: value.to_vec(),
        create_revision: field(0),
        mod_revision: field(1),
        version: field(2),
        lease: (lease != 0).then_some(LeaseId(lease)),
    }
}

fn put_meta(out: &mut Vec<u8>, e: &Entry) {
    out.extend_from_slice(&e.create_revision.to_be_bytes());
    out.extend_from_slice(&e.mod_revision.to_be_bytes());
    out.extend_from_slice(&e.version.to_be_bytes());
    out.extend_from_slice(&e.lease.map_or(0, |l| l.0).to_be_bytes());
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_be_bytes());
    out.extend_from_slice(b);
}

fn put_opt_entry(out: &mut Vec<u8>, e: Option<&Entry>) {
    match e {
        None => out.push(0),
        Some(e) => {
            out.push(1);
            put_meta(out, e);
            put_bytes(out, &e.value);
        }
    }
}

/// Encodes the events of one transaction (previous entries always included) and the sizes
/// of the collections it deleted: a log record of one revision.
pub(crate) fn encode_events(events: &[Event], deleted: &[DeletedSize]) -> Vec<u8> {
    let mut out = Vec::new();
    append_events(&mut out, events, deleted);
    out
}

/// Appends [`encode_events`] of one revision to a log record.
pub(crate) fn append_events(out: &mut Vec<u8>, events: &[Event], deleted: &[DeletedSize]) {
    out.extend_from_slice(&((events.len() + deleted.len()) as u32).to_be_bytes());
    for d in deleted {
        out.push(b'S');
        put_bytes(out, &d.key);
        out.push(d.kind.tag());
        out.extend_from_slice(&d.size.to_be_bytes());
    }
    for event in events {
        match event {
            Event::Put { entry, prev } => {
                out.push(b'P');
                put_bytes(out, &entry.key);
                put_opt_entry(out, Some(entry));
                put_opt_entry(out, prev.as_ref());
            }
            Event::Delete { key, prev } => {
                out.push(b'D');
                put_bytes(out, key);
                put_opt_entry(out, prev.as_ref());
            }
            Event::Collection(c) => {
                out.push(b'C');
                put_bytes(out, &c.key);
                out.push(c.kind.tag());
                put_bytes(out, &encode_changes(std::slice::from_ref(&c.change)));
            }
        }
    }
}

/// Which events of a log record to decode, and whether with their previous entries: the
/// others are skipped without allocating.
pub(crate) struct Select<'a> {
    /// Whether to decode the event of this key (`true`: a collection event).
    pub(crate) event: &'a dyn Fn(&[u8], bool) -> bool,
    /// Whether to decode previous entries (else they are `None`).
    pub(crate) prev: bool,
}

impl Select<'_> {
    /// Every event, with its previous entry.
    pub(crate) const ALL: Select<'static> = Select {
        event: &|_, _| true,
        prev: true,
    };
}

/// Decodes the log record stored under `key` (its last revision): its revisions, oldest
/// first.
pub(crate) fn decode_log_record(key: &[u8], bytes: &[u8]) -> Result<Vec<Logged>> {
    decode_log_record_with(key, bytes, &Select::ALL)
}

/// [`decode_log_record`] of the events `select` picks (the sizes of deleted collections
/// always).
pub(crate) fn decode_log_record_with(
    key: &[u8],
    bytes: &[u8],
    select: &Select<'_>,
) -> Result<Vec<Logged>> {
    let last = read_be(key)?;
    let mut r = Reader(bytes);
    let mut decoded = Vec::new();
    loop {
        decoded.push(r.revision(select)?);
        if r.0.is_empty() {
            break;
        }
    }
    // The record's length says where its revisions start.
    let first = last - (decoded.len() as i64 - 1);
    if first < 1 {
        return Err(corrupted(format!(
            "the log record of revision {last} holds {} revisions",
            decoded.len()
        )));
    }
    for (logged, revision) in decoded.iter_mut().zip(first..) {
        logged.revision = revision;
    }
    Ok(decoded)
}

/// The first revision of the log record stored under `key`.
pub(crate) fn first_revision(key: &[u8], bytes: &[u8]) -> Result<i64> {
    let none = Select {
        event: &|_, _| false,
        prev: false,
    };
    let revisions = decode_log_record_with(key, bytes, &none)?;
    Ok(revisions[0].revision)
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    /// Reads the encoding of one revision, decoding what `select` picks (its revision
    /// number is the record's to give).
    fn revision(&mut self, select: &Select<'_>) -> Result<Logged> {
        let r = self;
        let n = r.u32()?;
        let mut events = Vec::with_capacity(n.min(1024) as usize);
        let mut deleted = Vec::new();
        for _ in 0..n {
            let tag = r.take(1)?[0];
            let key = r.bytes()?;
            let keep = match tag {
                b'S' => true,
                b'P' | b'D' => (select.event)(key, false),
                b'C' => (select.event)(key, true),
                other => return Err(corrupted(format!("unknown event tag {other:#x}"))),
            };
            match tag {
                b'S' => {
                    let kind = collection_kind(r.take(1)?[0])?;
                    let size = read_be(r.take(8)?)? as u64;
                    deleted.push(DeletedSize {
                        key: key.to_vec(),
                        kind,
                        size,
                    });
                }
                b'P' => {
                    let entry = r.opt_entry(key, keep)?;
                    let prev = r.opt_entry(key, keep && select.prev)?;
                    if keep {
                        let entry =
                            entry.ok_or_else(|| corrupted("a put event without its entry"))?;
                        events.push(Event::Put { entry, prev });
                    }
                }
                b'D' => {
                    let prev = r.opt_entry(key, keep && select.prev)?;
                    if keep {
                        events.push(Event::Delete {
                            key: key.to_vec(),
                            prev,
                        });
                    }
                }
                _ => {
                    let kind = collection_kind(r.take(1)?[0])?;
                    let changes = r.bytes()?;
                    if keep {
                        let mut changes = decode_changes(changes)?;
                        if changes.len() != 1 {
                            return Err(corrupted("a collection event without exactly one change"));
                        }
                        let change = changes.remove(0);
                        events.push(Event::Collection(CollectionEvent {
                            key: key.to_vec(),
                            kind,
                            change,
                        }));
                    }
                }
            }
        }
        Ok(Logged {
            revision: 0,
            events,
            deleted,
        })
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.0.len() < n {
            return Err(corrupted("a log record is truncated"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into().expect("4")))
    }

    fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    /// An optional entry of `key`; read past without allocating unless `keep`.
    fn opt_entry(&mut self, key: &[u8], keep: bool) -> Result<Option<Entry>> {
        match self.take(1)?[0] {
            0 => Ok(None),
            1 => {
                let header = self.take(HEADER)?;
                let value = self.bytes()?;
                Ok(keep.then(|| entry_of(key, header, value)))
            }
            other => Err(corrupted(format!("bad entry marker {other:#x}"))),
        }
    }
}

fn collection_kind(tag: u8) -> Result<CollectionKind> {
    CollectionKind::from_tag(tag)
        .ok_or_else(|| corrupted(format!("unknown collection kind {tag:#x}")))
}

/// A lease as stored: its granted TTL and its wall-clock deadline, both in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LeaseRecord {
    /// The TTL it was granted with.
    pub(crate) ttl_ms: i64,
    /// Unix time in milliseconds at which it expires.
    pub(crate) deadline_ms: i64,
}

impl LeaseRecord {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16);
        out.extend_from_slice(&self.ttl_ms.to_be_bytes());
        out.extend_from_slice(&self.deadline_ms.to_be_bytes());
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Self> {
        if bytes.len() != 16 {
            return Err(corrupted("a lease record is not 16 bytes"));
        }
        Ok(LeaseRecord {
            ttl_ms: read_be(&bytes[..8])?,
            deadline_ms: read_be(&bytes[8..])?,
        })
    }
}

/// The leases-tree key of a lease record.
pub(crate) fn lease_key(id: i64) -> Vec<u8> {
    let mut out = Vec::with_capacity(9);
    out.push(b'L');
    out.extend_from_slice(&be(id));
    out
}

/// The prefix of the attachments of a lease.
pub(crate) fn attachments_prefix(id: i64) -> Vec<u8> {
    let mut out = Vec::with_capacity(9);
    out.push(b'K');
    out.extend_from_slice(&be(id));
    out
}

/// The leases-tree key recording that `key` is attached to lease `id`.
pub(crate) fn attachment_key(id: i64, key: &[u8]) -> Vec<u8> {
    let mut out = attachments_prefix(id);
    out.extend_from_slice(key);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, value: &str, rev: i64) -> Entry {
        Entry {
            key: key.into(),
            value: value.into(),
            create_revision: 1,
            mod_revision: rev,
            version: rev,
            lease: Some(LeaseId(7)),
        }
    }

    #[test]
    fn entries_and_events_round_trip() {
        let e = entry("a", "v", 3);
        assert_eq!(decode_entry(b"a", &encode_entry(&e), false).unwrap(), e);
        assert!(
            decode_entry(b"a", &encode_entry(&e), true)
                .unwrap()
                .value
                .is_empty()
        );
        let events = vec![
            Event::Put {
                entry: e.clone(),
                prev: Some(entry("a", "old", 2)),
            },
            Event::Delete {
                key: b"b".to_vec(),
                prev: Some(entry("b", "", 1)),
            },
        ];
        let deleted = vec![DeletedSize {
            key: b"s".to_vec(),
            kind: CollectionKind::Set,
            size: 7,
        }];
        // A record of one revision, as layout version 1 wrote it.
        let one = decode_log_record(&be(4), &encode_events(&events, &deleted)).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(
            (one[0].revision, &one[0].events, &one[0].deleted),
            (4, &events, &deleted)
        );
        // A group's record: its revisions in order, the last one its key.
        let mut record = Vec::new();
        append_events(&mut record, &events, &[]);
        append_events(&mut record, &events[1..], &deleted);
        append_events(&mut record, &[], &[]);
        let group = decode_log_record(&be(9), &record).unwrap();
        let revisions: Vec<_> = group.iter().map(|r| r.revision).collect();
        assert_eq!(revisions, [7, 8, 9]);
        assert_eq!(group[1].events, events[1..]);
        assert_eq!(group[1].deleted, deleted);
        assert!(group[2].events.is_empty());
        assert_eq!(first_revision(&be(9), &record).unwrap(), 7);
        // Only the events selected, without their previous entries.
        let select = Select {
            event: &|key, _| key == b"a",
            prev: false,
        };
        let picked = decode_log_record_with(&be(9), &record, &select).unwrap();
        assert_eq!(picked.len(), 3);
        assert_eq!(picked[0].events, [events[0].without_prev()]);
        assert!(picked[1].events.is_empty());
        assert_eq!(picked[1].deleted, deleted);
        // More revisions than the key leaves room for.
        let err = decode_log_record(&be(2), &record).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupted);
    }

    #[test]
    fn truncated_records_are_corrupted() {
        let bytes = encode_events(
            &[Event::Delete {
                key: b"k".to_vec(),
                prev: None,
            }],
            &[],
        );
        let err = decode_log_record(&be(1), &bytes[..bytes.len() - 1]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupted);
        let err = decode_log_record(&be(1), &[]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupted);
        let err = decode_log_record(b"short", &bytes).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupted);
        assert!(decode_entry(b"k", b"short", false).is_err());
    }
}
