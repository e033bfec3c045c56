//! [`ListHandle`]: a typed list at a key.

use super::At;
use super::map::MapHandle;
use crate::keyspace::codec::Codec;
use crate::raw::escape_bytes;
use crate::{CollectionOp, CollectionResult};
use crate::{Error, Result};
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
    pub(in crate::keyspace::typed) fn writable(&self) -> Result<()> {
        self.at.writable()
    }

    /// The item codec, or why it could not be built.
    pub(in crate::keyspace::typed) fn codec(&self) -> Result<&C> {
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

    /// Atomically moves the head item to the tail, as [`rotate`](Self::rotate), and reads
    /// `field` of the map the item moved names ([`ItemMaps`]), in the same step: the item
    /// and the field's value (`None` when the map has no such field); `None` for an empty
    /// list. On Redis one script run (`LMOVE`, then `HGET`), on every other backend one
    /// transaction. A round robin over objects that each have a status learns the status of
    /// the object it hands out as it moves it:
    ///
    /// ```
    /// use keyplane_core::keyspace::{ItemMaps, Key, SegmentCodec, Text, TypedStore};
    ///
    /// #[derive(Key, Debug, Clone, PartialEq)]
    /// #[kv(template = "rr:group:{group}:active", list = SegmentCodec<u64>)]
    /// struct Active { group: u64 }
    ///
    /// #[derive(Key, Debug, Clone, PartialEq)]
    /// #[kv(template = "rr:key:{id}", hash = Text)]
    /// struct Object { id: u64 }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> keyplane_core::Result<()> {
    /// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
    /// let active = typed.list_at(&Active { group: 1 });
    /// let status = "status".to_string();
    /// for (id, state) in [(1, "active"), (2, "disabled")] {
    ///     active.push(&id).await?;
    ///     typed.map_at(&Object { id }).put(&status, &state.to_string()).await?;
    /// }
    /// // The map of item `id` is at `rr:key:{id}`.
    /// let objects = ItemMaps::of(
    ///     &active,
    ///     (&1, typed.map_at(&Object { id: 1 })),
    ///     (&2, &typed.map_at(&Object { id: 2 })),
    /// )?;
    /// let (id, state) = active.rotate_get(&objects, &status).await?.unwrap();
    /// assert_eq!((id, state.as_deref()), (1, Some("active")));
    /// let (id, state) = active.rotate_get(&objects, &status).await?.unwrap();
    /// assert_eq!((id, state.as_deref()), (2, Some("disabled")));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Codec` when the field does not encode (nothing is written), or the item or value
    /// read does not decode; `WrongType` on Redis when the moved item's map holds another
    /// type (nothing is written); backend errors.
    pub async fn rotate_get<F: Codec, V: Codec>(
        &self,
        maps: &ItemMaps<F, V>,
        field: &F::Value,
    ) -> Result<Option<(C::Value, Option<V::Value>)>> {
        let codec = self.codec()?;
        let like = &maps.like;
        let op = CollectionOp::ListRotateGet {
            key: self.at.key.clone(),
            map_prefix: maps.prefix.clone(),
            map_suffix: maps.suffix.clone(),
            field: like.at.encode(like.field_codec(), field)?,
        };
        match self.at.run(op).await? {
            CollectionResult::Rotated { item: None, .. } => Ok(None),
            CollectionResult::Rotated {
                item: Some(item),
                value,
            } => {
                let map = [&maps.prefix[..], &item, &maps.suffix].concat();
                let value = match value {
                    Some(bytes) => Some(
                        like.value_codec()?
                            .decode_for(&map, &bytes)
                            .map_err(|e| e.with_context("key", escape_bytes(&map)))?,
                    ),
                    None => None,
                };
                Ok(Some((self.at.decode(codec, &item)?, value)))
            }
            other => Err(self.at.unexpected("list rotate get", other)),
        }
    }
}

/// The maps a list's items name, for [`ListHandle::rotate_get`]: the map of item `i` is at a
/// prefix, `i` as the list encodes it, and a suffix (Redis `SORT`'s `prefix*suffix`
/// pattern), read with the field and value codecs of one of them.
#[derive(Clone)]
pub struct ItemMaps<F, V> {
    prefix: Vec<u8>,
    suffix: Vec<u8>,
    like: MapHandle<F, V>,
}

impl<F: Codec, V: Codec> ItemMaps<F, V> {
    /// The maps named like `a` and `b`, the maps of two distinct items of `list`: each key
    /// holds its item's encoding between the prefix and the suffix both share (`rr:key:7`
    /// and `rr:key:8` for items `7` and `8`: the prefix `rr:key:`, no suffix). The maps are
    /// read with the codecs of `a`'s.
    ///
    /// # Errors
    /// `Codec` when an item does not encode; `InvalidArgument` when the items encode alike,
    /// or the two keys do not share one prefix and suffix around their items, or share
    /// several (the pattern would be ambiguous).
    pub fn of<C: Codec>(
        list: &ListHandle<C>,
        a: (&C::Value, MapHandle<F, V>),
        b: (&C::Value, &MapHandle<F, V>),
    ) -> Result<Self> {
        let codec = list.codec()?;
        let (item_a, item_b) = (list.at.encode(codec, a.0)?, list.at.encode(codec, b.0)?);
        let (key_a, key_b) = (a.1.key(), b.1.key());
        let shared = key_a.iter().zip(key_b).take_while(|(x, y)| x == y).count();
        // Where the items may start: within the shared prefix, each key holding its item
        // there, and the rests after them alike.
        let found: Vec<usize> = (0..=shared)
            .filter(|&at| {
                key_a[at..].starts_with(&item_a)
                    && key_b[at..].starts_with(&item_b)
                    && key_a[at + item_a.len()..] == key_b[at + item_b.len()..]
            })
            .collect();
        let [at] = found[..] else {
            return Err(Error::invalid_argument(format!(
                "two items' maps name {} patterns of prefix, item and suffix, not one",
                found.len()
            ))
            .with_context("key", escape_bytes(key_a))
            .with_context("other key", escape_bytes(key_b)));
        };
        if item_a == item_b {
            return Err(Error::invalid_argument(
                "the two items encode alike: their maps cannot show the pattern",
            )
            .with_context("item", escape_bytes(&item_a)));
        }
        Ok(ItemMaps {
            prefix: key_a[..at].to_vec(),
            suffix: key_a[at + item_a.len()..].to_vec(),
            like: a.1,
        })
    }

    /// The maps at `prefix`, the item, `suffix`, read with the codecs of `like`.
    pub fn new(
        prefix: impl Into<Vec<u8>>,
        suffix: impl Into<Vec<u8>>,
        like: MapHandle<F, V>,
    ) -> Self {
        ItemMaps {
            prefix: prefix.into(),
            suffix: suffix.into(),
            like,
        }
    }

    /// What every map's key starts with, before the item.
    pub fn prefix(&self) -> &[u8] {
        &self.prefix
    }

    /// What every map's key ends with, after the item.
    pub fn suffix(&self) -> &[u8] {
        &self.suffix
    }
}

impl<F, V> fmt::Debug for ItemMaps<F, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemMaps")
            .field("prefix", &escape_bytes(&self.prefix))
            .field("suffix", &escape_bytes(&self.suffix))
            .finish()
    }
}

impl<C> fmt::Debug for ListHandle<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.at.debug(f, "ListHandle")
    }
}
