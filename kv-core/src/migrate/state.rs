//! The progress kept in the store: the checkpoint, the batch records, and where a scan
//! stands.

use super::*;
use crate::CollectionValue;
use crate::{Error, ErrorKind, Result};
use serde::{Deserialize, Serialize};

/// The checkpoint kept at the state key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct State {
    pub(super) phase: Phase,
    /// The source being scanned.
    pub(super) source: usize,
    /// The last old key done in that source, in hex.
    pub(super) after: Option<String>,
    /// Batch records written so far.
    pub(super) batches: u64,
}

impl State {
    pub(super) fn new() -> Self {
        State {
            phase: Phase::New,
            source: 0,
            after: None,
            batches: 0,
        }
    }
}

/// One new item a batch created: its key in hex and its contents' kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Created {
    pub(super) key: String,
    /// The item, to tell an unchanged one on rollback.
    #[serde(with = "value_serde")]
    pub(super) value: Value,
}

/// An old item as read: its contents, and for a plain key its mod revision.
#[derive(Debug, Clone)]
pub(super) struct Read {
    pub(super) source: usize,
    pub(super) item: Item,
    pub(super) mod_revision: Option<i64>,
}

/// What becomes of one new item in a batch.
pub(super) enum Target {
    Create(Item),
    Already,
    Conflict(Conflict),
}

/// Where a scan stands: the source, and the last key read in it.
#[derive(Debug, Clone)]
pub(super) struct Cursor {
    pub(super) source: usize,
    pub(super) after: Option<Vec<u8>>,
}

impl Cursor {
    pub(super) fn start() -> Self {
        Cursor {
            source: 0,
            after: None,
        }
    }

    pub(super) fn from(state: &State) -> Result<Self> {
        Ok(Cursor {
            source: state.source,
            after: state.after.as_deref().map(unhex).transpose()?,
        })
    }
}

pub(super) fn encode_state(state: &State) -> Result<Vec<u8>> {
    serde_json::to_vec(state).map_err(|e| Error::internal(format!("a migration state: {e}")))
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn unhex(text: &str) -> Result<Vec<u8>> {
    let bad = || Error::new(ErrorKind::Codec, "a migration state holds a malformed key");
    if !text.len().is_multiple_of(2) {
        return Err(bad());
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(bad)
        })
        .collect()
}

/// The batch records' encoding of a [`Value`]: a kind tag and hex strings.
mod value_serde {
    use super::{CollectionValue, Value, hex, unhex};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(tag = "kind", content = "data", rename_all = "snake_case")]
    enum Repr {
        Plain(String),
        Set(Vec<String>),
        Map(Vec<(String, String)>),
        List(Vec<String>),
    }

    pub(super) fn serialize<S: Serializer>(value: &Value, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Value::Plain(v) => Repr::Plain(hex(v)),
            Value::Collection(CollectionValue::Set(m)) => {
                Repr::Set(m.iter().map(|b| hex(b)).collect())
            }
            Value::Collection(CollectionValue::Map(f)) => {
                Repr::Map(f.iter().map(|(k, v)| (hex(k), hex(v))).collect())
            }
            Value::Collection(CollectionValue::List(i)) => {
                Repr::List(i.iter().map(|b| hex(b)).collect())
            }
        }
        .serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        let one = |t: &String| unhex(t).map_err(serde::de::Error::custom);
        let all = |v: Vec<String>| v.iter().map(one).collect::<Result<Vec<_>, _>>();
        Ok(match Repr::deserialize(d)? {
            Repr::Plain(v) => Value::Plain(one(&v)?),
            Repr::Set(m) => Value::set(all(m)?),
            Repr::Map(f) => Value::map(
                f.iter()
                    .map(|(k, v)| Ok((one(k)?, one(v)?)))
                    .collect::<Result<Vec<_>, D::Error>>()?,
            ),
            Repr::List(i) => Value::list(all(i)?),
        })
    }
}
