//! [`Item`] and [`Value`]: a key and its contents, old or new.

use crate::CollectionValue;
use crate::Store;
use crate::{CollectionKind, CollectionOp, CollectionResult};
use crate::{Compare, TxnOp};
use crate::{Error, Result};

/// The contents of an item: a plain value, or a collection's (the type a watch reports a
/// collection's contents with).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A plain key's value.
    Plain(Vec<u8>),
    /// A set's members, a map's fields or a list's items.
    Collection(CollectionValue),
}

impl Value {
    /// A set of `members` (sorted and distinct, as a set is).
    pub fn set(members: impl IntoIterator<Item = impl Into<Vec<u8>>>) -> Self {
        Value::Collection(CollectionValue::Set(
            members.into_iter().map(Into::into).collect(),
        ))
    }

    /// A map of `fields`; a repeated field keeps its last value.
    pub fn map(fields: impl IntoIterator<Item = (impl Into<Vec<u8>>, impl Into<Vec<u8>>)>) -> Self {
        Value::Collection(CollectionValue::Map(
            fields
                .into_iter()
                .map(|(f, v)| (f.into(), v.into()))
                .collect(),
        ))
    }

    /// A list of `items`, in order.
    pub fn list(items: impl IntoIterator<Item = impl Into<Vec<u8>>>) -> Self {
        Value::Collection(CollectionValue::List(
            items.into_iter().map(Into::into).collect(),
        ))
    }

    /// The collection kind, `None` for a plain value.
    pub fn kind(&self) -> Option<CollectionKind> {
        match self {
            Value::Plain(_) => None,
            Value::Collection(c) => Some(c.kind()),
        }
    }

    /// How many members, fields or items (1 for a plain value).
    pub fn size(&self) -> usize {
        match self {
            Value::Plain(_) => 1,
            Value::Collection(c) => c.len(),
        }
    }

    /// Reads the whole collection of `kind` at `key` from `store`; `None` when it is empty
    /// (a collection without members does not exist).
    ///
    /// # Errors
    /// Backend errors; `Internal` for a result of another shape.
    pub async fn read(store: &dyn Store, key: &[u8], kind: CollectionKind) -> Result<Option<Self>> {
        let value = match store.collection(CollectionOp::read_all(key, kind)).await? {
            CollectionResult::Members(m) => Value::set(m),
            CollectionResult::Fields(f) => Value::map(f),
            CollectionResult::Items(i) => Value::list(i),
            other => {
                return Err(Error::internal(format!(
                    "a collection read answered {other:?}"
                )));
            }
        };
        Ok((value.size() > 0).then_some(value))
    }
}

/// A key with its contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The key.
    pub key: Vec<u8>,
    /// Its contents.
    pub value: Value,
}

impl Item {
    /// The item `key` holding `value`.
    pub fn new(key: impl Into<Vec<u8>>, value: Value) -> Self {
        Item {
            key: key.into(),
            value,
        }
    }

    /// A plain key holding `value`.
    pub fn plain(key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> Self {
        Item::new(key, Value::Plain(value.into()))
    }

    /// The compare that the item's key holds nothing of its kind (no plain value, or no
    /// collection of its kind).
    pub fn absent(&self) -> Compare {
        match self.value.kind() {
            None => Compare::absent(&self.key),
            Some(kind) => Compare::collection_absent(&self.key, kind),
        }
    }

    /// The transaction ops that write the item: a put, or one add, put or push per member,
    /// field or item.
    pub fn write_ops(&self) -> Vec<TxnOp> {
        let key = &self.key;
        match &self.value {
            Value::Plain(v) => vec![TxnOp::put(key, v)],
            Value::Collection(CollectionValue::Set(members)) => members
                .iter()
                .map(|m| {
                    TxnOp::Collection(CollectionOp::SetAdd {
                        key: key.clone(),
                        member: m.clone(),
                    })
                })
                .collect(),
            Value::Collection(CollectionValue::Map(fields)) => fields
                .iter()
                .map(|(f, v)| {
                    TxnOp::Collection(CollectionOp::MapPut {
                        key: key.clone(),
                        field: f.clone(),
                        value: v.clone(),
                    })
                })
                .collect(),
            Value::Collection(CollectionValue::List(items)) => items
                .iter()
                .map(|i| {
                    TxnOp::Collection(CollectionOp::ListPush {
                        key: key.clone(),
                        value: i.clone(),
                    })
                })
                .collect(),
        }
    }
}
