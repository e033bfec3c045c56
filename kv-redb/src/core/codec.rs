//! The on-disk encodings of the tables' values.
//!
//! - `kv`: user key → [`encode_entry`] (32-byte header: create revision, mod revision,
//!   version, lease; then the value). Reserved collection keys (`\0`...) hold raw values.
//! - `log`: revision → [`encode_events`]: the revision's events, each with its previous
//!   entry, and the sizes of the collections it deleted.
//! - `leases`: lease id → [`LeaseRecord`]; `lease_keys`: [`attachment_key`] → nothing (the
//!   key is attached to the lease).
//! - `meta`: [`FORMAT_KEY`], [`REVISION_KEY`], [`COMPACT_KEY`], [`LEASE_SEQ_KEY`] → `i64`.

use keyplane_contract::raw::emulation::{DeletedSize, Logged};
use keyplane_contract::raw::{decode_changes, encode_changes};
use keyplane_contract::{
    CollectionEvent, CollectionKind, Entry, Error, ErrorKind, Event, LeaseId, Result,
};

/// The layout version this build writes and reads.
pub(crate) const FORMAT_VERSION: i64 = 1;
/// Meta key of the layout version.
pub(crate) const FORMAT_KEY: &str = "format_version";
/// Meta key of the store's revision (the last revision committed).
pub(crate) const REVISION_KEY: &str = "revision";
/// Meta key of the oldest revision an explicit compaction kept.
pub(crate) const COMPACT_KEY: &str = "compact_revision";
/// Meta key of the last lease id granted.
pub(crate) const LEASE_SEQ_KEY: &str = "lease_seq";

const HEADER: usize = 32;

pub(crate) fn corrupted(what: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Corrupted, format!("redb store: {what}"))
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
/// of the collections it deleted: the log record of one revision.
pub(crate) fn encode_events(events: &[Event], deleted: &[DeletedSize]) -> Vec<u8> {
    let mut out = Vec::new();
    let out = &mut out;
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
    std::mem::take(out)
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

/// Decodes the log record of `revision`.
pub(crate) fn decode_events(revision: i64, bytes: &[u8]) -> Result<Logged> {
    decode_events_with(revision, bytes, &Select::ALL)
}

/// [`decode_events`] of the events `select` picks (the sizes of deleted collections
/// always).
pub(crate) fn decode_events_with(
    revision: i64,
    bytes: &[u8],
    select: &Select<'_>,
) -> Result<Logged> {
    let mut r = Reader(bytes);
    let mut logged = r.revision(select)?;
    if !r.0.is_empty() {
        return Err(corrupted(format!(
            "the log record of revision {revision} has trailing bytes"
        )));
    }
    logged.revision = revision;
    Ok(logged)
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

/// The `lease_keys` key recording that `key` is attached to lease `id`.
pub(crate) fn attachment_key(id: i64, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + key.len());
    out.extend_from_slice(&be(id));
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
        let logged = decode_events(4, &encode_events(&events, &deleted)).unwrap();
        assert_eq!(
            (logged.revision, &logged.events, &logged.deleted),
            (4, &events, &deleted)
        );
        let select = Select {
            event: &|key, _| key == b"a",
            prev: false,
        };
        let picked = decode_events_with(4, &encode_events(&events, &deleted), &select).unwrap();
        assert_eq!(picked.events, [events[0].without_prev()]);
        assert_eq!(picked.deleted, deleted);
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
        let err = decode_events(1, &bytes[..bytes.len() - 1]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupted);
        let err = decode_events(1, &[]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupted);
        assert!(decode_entry(b"k", b"short", false).is_err());
        assert!(LeaseRecord::decode(b"short").is_err());
    }
}
