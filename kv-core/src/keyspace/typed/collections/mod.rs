//! Typed handles on the collections stored at a key: [`SetHandle`], [`MapHandle`],
//! [`ListHandle`].
//!
//! A collection lives at a typed key; its members, fields and items are encoded by codecs,
//! by default the key's own codec (for a map, fields are [`Text`] unless given). Reading a
//! member that does not decode is an error naming the key, never a silently shorter result.
//! [`TypedStore::delete`] of the key deletes the whole collection.

use super::{TypedStore, key_bytes};
use crate::Store;
use crate::keyspace::codec::{Codec, Text};
use crate::keyspace::key::{Key, ListKey, MapKey, SetKey};
use crate::keyspace::template::Template;
use crate::raw::escape_bytes;
use crate::{CollectionOp, CollectionResult};
use crate::{Error, Result};
use std::fmt;
use std::sync::Arc;

mod list;
mod map;
mod set;

pub use list::{ItemMaps, ListHandle};
pub use map::MapHandle;
pub use set::{SetHandle, SetPage};

impl TypedStore {
    /// The set stored at `key`, whose members are values of the key's codec.
    ///
    /// A codec that cannot be built (state this typed store was not given) makes every
    /// operation of the handle fail with `Config`, before anything is sent.
    pub fn set_at<K: SetKey>(&self, key: &K) -> SetHandle<K::Value> {
        SetHandle {
            at: At::new(self, key),
            codec: self.codec::<K>(),
        }
    }

    /// The map stored at `key`: [`Text`] fields, values of the key's codec (built as for
    /// [`set_at`](Self::set_at)).
    pub fn map_at<K: MapKey>(&self, key: &K) -> MapHandle<Text, K::Value> {
        MapHandle {
            at: At::new(self, key),
            fields: Text,
            values: self.codec::<K>(),
        }
    }

    /// The list stored at `key`, whose items are values of the key's codec (built as for
    /// [`set_at`](Self::set_at)).
    pub fn list_at<K: ListKey>(&self, key: &K) -> ListHandle<K::Value> {
        ListHandle {
            at: At::new(self, key),
            codec: self.codec::<K>(),
        }
    }
}

/// Where a collection lives: the store and the key.
#[derive(Clone)]
pub(super) struct At {
    pub(super) store: Arc<dyn Store>,
    pub(super) key: Vec<u8>,
    template: &'static Template,
}

impl At {
    fn new<K: Key>(typed: &TypedStore, key: &K) -> Self {
        At {
            store: Arc::clone(&typed.store),
            key: key_bytes(key),
            template: K::template(),
        }
    }

    /// Refuses writes to a collection of a read-only template.
    pub(super) fn writable(&self) -> Result<()> {
        super::writable(self.template, &self.key)
    }

    pub(super) async fn run(&self, op: CollectionOp) -> Result<CollectionResult> {
        if op.is_write() {
            self.writable()?;
        }
        self.store.collection(op).await
    }

    pub(super) fn encode<C: Codec>(&self, codec: &C, value: &C::Value) -> Result<Vec<u8>> {
        super::encode_value(codec, &self.key, value)
    }

    pub(super) fn decode<C: Codec>(&self, codec: &C, bytes: &[u8]) -> Result<C::Value> {
        codec
            .decode_for(&self.key, bytes)
            .map_err(|e| e.with_context("key", escape_bytes(&self.key)))
    }

    pub(super) fn decode_all<C: Codec>(
        &self,
        codec: &C,
        items: Vec<Vec<u8>>,
    ) -> Result<Vec<C::Value>> {
        items.iter().map(|b| self.decode(codec, b)).collect()
    }

    pub(super) fn unexpected(&self, op: &str, got: CollectionResult) -> Error {
        Error::internal(format!("{op}: unexpected collection result {got:?}"))
            .with_context("key", escape_bytes(&self.key))
    }

    pub(super) fn debug(&self, f: &mut fmt::Formatter<'_>, name: &str) -> fmt::Result {
        f.debug_struct(name)
            .field("key", &escape_bytes(&self.key))
            .finish()
    }
}
