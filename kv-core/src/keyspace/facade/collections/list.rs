//! [`ListHandle`]: a typed list at a key.

use super::At;
use crate::collections::{CollectionOp, CollectionResult};
use crate::error::{Error, Result};
use crate::keyspace::codec::Codec;
use std::fmt;

/// A typed list at a key (Redis LIST; one key per item on ordered backends).
///
/// ```
/// use keyplane_core::keyspace::{Key, SegmentCodec, TypedStore};
///
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "bal:group:{group}:active", list = SegmentCodec<u64>)]
/// struct ActiveKeys { group: u64 }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
/// let active = typed.list_at(&ActiveKeys { group: 1 });
/// for id in [11, 12] {
///     active.push(&id).await?;
/// }
/// // Round robin: each rotation hands out the head and moves it to the tail.
/// assert_eq!(active.rotate().await?, Some(11));
/// assert_eq!(active.rotate().await?, Some(12));
/// assert_eq!(active.range(0, -1).await?, [11, 12]);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ListHandle<C> {
    pub(super) at: At,
    pub(super) codec: Result<C>,
}

impl<C: Codec> ListHandle<C> {
    /// The collection's key bytes.
    pub fn key(&self) -> &[u8] {
        &self.at.key
    }

    /// `ReadOnly` when the key's template is read-only (an old layout's): writes are
    /// refused before reaching the store.
    pub(crate) fn writable(&self) -> Result<()> {
        self.at.writable()
    }

    /// The item codec, or why it could not be built.
    pub(crate) fn codec(&self) -> Result<&C> {
        self.codec.as_ref().map_err(Error::clone)
    }

    /// Appends `item` at the tail; returns the new length.
    ///
    /// # Errors
    /// `Codec` when the item does not encode (nothing is written); backend errors.
    pub async fn push(&self, item: &C::Value) -> Result<u64> {
        let value = self.at.encode(self.codec()?, item)?;
        self.count(
            "list push",
            CollectionOp::ListPush {
                key: self.at.key.clone(),
                value,
            },
        )
        .await
    }

    /// Inserts `item` at the head (Redis `LPUSH`); returns the new length.
    ///
    /// # Errors
    /// `Codec` when the item does not encode (nothing is written); backend errors.
    pub async fn push_front(&self, item: &C::Value) -> Result<u64> {
        let value = self.at.encode(self.codec()?, item)?;
        self.count(
            "list push front",
            CollectionOp::ListPushFront {
                key: self.at.key.clone(),
                value,
            },
        )
        .await
    }

    /// Removes every item equal to `item`; returns how many.
    ///
    /// # Errors
    /// `Codec` when the item does not encode; backend errors.
    pub async fn remove(&self, item: &C::Value) -> Result<u64> {
        let value = self.at.encode(self.codec()?, item)?;
        self.count(
            "list remove",
            CollectionOp::ListRemove {
                key: self.at.key.clone(),
                value,
            },
        )
        .await
    }

    /// The number of items.
    ///
    /// # Errors
    /// Backend errors.
    pub async fn len(&self) -> Result<u64> {
        self.count(
            "list len",
            CollectionOp::ListLen {
                key: self.at.key.clone(),
            },
        )
        .await
    }

    /// Whether the list has no items.
    ///
    /// # Errors
    /// Backend errors.
    pub async fn is_empty(&self) -> Result<bool> {
        Ok(self.len().await? == 0)
    }

    async fn count(&self, what: &str, op: CollectionOp) -> Result<u64> {
        match self.at.run(op).await? {
            CollectionResult::Count(n) => Ok(n),
            other => Err(self.at.unexpected(what, other)),
        }
    }

    /// Items `start..=stop`, head first; negative indexes count from the tail (`-1` is the
    /// last item), as Redis `LRANGE`.
    ///
    /// # Errors
    /// `Codec` when an item does not decode; backend errors.
    pub async fn range(&self, start: i64, stop: i64) -> Result<Vec<C::Value>> {
        let codec = self.codec()?;
        let op = CollectionOp::ListRange {
            key: self.at.key.clone(),
            start,
            stop,
        };
        match self.at.run(op).await? {
            CollectionResult::Items(items) => self.at.decode_all(codec, items),
            other => Err(self.at.unexpected("list range", other)),
        }
    }

    /// Atomically moves the head item to the tail and returns it (round-robin); `None` for
    /// an empty list.
    ///
    /// # Errors
    /// `Codec` when the item does not decode; backend errors.
    pub async fn rotate(&self) -> Result<Option<C::Value>> {
        let codec = self.codec()?;
        match self
            .at
            .run(CollectionOp::ListRotate {
                key: self.at.key.clone(),
            })
            .await?
        {
            CollectionResult::Value(Some(bytes)) => Ok(Some(self.at.decode(codec, &bytes)?)),
            CollectionResult::Value(None) => Ok(None),
            other => Err(self.at.unexpected("list rotate", other)),
        }
    }
}

impl<C> fmt::Debug for ListHandle<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.at.debug(f, "ListHandle")
    }
}
