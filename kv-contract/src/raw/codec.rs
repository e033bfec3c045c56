//! The binary form of collection changes, for backends that store them.

use crate::changes::CollectionChange;
use crate::error::{Error, ErrorKind, Result};

/// The binary form of a sequence of changes, for backends that store them (etcd keeps the
/// changes of a transaction in the collection's stamp, sled in its event log).
///
/// Layout: a version byte `1`, then per change a tag byte and its fields, each field a
/// 4-byte big-endian length followed by its bytes (a list remove's count is 8 big-endian
/// bytes).
pub fn encode_changes(changes: &[CollectionChange]) -> Vec<u8> {
    let mut out = vec![1u8];
    for change in changes {
        encode_change(&mut out, change);
    }
    out
}

/// Appends one change (tag and fields) to `out`.
pub(crate) fn encode_change(out: &mut Vec<u8>, change: &CollectionChange) {
    let field = |out: &mut Vec<u8>, bytes: &[u8]| {
        out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        out.extend_from_slice(bytes);
    };
    match change {
        CollectionChange::SetAdd { member } => {
            out.push(b'a');
            field(out, member);
        }
        CollectionChange::SetRemove { member } => {
            out.push(b'r');
            field(out, member);
        }
        CollectionChange::MapPut {
            field: f,
            value,
            prev,
        } => {
            out.push(if prev.is_some() { b'P' } else { b'p' });
            field(out, f);
            field(out, value);
            if let Some(prev) = prev {
                field(out, prev);
            }
        }
        CollectionChange::MapDelete { field: f, prev } => {
            out.push(b'd');
            field(out, f);
            field(out, prev);
        }
        CollectionChange::ListPush { item } => {
            out.push(b'l');
            field(out, item);
        }
        CollectionChange::ListPushFront { item } => {
            out.push(b'f');
            field(out, item);
        }
        CollectionChange::ListRemove { item, count } => {
            out.push(b'x');
            field(out, item);
            out.extend_from_slice(&count.to_be_bytes());
        }
        CollectionChange::ListRotate { item } => {
            out.push(b'o');
            field(out, item);
        }
        CollectionChange::Deleted => out.push(b'D'),
    }
}

/// Decodes what [`encode_changes`] wrote.
///
/// # Errors
/// `Corrupted` on a truncated record, an unknown version or an unknown tag.
pub fn decode_changes(bytes: &[u8]) -> Result<Vec<CollectionChange>> {
    let corrupted = |what: &str| {
        Error::new(
            ErrorKind::Corrupted,
            "a collection change record is malformed",
        )
        .with_context("problem", what)
    };
    let Some((&version, mut rest)) = bytes.split_first() else {
        return Err(corrupted("empty record"));
    };
    if version != 1 {
        return Err(corrupted("unknown version"));
    }
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (change, used) = decode_change(rest)?;
        out.push(change);
        rest = &rest[used..];
    }
    Ok(out)
}

/// Decodes one change at the start of `bytes`: the change and how many bytes it used.
pub(crate) fn decode_change(bytes: &[u8]) -> Result<(CollectionChange, usize)> {
    let corrupted = || {
        Error::new(
            ErrorKind::Corrupted,
            "a collection change record is malformed",
        )
        .with_context("problem", "truncated or unknown tag")
    };
    let mut at = 1usize;
    let field = |at: &mut usize| -> Result<Vec<u8>> {
        let len = bytes.get(*at..*at + 4).ok_or_else(corrupted)?;
        let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
        let start = *at + 4;
        let value = bytes
            .get(start..start + len)
            .ok_or_else(corrupted)?
            .to_vec();
        *at = start + len;
        Ok(value)
    };
    let change = match bytes.first().copied().ok_or_else(corrupted)? {
        b'a' => CollectionChange::SetAdd {
            member: field(&mut at)?,
        },
        b'r' => CollectionChange::SetRemove {
            member: field(&mut at)?,
        },
        tag @ (b'p' | b'P') => {
            let f = field(&mut at)?;
            let value = field(&mut at)?;
            let prev = if tag == b'P' {
                Some(field(&mut at)?)
            } else {
                None
            };
            CollectionChange::MapPut {
                field: f,
                value,
                prev,
            }
        }
        b'd' => CollectionChange::MapDelete {
            field: field(&mut at)?,
            prev: field(&mut at)?,
        },
        b'l' => CollectionChange::ListPush {
            item: field(&mut at)?,
        },
        b'f' => CollectionChange::ListPushFront {
            item: field(&mut at)?,
        },
        b'x' => {
            let item = field(&mut at)?;
            let count = bytes.get(at..at + 8).ok_or_else(corrupted)?;
            at += 8;
            let mut n = [0u8; 8];
            n.copy_from_slice(count);
            CollectionChange::ListRemove {
                item,
                count: u64::from_be_bytes(n),
            }
        }
        b'o' => CollectionChange::ListRotate {
            item: field(&mut at)?,
        },
        b'D' => CollectionChange::Deleted,
        _ => return Err(corrupted()),
    };
    Ok((change, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<CollectionChange> {
        vec![
            CollectionChange::SetAdd {
                member: b"m".to_vec(),
            },
            CollectionChange::SetRemove { member: Vec::new() },
            CollectionChange::MapPut {
                field: b"f".to_vec(),
                value: b"v".to_vec(),
                prev: None,
            },
            CollectionChange::MapPut {
                field: b"f".to_vec(),
                value: b"w".to_vec(),
                prev: Some(b"v".to_vec()),
            },
            CollectionChange::MapDelete {
                field: b"f".to_vec(),
                prev: b"w".to_vec(),
            },
            CollectionChange::ListPush {
                item: b"\0\xff".to_vec(),
            },
            CollectionChange::ListRemove {
                item: b"i".to_vec(),
                count: 3,
            },
            CollectionChange::ListRotate {
                item: b"i".to_vec(),
            },
            CollectionChange::Deleted,
        ]
    }

    #[test]
    fn changes_round_trip() {
        let changes = all();
        assert_eq!(decode_changes(&encode_changes(&changes)).unwrap(), changes);
        assert_eq!(decode_changes(&encode_changes(&[])).unwrap(), vec![]);
    }

    #[test]
    fn truncated_records_are_corrupted_not_panics() {
        let bytes = encode_changes(&all());
        for cut in 0..bytes.len() {
            if let Err(e) = decode_changes(&bytes[..cut]) {
                assert_eq!(e.kind(), ErrorKind::Corrupted);
            }
        }
        assert!(decode_changes(b"").is_err());
        assert!(decode_changes(b"\x02").is_err());
        assert!(decode_changes(b"\x01?").is_err());
    }
}
