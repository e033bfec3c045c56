//! Decoding script replies and log entries into contract types.

use keyplane_contract::raw::emulation::DeletedSize;
use keyplane_contract::raw::escape_bytes;
use keyplane_contract::{
    CollectionChange, CollectionEvent, CollectionKind, Entry, Error, ErrorKind, Event, LeaseId,
    Result,
};
use redis::Value;

pub(crate) fn corrupted(what: impl Into<String>) -> Error {
    Error::new(ErrorKind::Corrupted, what)
}

pub(crate) fn bytes(v: Value) -> Result<Vec<u8>> {
    match v {
        Value::BulkString(b) => Ok(b),
        Value::SimpleString(s) => Ok(s.into_bytes()),
        Value::Int(i) => Ok(i.to_string().into_bytes()),
        other => Err(corrupted(format!("expected a string reply, got {other:?}"))),
    }
}

pub(crate) fn opt_bytes(v: Value) -> Result<Option<Vec<u8>>> {
    match v {
        Value::Nil => Ok(None),
        other => bytes(other).map(Some),
    }
}

pub(crate) fn int(v: Value) -> Result<i64> {
    match v {
        Value::Int(i) => Ok(i),
        Value::BulkString(b) => std::str::from_utf8(&b)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| corrupted("expected an integer reply")),
        other => Err(corrupted(format!(
            "expected an integer reply, got {other:?}"
        ))),
    }
}

pub(crate) fn array(v: Value) -> Result<Vec<Value>> {
    match v {
        Value::Array(items) | Value::Set(items) => Ok(items),
        Value::Nil => Ok(Vec::new()),
        other => Err(corrupted(format!("expected an array reply, got {other:?}"))),
    }
}

pub(crate) fn byte_list(v: Value) -> Result<Vec<Vec<u8>>> {
    array(v)?.into_iter().map(bytes).collect()
}

/// An entry from its key, value and metadata (`create:mod:version:lease`).
pub(crate) fn entry(key: Vec<u8>, value: Vec<u8>, meta: &[u8]) -> Result<Entry> {
    let text = std::str::from_utf8(meta).map_err(|_| corrupted("metadata is not text"))?;
    let mut fields = text.split(':').map(str::parse::<i64>);
    let mut next = || {
        fields
            .next()
            .and_then(|f| f.ok())
            .ok_or_else(|| corrupted(format!("malformed key metadata {text:?}")))
    };
    let (create_revision, mod_revision, version, lease) = (next()?, next()?, next()?, next()?);
    Ok(Entry {
        key,
        value,
        create_revision,
        mod_revision,
        version,
        lease: (lease != 0).then_some(LeaseId(lease)),
    })
}

/// An entry from a `{ value, meta }` reply, `None` for nil.
pub(crate) fn opt_entry(key: &[u8], v: Value) -> Result<Option<Entry>> {
    match v {
        Value::Nil => Ok(None),
        other => {
            let mut parts = array(other)?.into_iter();
            match (parts.next(), parts.next()) {
                (Some(value), Some(meta)) => {
                    entry(key.to_vec(), bytes(value)?, &bytes(meta)?).map(Some)
                }
                _ => Err(corrupted("an entry reply has two parts")),
            }
        }
    }
}

