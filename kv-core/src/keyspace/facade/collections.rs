//! Typed handles on the collections stored at a key: [`SetHandle`], [`MapHandle`],
//! [`ListHandle`].
//!
//! A collection lives at a typed key; its members, fields and items are encoded by codecs,
//! by default the key's own codec (for a map, fields are [`Text`] unless given). Reading a
//! member that does not decode is an error naming the key, never a silently shorter result.
//! [`TypedStore::delete`] of the key deletes the whole collection.

use super::{TypedStore, key_bytes};
use crate::collections::{CollectionOp, CollectionResult};
use crate::entry::escape_bytes;
use crate::error::{Error, ErrorKind, Result};
use crate::keyspace::codec::Codec;
use crate::keyspace::codec_plain::Text;
use crate::keyspace::key::Key;
use crate::store::Store;
use std::fmt;
use std::sync::Arc;

impl TypedStore {
    /// The set stored at `key`, whose members are values of the key's codec.
    pub fn set_at<K: Key>(&self, key: &K) -> SetHandle<K::Value>
    where
        K::Value: Default,
    {
        self.set_at_with(key, K::Value::default())
    }

    /// [`set_at`](Self::set_at) with an explicit member codec.
    pub fn set_at_with<K: Key>(&self, key: &K, codec: K::Value) -> SetHandle<K::Value> {
        SetHandle {
            at: At::new(self, key),
            codec,
        }
    }

    /// The map stored at `key`: [`Text`] fields, values of the key's codec.
    pub fn map_at<K: Key>(&self, key: &K) -> MapHandle<Text, K::Value>
    where
        K::Value: Default,
    {
        self.map_at_with(key, Text, K::Value::default())
    }

    /// [`map_at`](Self::map_at) with explicit field and value codecs.
    pub fn map_at_with<K: Key, F: Codec>(
        &self,
        key: &K,
        fields: F,
        values: K::Value,
    ) -> MapHandle<F, K::Value> {
        MapHandle {
            at: At::new(self, key),
            fields,
            values,
        }
    }

    /// The list stored at `key`, whose items are values of the key's codec.
    pub fn list_at<K: Key>(&self, key: &K) -> ListHandle<K::Value>
    where
        K::Value: Default,
    {
        self.list_at_with(key, K::Value::default())
    }

    /// [`list_at`](Self::list_at) with an explicit item codec.
    pub fn list_at_with<K: Key>(&self, key: &K, codec: K::Value) -> ListHandle<K::Value> {
        ListHandle {
            at: At::new(self, key),
            codec,
        }
    }
}

/// Where a collection lives: the store and the key.
#[derive(Clone)]
struct At {
    store: Arc<dyn Store>,
    key: Vec<u8>,
}

impl At {
    fn new<K: Key>(typed: &TypedStore, key: &K) -> Self {
        At {
            store: Arc::clone(&typed.store),
            key: key_bytes(key),
        }
    }

    async fn run(&self, op: CollectionOp) -> Result<CollectionResult> {
        self.store.collection(op).await
    }

    fn encode<C: Codec>(&self, codec: &C, value: &C::Value) -> Result<Vec<u8>> {
        super::encode_value(codec, &self.key, value)
    }

    fn decode<C: Codec>(&self, codec: &C, bytes: &[u8]) -> Result<C::Value> {
        codec
            .decode(bytes)
            .map_err(|e| e.with_context("key", escape_bytes(&self.key)))
    }

    fn decode_all<C: Codec>(&self, codec: &C, items: Vec<Vec<u8>>) -> Result<Vec<C::Value>> {
        items.iter().map(|b| self.decode(codec, b)).collect()
    }

    fn unexpected(&self, op: &str, got: CollectionResult) -> Error {
        Error::new(
            ErrorKind::Backend,
            format!("{op}: unexpected collection result {got:?}"),
        )
        .with_context("key", escape_bytes(&self.key))
    }

    fn debug(&self, f: &mut fmt::Formatter<'_>, name: &str) -> fmt::Result {
        f.debug_struct(name)
            .field("key", &escape_bytes(&self.key))
            .finish()
    }
}

/// A typed set at a key (Redis SET; one key per member on ordered backends).
///
/// ```
/// use kv_core::keyspace::{Key, SegmentCodec, TypedStore};
///
/// kv_core::text_segment!(pub Code, charset = "[a-z0-9_-]", max_len = 63, policy = Reject);
///
/// /// The profiles of a realm and provider: a set of profile codes.
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "nxc:map:{realm}:{provider}", value = SegmentCodec<Code>)]
/// struct ProfileMapKey { realm: Code, provider: Code }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> kv_core::Result<()> {
/// let typed = TypedStore::new(std::sync::Arc::new(kv_mem::MemStore::new()));
/// let code = |s: &str| Code::new(s).unwrap();
/// let profiles = typed.set_at(&ProfileMapKey { realm: code("prod"), provider: code("wx") });
/// assert!(profiles.add(&code("p1")).await?);
/// assert!(!profiles.add(&code("p1")).await?);
/// assert!(profiles.contains(&code("p1")).await?); // the ownership check
/// assert_eq!(profiles.members().await?, [code("p1")]);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct SetHandle<C> {
    at: At,
    codec: C,
}

