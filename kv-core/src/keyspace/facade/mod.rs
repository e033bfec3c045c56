//! The typed facade: typed keys and decoded values over any [`Store`].
//!
//! [`TypedStore`] wraps an `Arc<dyn Store>` and speaks in [`Key`]s, [`Prefix`]es and the
//! values of their codecs: single-key reads and writes (here), paged listing of a prefix
//! ([`list`](TypedStore::list)), a transaction builder ([`TypedTxn`]), watches
//! ([`TypedWatch`]) and collection handles ([`SetHandle`], [`MapHandle`], [`ListHandle`]).
//!
//! Codecs: the plain methods build the key's codec with `Default` (every stateless codec
//! implements it); the `*_with` variants take a codec value, for codecs with state such as
//! [`Encrypted`](super::Encrypted). Values are encoded before anything is sent, so a value
//! that fails to encode writes nothing.

mod collections;
mod list;
mod single;
mod txn;
mod watch;

pub use collections::{ListHandle, MapHandle, SetHandle, SetPage};
pub use list::{ListOptions, Page, Skipped};
pub use txn::{TxnOutcome, TxnRead, TypedTxn};
pub use watch::{TypedBatch, TypedEvent, TypedWatch};

use super::codec::Codec;
use super::key::{Key, Prefix};
use crate::entry::{Entry, LeaseId, escape_bytes};
use crate::error::{Error, Result};
use crate::store::Store;
use std::fmt;
use std::sync::Arc;

/// The value type stored under keys of type `K`: the `Value` of its codec.
pub type ValueOf<K> = <<K as Key>::Value as Codec>::Value;

/// Typed access to a [`Store`]: keys are [`Key`] values, values are decoded by the key's
/// codec, errors are [`Error`]s (`InvalidKey` for keys, `Codec` for values).
///
/// Cheap to clone; clones share the store.
///
/// ```
/// use kv_core::keyspace::TypedStore;
/// # use kv_core::keyspace::{decode_field, FieldInfo, Key, KeyError, Template, Text};
/// # use std::sync::LazyLock;
/// # #[derive(Debug, Clone, PartialEq)]
/// # struct TenantMetaKey { id: u64 }
/// # impl Key for TenantMetaKey {
/// #     const TEMPLATE: &'static str = "jxt/tenants/{id}/meta";
/// #     type Value = Text;
/// #     fn template() -> &'static Template {
/// #         static T: LazyLock<Template> =
/// #             LazyLock::new(|| Template::key(TenantMetaKey::TEMPLATE, None).unwrap());
/// #         &T
/// #     }
/// #     fn write(&self, out: &mut String) { Self::template().write(out, &[&self.id]) }
/// #     fn parse(raw: &str) -> Result<Self, KeyError> {
/// #         let t = Self::template();
/// #         let [id] = t.captures(raw)?;
/// #         Ok(TenantMetaKey { id: decode_field(t, raw, 1, "id", id)? })
/// #     }
/// #     fn fields(&self) -> Vec<(&'static str, String)> { vec![("id", self.id.to_string())] }
/// #     fn field_infos() -> Vec<FieldInfo> { vec![FieldInfo::of::<u64>("id")] }
/// # }
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> kv_core::Result<()> {
/// let typed = TypedStore::new(std::sync::Arc::new(kv_mem::MemStore::new()));
/// let key = TenantMetaKey { id: 7 };
/// typed.put(&key, &"ACME".to_string()).await?;
/// assert_eq!(typed.get(&key).await?.as_deref(), Some("ACME"));
/// assert!(typed.exists(&key).await?);
/// assert!(typed.delete(&key).await?);
/// assert_eq!(typed.get(&key).await?, None);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct TypedStore {
    store: Arc<dyn Store>,
}

impl TypedStore {
    /// Typed access to `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        TypedStore { store }
    }

    /// The underlying store, for raw access.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }
}

impl fmt::Debug for TypedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedStore")
            .field("backend", &self.store.capabilities().backend)
            .finish()
    }
}

/// A decoded value with the metadata of its entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versioned<V> {
    /// The decoded value.
    pub value: V,
    /// Revision of the write that created the key.
    pub create_revision: i64,
    /// Revision of the key's last write (usable in [`TypedTxn::when_mod_revision`]).
    pub mod_revision: i64,
    /// Number of writes since creation.
    pub version: i64,
    /// The lease the key is attached to, if any.
    pub lease: Option<LeaseId>,
}

impl<V> Versioned<V> {
    /// Decodes `entry`'s value with `codec`, keeping its metadata.
    ///
    /// # Errors
    /// [`ErrorKind::Codec`](crate::ErrorKind::Codec), with the key as context.
    pub(crate) fn decode<C: Codec<Value = V>>(codec: &C, entry: &Entry) -> Result<Self> {
        Ok(Versioned {
            value: decode_value(codec, entry)?,
            create_revision: entry.create_revision,
            mod_revision: entry.mod_revision,
            version: entry.version,
            lease: entry.lease,
        })
    }
}

/// The bytes of a typed key.
pub(crate) fn key_bytes<K: Key>(key: &K) -> Vec<u8> {
    key.encode().into_bytes()
}

/// The bytes of a typed prefix; never empty, always ending with the separator.
pub(crate) fn prefix_bytes<P: Prefix>(prefix: &P) -> Vec<u8> {
    prefix.encode().into_bytes()
}

/// Parses raw key bytes as a `K`.
///
/// # Errors
/// `InvalidKey` for bytes that are not UTF-8 or not a key of `K`'s template.
pub(crate) fn parse_key<K: Key>(raw: &[u8]) -> Result<K> {
    let text = std::str::from_utf8(raw).map_err(|e| {
        Error::invalid_key("the key is not UTF-8")
            .with_context("key", escape_bytes(raw))
            .with_context("template", K::TEMPLATE)
            .with_source(e)
    })?;
    Ok(K::parse(text)?)
}

/// Encodes a value, naming the key in the error.
pub(crate) fn encode_value<C: Codec>(codec: &C, key: &[u8], value: &C::Value) -> Result<Vec<u8>> {
    codec
        .encode(value)
        .map_err(|e| e.with_context("key", escape_bytes(key)))
}

/// Decodes an entry's value, naming the key in the error.
pub(crate) fn decode_value<C: Codec>(codec: &C, entry: &Entry) -> Result<C::Value> {
    codec
        .decode(&entry.value)
        .map_err(|e| e.with_context("key", escape_bytes(&entry.key)))
}