/// The revisions one stream entry of the log holds, in order: each with its events (with
/// previous entries), and the keys of those events whose previous value is unknown (another
/// program overwrote or deleted them; their events carry no previous entry), each with its
/// previous metadata.
///
/// An entry `<revision>-0` whose field is `e` holds that one revision's events. An entry
/// written by a batch of writes (see `scripts/batch.lua`) holds several consecutive
/// revisions, one field each, named by the revision, and its id is the last one's.
pub(crate) fn log_entries(v: Value) -> Result<Vec<LogEntry>> {
    let mut parts = array(v)?.into_iter();
    let (Some(id), Some(fields)) = (parts.next(), parts.next()) else {
        return Err(corrupted("a log entry has an id and fields"));
    };
    let id = bytes(id)?;
    let last: i64 = std::str::from_utf8(&id)
        .ok()
        .and_then(|s| s.split('-').next())
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| corrupted("a log entry id is <revision>-0"))?;
    let mut fields = array(fields)?.into_iter();
    let mut out = Vec::new();
    while let (Some(name), Some(value)) = (fields.next(), fields.next()) {
        let name = bytes(name)?;
        let revision = if name == b"e" {
            last
        } else {
            std::str::from_utf8(&name)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| corrupted("a log entry's field names its revision"))?
        };
        let decoded = decode_events(&bytes(value)?)?;
        out.push(LogEntry {
            revision,
            events: decoded.events,
            unknown_prev: decoded.unknown,
            deleted: decoded.deleted,
        });
    }
    if out.last().map(|e| e.revision) != Some(last)
        || out.windows(2).any(|w| w[1].revision != w[0].revision + 1)
    {
        return Err(corrupted(
            "a log entry holds consecutive revisions up to its id",
        ));
    }
    Ok(out)
}

/// One revision of the log, decoded (see [`log_entries`]).
pub(crate) struct LogEntry {
    pub(crate) revision: i64,
    pub(crate) events: Vec<Event>,
    /// `(key, previous metadata)` of each event whose previous value is unknown.
    pub(crate) unknown_prev: Vec<(Vec<u8>, Vec<u8>)>,
    pub(crate) deleted: Vec<DeletedSize>,
}

/// The events of one revision, decoded.
struct Decoded {
    events: Vec<Event>,
    /// The keys whose previous value is unknown, with their previous metadata.
    unknown: Vec<(Vec<u8>, Vec<u8>)>,
    /// The sizes of the collections the revision deleted.
    deleted: Vec<DeletedSize>,
}

/// Decodes the events of one revision: a kind byte and five `<decimal length>:<bytes>`
/// strings each.
fn decode_events(mut blob: &[u8]) -> Result<Decoded> {
    let mut events = Vec::new();
    let mut unknown = Vec::new();
    let mut deleted = Vec::new();
    while let Some((&kind, rest)) = blob.split_first() {
        blob = rest;
        let mut part = || -> Result<Vec<u8>> {
            let colon = blob
                .iter()
                .position(|&b| b == b':')
                .ok_or_else(|| corrupted("truncated log event"))?;
            let len: usize = std::str::from_utf8(&blob[..colon])
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| corrupted("malformed log event length"))?;
            let rest = &blob[colon + 1..];
            if rest.len() < len {
                return Err(corrupted("truncated log event"));
            }
            let (data, rest) = rest.split_at(len);
            blob = rest;
            Ok(data.to_vec())
        };
        let (key, value, meta, prev_value, prev_meta) =
            (part()?, part()?, part()?, part()?, part()?);
        if kind == b'c' {
            // A delete carries the collection's size before it (logs of older versions
            // leave it empty).
            let size = std::str::from_utf8(&meta).ok().and_then(|s| s.parse().ok());
            let event = collection_event(key, &value, meta, prev_value, prev_meta)?;
            if let (CollectionChange::Deleted, Some(size)) = (&event.change, size) {
                deleted.push(DeletedSize {
                    key: event.key.clone(),
                    kind: event.kind,
                    size,
                });
            }
            events.push(Event::Collection(event));
            continue;
        }
        let prev_known = kind.is_ascii_lowercase();
        if !prev_known {
            unknown.push((key.clone(), prev_meta.clone()));
        }
        let prev = if prev_meta.is_empty() || !prev_known {
            None
        } else {
            Some(entry(key.clone(), prev_value, &prev_meta)?)
        };
        events.push(match kind {
            b'p' | b'P' => Event::Put {
                entry: entry(key, value, &meta)?,
                prev,
            },
            b'd' | b'D' => Event::Delete { key, prev },
            other => return Err(corrupted(format!("unknown log event kind {other}"))),
        });
    }
    Ok(Decoded {
        events,
        unknown,
        deleted,
    })
}

