//! Collection reads inside a [`TypedTxn`]: a set's membership and members, a map's fields, a
//! list's items, length and rotation, each redeemed from the [`TxnOutcome`] as typed values.

use super::collections::{ListHandle, MapHandle, SetHandle};
use super::txn::{Branch, TxnOutcome, TypedTxn};
use crate::keyspace::codec::Codec;
use crate::raw::escape_bytes;
use crate::{CollectionOp, CollectionResult};
use crate::{Compare, LeaseId};
use crate::{CompareOp, OpResult, TxnOp};
use crate::{Error, Result};
use std::fmt;

type Decoder<T> = Box<dyn Fn(CollectionResult) -> Result<T> + Send + Sync>;

/// A collection read recorded in a [`TypedTxn`] (in its success branch), redeemed with
/// [`TxnOutcome::collection`].
pub struct CollectionRead<T> {
    index: usize,
    key: Vec<u8>,
    decode: Decoder<T>,
}

impl<T> fmt::Debug for CollectionRead<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CollectionRead")
            .field("index", &self.index)
            .field("key", &escape_bytes(&self.key))
            .finish()
    }
}

/// Decodes with `codec` (which the recording checked could be built).
fn decode<C: Codec>(codec: &Result<C>, key: &[u8], bytes: &[u8]) -> Result<C::Value> {
    codec
        .as_ref()
        .map_err(Error::clone)?
        .decode_for(key, bytes)
        .map_err(|e| e.with_context("key", escape_bytes(key)))
}

fn unexpected(key: &[u8], got: CollectionResult) -> Error {
    Error::internal(format!("unexpected collection result {got:?}"))
        .with_context("key", escape_bytes(key))
}

impl TypedTxn {
    fn collection_read<T>(&mut self, op: CollectionOp, decode: Decoder<T>) -> CollectionRead<T> {
        let key = op.key().to_vec();
        // Collection reads are redeemed from the success branch's results.
        let index = self.push(Branch::Success, TxnOp::Collection(op));
        CollectionRead { index, key, decode }
    }

    /// Reads whether the set holds `member`.
    pub fn set_contains<C: Codec>(
        &mut self,
        set: &SetHandle<C>,
        member: &C::Value,
    ) -> CollectionRead<bool> {
        let key = set.key().to_vec();
        let member = self.encode(set.codec(), &key, member).unwrap_or_default();
        let at = key.clone();
        self.collection_read(
            CollectionOp::SetContains { key, member },
            Box::new(move |r| match r {
                CollectionResult::Contains(found) => Ok(found),
                other => Err(unexpected(&at, other)),
            }),
        )
    }

    /// Reads every member of the set, in ascending byte order of their encodings.
    pub fn set_members<C: Codec + Clone>(
        &mut self,
        set: &SetHandle<C>,
    ) -> CollectionRead<Vec<C::Value>> {
        let (key, codec) = (set.key().to_vec(), self.checked(set.codec().cloned()));
        let at = key.clone();
        self.collection_read(
            CollectionOp::SetMembers { key },
            Box::new(move |r| match r {
                CollectionResult::Members(members) => {
                    members.iter().map(|m| decode(&codec, &at, m)).collect()
                }
                other => Err(unexpected(&at, other)),
            }),
        )
    }

    /// Reads one field of the map (`None` when absent).
    pub fn map_get<F: Codec, V: Codec + Clone>(
        &mut self,
        map: &MapHandle<F, V>,
        field: &F::Value,
    ) -> CollectionRead<Option<V::Value>> {
        let key = map.key().to_vec();
        let field = self
            .encode(Ok(map.field_codec()), &key, field)
            .unwrap_or_default();
        let (codec, at) = (self.checked(map.value_codec().cloned()), key.clone());
        self.collection_read(
            CollectionOp::MapGet { key, field },
            Box::new(move |r| match r {
                CollectionResult::Value(value) => {
                    value.map(|v| decode(&codec, &at, &v)).transpose()
                }
                other => Err(unexpected(&at, other)),
            }),
        )
    }

