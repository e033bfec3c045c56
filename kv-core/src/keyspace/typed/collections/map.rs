//! [`MapHandle`]: a typed map at a key.

use super::At;
use crate::keyspace::codec::Codec;
use crate::{CollectionOp, CollectionResult};
use crate::{Error, Result};
use std::fmt;

/// A typed map at a key (Redis HASH; one key per field on ordered backends).
///
/// ```
/// use keyplane_core::keyspace::{Key, Text, TypedStore};
///
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "bal:key:{id}", hash = Text)]
/// struct ApiKeyObject { id: u64 }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
/// let object = typed.map_at(&ApiKeyObject { id: 3 });
/// object.put(&"status".to_string(), &"active".to_string()).await?;
/// assert_eq!(object.get(&"status".to_string()).await?.as_deref(), Some("active"));
/// assert_eq!(object.all().await?.len(), 1);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct MapHandle<F, V> {
    pub(super) at: At,
    pub(super) fields: F,
    pub(super) values: Result<V>,
}

impl<F: Codec, V: Codec> MapHandle<F, V> {
    /// The collection's key bytes.
    pub fn key(&self) -> &[u8] {
        &self.at.key
    }

    /// `ReadOnly` when the key's template is read-only (an old layout's): writes are
    /// refused before reaching the store.
    pub(in crate::keyspace::typed) fn writable(&self) -> Result<()> {
        self.at.writable()
    }

    /// The field codec.
    pub(in crate::keyspace::typed) fn field_codec(&self) -> &F {
        &self.fields
    }

    /// The value codec, or why it could not be built.
    pub(in crate::keyspace::typed) fn value_codec(&self) -> Result<&V> {
        self.values.as_ref().map_err(Error::clone)
    }

    /// Sets `field` to `value`; returns whether the field is new.
    ///
    /// # Errors
    /// `Codec` when the field or value does not encode (nothing is written); backend errors.
    pub async fn put(&self, field: &F::Value, value: &V::Value) -> Result<bool> {
        let field = self.at.encode(&self.fields, field)?;
        let value = self.at.encode(self.value_codec()?, value)?;
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
        let codec = self.value_codec()?;
        let field = self.at.encode(&self.fields, field)?;
        match self
            .at
            .run(CollectionOp::MapGet {
                key: self.at.key.clone(),
                field,
            })
            .await?
        {
            CollectionResult::Value(Some(bytes)) => Ok(Some(self.at.decode(codec, &bytes)?)),
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
        let codec = self.value_codec()?;
        match self
            .at
            .run(CollectionOp::MapGetAll {
                key: self.at.key.clone(),
            })
            .await?
        {
            CollectionResult::Fields(fields) => fields
                .iter()
                .map(|(f, v)| Ok((self.at.decode(&self.fields, f)?, self.at.decode(codec, v)?)))
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