/// A collection event of the log: its key, its kind tag and change code, and up to three
/// arguments (see `lib.lua`).
fn collection_event(
    key: Vec<u8>,
    code: &[u8],
    a1: Vec<u8>,
    a2: Vec<u8>,
    a3: Vec<u8>,
) -> Result<CollectionEvent> {
    let bad = || corrupted(format!("unknown collection change {}", escape_bytes(code)));
    let [tag, change] = code else {
        return Err(bad());
    };
    let kind = CollectionKind::from_tag(*tag).ok_or_else(bad)?;
    let change = match change {
        b'a' => CollectionChange::SetAdd { member: a1 },
        b'r' => CollectionChange::SetRemove { member: a1 },
        b'p' => CollectionChange::MapPut {
            field: a1,
            value: a2,
            prev: None,
        },
        b'P' => CollectionChange::MapPut {
            field: a1,
            value: a2,
            prev: Some(a3),
        },
        b'd' => CollectionChange::MapDelete {
            field: a1,
            prev: a2,
        },
        b'l' => CollectionChange::ListPush { item: a1 },
        b'f' => CollectionChange::ListPushFront { item: a1 },
        b'x' => CollectionChange::ListRemove {
            item: a1,
            count: std::str::from_utf8(&a2)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| corrupted("malformed list remove count"))?,
        },
        b'o' => CollectionChange::ListRotate { item: a1 },
        b'D' => CollectionChange::Deleted,
        _ => return Err(bad()),
    };
    if change.kind().is_some_and(|k| k != kind) {
        return Err(bad());
    }
    Ok(CollectionEvent { key, kind, change })
}

/// The revisions of stream entries of the log, in order.
pub(crate) fn flatten(entries: Vec<Value>) -> Result<Vec<LogEntry>> {
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        out.extend(log_entries(entry)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lp(s: &[u8]) -> Vec<u8> {
        let mut out = format!("{}:", s.len()).into_bytes();
        out.extend_from_slice(s);
        out
    }

    #[test]
    fn decodes_events_with_prev() {
        let mut blob = vec![b'p'];
        for part in [&b"a:1"[..], b"v2", b"3:7:2:0", b"v1", b"3:3:1:0"] {
            blob.extend(lp(part));
        }
        blob.push(b'd');
        for part in [&b"b\xff"[..], b"", b"", b"x", b"4:4:1:12"] {
            blob.extend(lp(part));
        }
        let Decoded {
            events, unknown, ..
        } = decode_events(&blob).unwrap();
        assert!(unknown.is_empty());
        assert_eq!(events.len(), 2);
        match &events[0] {
            Event::Put { entry, prev } => {
                assert_eq!(entry.key, b"a:1", "a colon inside a key");
                assert_eq!((entry.mod_revision, entry.version), (7, 2));
                assert_eq!(prev.as_ref().unwrap().value, b"v1");
            }
            other => panic!("{other:?}"),
        }
        match &events[1] {
            Event::Delete { key, prev } => {
                assert_eq!(key, b"b\xff");
                assert_eq!(prev.as_ref().unwrap().lease, Some(LeaseId(12)));
            }
            other => panic!("{other:?}"),
        }
        assert!(decode_events(&blob[..blob.len() - 1]).is_err());
    }

    #[test]
    fn a_collection_delete_carries_its_size_when_logged() {
        let mut blob = Vec::new();
        for (key, size) in [(&b"with"[..], &b"12"[..]), (b"without", b"")] {
            blob.push(b'c');
            for part in [key, b"sD", size, b"", b""] {
                blob.extend(lp(part));
            }
        }
        let Decoded {
            events, deleted, ..
        } = decode_events(&blob).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(
            deleted,
            [DeletedSize {
                key: b"with".to_vec(),
                kind: CollectionKind::Set,
                size: 12
            }]
        );
    }
}