/// One page of a set scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetPage<V> {
    /// The members of this page.
    pub members: Vec<V>,
    /// Pass to [`SetHandle::scan`] for the next page; `None` when the scan is complete.
    pub cursor: Option<Vec<u8>>,
}

impl<C: Codec> SetHandle<C> {
    /// The collection's key bytes.
    pub fn key(&self) -> &[u8] {
        &self.at.key
    }

    /// The member codec.
    pub fn codec(&self) -> &C {
        &self.codec
    }

    /// Adds `member`; returns whether it was new.
    ///
    /// # Errors
    /// `Codec` when the member does not encode (nothing is written); backend errors.
    pub async fn add(&self, member: &C::Value) -> Result<bool> {
        let member = self.at.encode(&self.codec, member)?;
        match self
            .at
            .run(CollectionOp::SetAdd {
                key: self.at.key.clone(),
                member,
            })
            .await?
        {
            CollectionResult::Changed(changed) => Ok(changed),
            other => Err(self.at.unexpected("set add", other)),
        }
    }

    /// Removes `member`; returns whether it was there.
    ///
    /// # Errors
    /// `Codec` when the member does not encode; backend errors.
    pub async fn remove(&self, member: &C::Value) -> Result<bool> {
        let member = self.at.encode(&self.codec, member)?;
        match self
            .at
            .run(CollectionOp::SetRemove {
                key: self.at.key.clone(),
                member,
            })
            .await?
        {
            CollectionResult::Changed(changed) => Ok(changed),
            other => Err(self.at.unexpected("set remove", other)),
        }
    }

    /// Whether `member` is in the set.
    ///
    /// # Errors
    /// `Codec` when the member does not encode; backend errors.
    pub async fn contains(&self, member: &C::Value) -> Result<bool> {
        let member = self.at.encode(&self.codec, member)?;
        let op = CollectionOp::SetContains {
            key: self.at.key.clone(),
            member,
        };
        match self.at.run(op).await? {
            CollectionResult::Contains(found) => Ok(found),
            other => Err(self.at.unexpected("set contains", other)),
        }
    }

    /// Every member, in ascending byte order of their encodings. For large sets prefer
    /// [`scan`](Self::scan).
    ///
    /// # Errors
    /// `Codec` when a stored member does not decode; backend errors.
    pub async fn members(&self) -> Result<Vec<C::Value>> {
        match self
            .at
            .run(CollectionOp::SetMembers {
                key: self.at.key.clone(),
            })
            .await?
        {
            CollectionResult::Members(members) => self.at.decode_all(&self.codec, members),
            other => Err(self.at.unexpected("set members", other)),
        }
    }

    /// One page of about `limit` members, from `cursor` (`None` for the first page).
    ///
    /// # Errors
    /// `InvalidArgument` for a zero limit; `Codec` when a member does not decode; backend
    /// errors.
    pub async fn scan(&self, cursor: Option<Vec<u8>>, limit: usize) -> Result<SetPage<C::Value>> {
        let op = CollectionOp::SetScan {
            key: self.at.key.clone(),
            cursor,
            limit,
        };
        match self.at.run(op).await? {
            CollectionResult::Page { members, cursor } => Ok(SetPage {
                members: self.at.decode_all(&self.codec, members)?,
                cursor,
            }),
            other => Err(self.at.unexpected("set scan", other)),
        }
    }
}

impl<C> fmt::Debug for SetHandle<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.at.debug(f, "SetHandle")
    }
}

/// A typed map at a key (Redis HASH; one key per field on ordered backends).
///
/// ```
/// use kv_core::keyspace::{Key, Text, TypedStore};
///
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "bal:key:{id}", value = Text)]
/// struct ApiKeyObject { id: u64 }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> kv_core::Result<()> {
/// let typed = TypedStore::new(std::sync::Arc::new(kv_mem::MemStore::new()));
/// let object = typed.map_at(&ApiKeyObject { id: 3 });
/// object.put(&"status".to_string(), &"active".to_string()).await?;
/// assert_eq!(object.get(&"status".to_string()).await?.as_deref(), Some("active"));
/// assert_eq!(object.all().await?.len(), 1);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct MapHandle<F, V> {
    at: At,
    fields: F,
    values: V,
}

impl<F: Codec, V: Codec> MapHandle<F, V> {
    /// The collection's key bytes.
    pub fn key(&self) -> &[u8] {
        &self.at.key
    }