    /// Reads every field of the map with its value, ascending by field.
    pub fn map_all<F: Codec + Clone, V: Codec + Clone>(
        &mut self,
        map: &MapHandle<F, V>,
    ) -> CollectionRead<Vec<(F::Value, V::Value)>> {
        let key = map.key().to_vec();
        let fields = Ok(map.field_codec().clone());
        let values = self.checked(map.value_codec().cloned());
        let at = key.clone();
        self.collection_read(
            CollectionOp::MapGetAll { key },
            Box::new(move |r| match r {
                CollectionResult::Fields(all) => all
                    .iter()
                    .map(|(f, v)| Ok((decode(&fields, &at, f)?, decode(&values, &at, v)?)))
                    .collect(),
                other => Err(unexpected(&at, other)),
            }),
        )
    }

    /// Reads the list's items from `start` to `stop` (inclusive; negative counts from the
    /// end, as in Redis `LRANGE`).
    pub fn list_range<C: Codec + Clone>(
        &mut self,
        list: &ListHandle<C>,
        start: i64,
        stop: i64,
    ) -> CollectionRead<Vec<C::Value>> {
        let (key, codec) = (list.key().to_vec(), self.checked(list.codec().cloned()));
        let at = key.clone();
        self.collection_read(
            CollectionOp::ListRange { key, start, stop },
            Box::new(move |r| match r {
                CollectionResult::Items(items) => {
                    items.iter().map(|i| decode(&codec, &at, i)).collect()
                }
                other => Err(unexpected(&at, other)),
            }),
        )
    }

    /// Reads the list's length.
    pub fn list_len<C: Codec>(&mut self, list: &ListHandle<C>) -> CollectionRead<u64> {
        let key = list.key().to_vec();
        let at = key.clone();
        self.collection_read(
            CollectionOp::ListLen { key },
            Box::new(move |r| match r {
                CollectionResult::Count(n) => Ok(n),
                other => Err(unexpected(&at, other)),
            }),
        )
    }

    /// Moves the list's head to its tail and reads the item moved (`None` for an empty
    /// list): the round-robin pick, atomic with the rest of the transaction.
    pub fn list_rotate<C: Codec + Clone>(
        &mut self,
        list: &ListHandle<C>,
    ) -> CollectionRead<Option<C::Value>> {
        let (key, codec) = (list.key().to_vec(), self.checked(list.codec().cloned()));
        let at = key.clone();
        self.collection_read(
            CollectionOp::ListRotate { key },
            Box::new(move |r| match r {
                CollectionResult::Value(item) => item.map(|i| decode(&codec, &at, &i)).transpose(),
                other => Err(unexpected(&at, other)),
            }),
        )
    }

    /// Removes every item equal to `item` from the list in the branch being written (the success branch until
    /// [`or_else`](TypedTxn::or_else)).
    pub fn list_remove<C: Codec>(&mut self, list: &ListHandle<C>, item: &C::Value) -> &mut Self {
        let key = list.key().to_vec();
        if let Some(value) = self.encode(list.codec(), &key, item) {
            let op = CollectionOp::ListRemove { key, value };
            self.push(self.writing(), TxnOp::Collection(op));
        }
        self
    }

    /// Requires `key` to be attached to `lease` (`None`: to no lease).
    pub fn when_lease<K: crate::keyspace::PlainKey>(
        &mut self,
        key: &K,
        lease: Option<LeaseId>,
    ) -> &mut Self {
        let lease = lease.map_or(0, |l| l.0);
        self.push_compare(Compare::new(
            super::key_bytes(key),
            CompareOp::Equal,
            crate::CompareTarget::Lease(lease),
        ));
        self
    }
}

impl TxnOutcome {
    /// The typed result of a collection read; an error when the success branch did not run.
    ///
    /// # Errors
    /// `InvalidArgument` when the transaction ran its failure branch; `Codec` when a member,
    /// field or item does not decode.
    pub fn collection<T>(&self, read: &CollectionRead<T>) -> Result<T> {
        if !self.succeeded {
            return Err(Error::invalid_argument(
                "this read belongs to the transaction branch that did not run",
            ));
        }
        match self.results().get(read.index) {
            Some(OpResult::Collection(result)) => (read.decode)(result.clone()),
            other => Err(Error::internal(format!(
                "expected a collection result at position {}, found {other:?}",
                read.index
            ))),
        }
    }
}