    /// The field codec.
    pub fn field_codec(&self) -> &F {
        &self.fields
    }

    /// The value codec.
    pub fn value_codec(&self) -> &V {
        &self.values
    }

    /// Sets `field` to `value`; returns whether the field is new.
    ///
    /// # Errors
    /// `Codec` when the field or value does not encode (nothing is written); backend errors.
    pub async fn put(&self, field: &F::Value, value: &V::Value) -> Result<bool> {
        let field = self.at.encode(&self.fields, field)?;
        let value = self.at.encode(&self.values, value)?;
        let op = CollectionOp::MapPut {
            key: self.at.key.clone(),
            field,
            value,
        };
        match self.at.run(op).await? {
            CollectionResult::Changed(new) => Ok(new),
            other => Err(self.at.unexpected("map put", other)),
        }
    }

    /// The value of `field`, if set.
    ///
    /// # Errors
    /// `Codec` when the field does not encode or the value does not decode; backend errors.
    pub async fn get(&self, field: &F::Value) -> Result<Option<V::Value>> {
        let field = self.at.encode(&self.fields, field)?;
        match self
            .at
            .run(CollectionOp::MapGet {
                key: self.at.key.clone(),
                field,
            })
            .await?
        {
            CollectionResult::Value(Some(bytes)) => Ok(Some(self.at.decode(&self.values, &bytes)?)),
            CollectionResult::Value(None) => Ok(None),
            other => Err(self.at.unexpected("map get", other)),
        }
    }

    /// Deletes `field`; returns whether it was set.
    ///
    /// # Errors
    /// `Codec` when the field does not encode; backend errors.
    pub async fn remove(&self, field: &F::Value) -> Result<bool> {
        let field = self.at.encode(&self.fields, field)?;
        match self
            .at
            .run(CollectionOp::MapDelete {
                key: self.at.key.clone(),
                field,
            })
            .await?
        {
            CollectionResult::Changed(was) => Ok(was),
            other => Err(self.at.unexpected("map delete", other)),
        }
    }

    /// Every field with its value, ascending by the fields' encodings.
    ///
    /// # Errors
    /// `Codec` when a field or value does not decode; backend errors.
    pub async fn all(&self) -> Result<Vec<(F::Value, V::Value)>> {
        match self
            .at
            .run(CollectionOp::MapGetAll {
                key: self.at.key.clone(),
            })
            .await?
        {
            CollectionResult::Fields(fields) => fields
                .iter()
                .map(|(f, v)| {
                    Ok((
                        self.at.decode(&self.fields, f)?,
                        self.at.decode(&self.values, v)?,
                    ))
                })
                .collect(),
            other => Err(self.at.unexpected("map get all", other)),
        }
    }
}

impl<F, V> fmt::Debug for MapHandle<F, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.at.debug(f, "MapHandle")
    }
}

/// A typed list at a key (Redis LIST; one key per item on ordered backends).
///
/// ```
/// use kv_core::keyspace::{Key, SegmentCodec, TypedStore};
///
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "bal:group:{group}:active", value = SegmentCodec<u64>)]
/// struct ActiveKeys { group: u64 }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> kv_core::Result<()> {
/// let typed = TypedStore::new(std::sync::Arc::new(kv_mem::MemStore::new()));
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
    at: At,
    codec: C,
}

impl<C: Codec> ListHandle<C> {
    /// The collection's key bytes.
    pub fn key(&self) -> &[u8] {
        &self.at.key
    }

    /// The item codec.
    pub fn codec(&self) -> &C {
        &self.codec
    }

    /// Appends `item` at the tail; returns the new length.
    ///
    /// # Errors
    /// `Codec` when the item does not encode (nothing is written); backend errors.
    pub async fn push(&self, item: &C::Value) -> Result<u64> {
        let value = self.at.encode(&self.codec, item)?;
        self.count(
            "list push",
            CollectionOp::ListPush {
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
        let value = self.at.encode(&self.codec, item)?;
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
        let op = CollectionOp::ListRange {
            key: self.at.key.clone(),
            start,
            stop,
        };
        match self.at.run(op).await? {
            CollectionResult::Items(items) => self.at.decode_all(&self.codec, items),
            other => Err(self.at.unexpected("list range", other)),
        }
    }

    /// Atomically moves the head item to the tail and returns it (round-robin); `None` for
    /// an empty list.
    ///
    /// # Errors
    /// `Codec` when the item does not decode; backend errors.
    pub async fn rotate(&self) -> Result<Option<C::Value>> {
        match self
            .at
            .run(CollectionOp::ListRotate {
                key: self.at.key.clone(),
            })
            .await?
        {
            CollectionResult::Value(Some(bytes)) => Ok(Some(self.at.decode(&self.codec, &bytes)?)),
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
