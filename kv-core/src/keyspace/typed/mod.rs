//! The typed facade over any [`Store`]: see [`TypedStore`].

mod collections;
mod list;
mod mirror;
mod single;
mod txn;
mod txn_collections;
mod txn_reads;
mod update;
mod watch;

pub use collections::{ItemMaps, ListHandle, MapHandle, SetHandle, SetPage};
pub use list::{ListOptions, Page, Skipped};
pub use txn::{TxnOutcome, TxnRead, TypedTxn};
pub use txn_reads::CollectionRead;
pub use watch::{TypedBatch, TypedEvent, TypedWatch};

use super::codec::{BuildCodec, Codec, CodecContext};
use super::key::{Key, Prefix, ValueOf};
use super::template::Template;
use crate::Entry;
use crate::LeaseId;
use crate::Store;
use crate::raw::escape_bytes;
use crate::{Error, Result};
use std::fmt;
use std::sync::Arc;

/// Typed access to a [`Store`]: keys are [`Key`] values, values are decoded by the key's
/// codec, errors are [`Error`]s (`InvalidKey` for keys, `Codec` for values).
///
/// It covers single keys (`get`, `put`, `delete`, `exists`), paged listing of a directory
/// ([`list`](TypedStore::list)), transactions ([`txn`](TypedStore::txn), [`TypedTxn`]),
/// watches ([`watch`](TypedStore::watch), [`TypedWatch`]) and the collections stored at a key
/// ([`set_at`](TypedStore::set_at), [`map_at`](TypedStore::map_at),
/// [`list_at`](TypedStore::list_at)).
///
/// Codecs: each operation builds the key's codec ([`BuildCodec`]): stateless codecs from
/// nothing, codecs with state (the `Keyring` of `Encrypted`, feature `encryption`) from the
/// state given with [`with_codec_state`](Self::with_codec_state). Values are encoded before
/// anything is sent, so a value that fails to encode, or a codec that cannot be built, writes
/// nothing.
///
/// Cheap to clone; clones share the store and the codec state.
///
/// ```
/// use keyplane_core::keyspace::{Json, Key, TypedStore};
/// use std::sync::Arc;
///
/// keyplane_core::text_segment!(pub Service, charset = "[a-z0-9-]", max_len = 63, policy = Reject);
///
/// #[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
/// #[serde(rename_all = "camelCase")]
/// struct DatabaseConfig { host: String, max_connections: u32 }
///
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "jxt/tenants/{id}/database/{service}", value = Json<DatabaseConfig>)]
/// struct TenantDatabaseKey { id: u64, service: Service }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let typed = TypedStore::new(Arc::new(keyplane_mem::MemStore::new()));
/// let key = TenantDatabaseKey { id: 7, service: Service::new("mysql").unwrap() };
/// let config = DatabaseConfig { host: "10.0.0.5".into(), max_connections: 20 };
///
/// typed.put(&key, &config).await?;
/// assert_eq!(typed.get(&key).await?, Some(config));
/// let raw = typed.store().get(b"jxt/tenants/7/database/mysql").await?.unwrap();
/// assert_eq!(raw.value, br#"{"host":"10.0.0.5","maxConnections":20}"#);
///
/// assert!(typed.exists(&key).await?);
/// assert!(typed.delete(&key).await?.existed());
/// assert_eq!(typed.get(&key).await?, None);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct TypedStore {
    store: Arc<dyn Store>,
    context: CodecContext,
}

impl TypedStore {
    /// Typed access to `store`, with no codec state: keys with stateless codecs only.
    pub fn new(store: Arc<dyn Store>) -> Self {
        TypedStore {
            store,
            context: CodecContext::new(),
        }
    }

    /// The same typed store with `state` for the codecs that need it, such as the `Keyring`
    /// of `Encrypted` (feature `encryption`); a value of the same type given before is
    /// replaced. See [`BuildCodec`].
    pub fn with_codec_state<T: Send + Sync + 'static>(mut self, state: Arc<T>) -> Self {
        self.context = self.context.with(state);
        self
    }

    /// The state codecs are built from.
    pub fn codec_context(&self) -> &CodecContext {
        &self.context
    }

    /// The codec of `K`, as this typed store builds it for each operation: to decode values
    /// read through [`store`](Self::store).
    ///
    /// # Errors
    /// `Config` when the codec needs state this typed store was not given.
    pub fn codec<K: Key>(&self) -> Result<K::Value> {
        K::Value::build(&self.context)
    }

    /// The underlying store, for raw access.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The store's current revision: a start for a watch, or a bound for a read at a
    /// revision.
    ///
    /// # Errors
    /// Backend errors.
    pub async fn revision(&self) -> Result<i64> {
        self.store.revision().await
    }
}

impl From<Arc<dyn Store>> for TypedStore {
    fn from(store: Arc<dyn Store>) -> Self {
        TypedStore::new(store)
    }
}

impl fmt::Debug for TypedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedStore")
            .field("backend", &self.store.capabilities().backend)
            .field("codec_state", &self.context)
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
    fn decode<C: Codec<Value = V>>(codec: &C, entry: &Entry) -> Result<Self> {
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
fn key_bytes<K: Key>(key: &K) -> Vec<u8> {
    key.encode().into_bytes()
}

/// The bytes of a typed key that is about to be written, once its template is not
/// read-only.
///
/// # Errors
/// `ReadOnly` for a key of a read-only template (an old layout's, [`Template::read_only`]).
fn writable_key<K: Key>(key: &K) -> Result<Vec<u8>> {
    let bytes = key_bytes(key);
    writable(K::template(), &bytes)?;
    Ok(bytes)
}

/// Refuses a write to `key`, whose template is `template`, when the template is read-only.
///
/// # Errors
/// `ReadOnly` naming the key and its template.
fn writable(template: &Template, key: &[u8]) -> Result<()> {
    if template.is_read_only() {
        let what = if template.kind() == crate::keyspace::TemplateKind::Prefix {
            "the directory belongs to a read-only template"
        } else {
            "the key belongs to a read-only template"
        };
        return Err(Error::new(
            crate::ErrorKind::ReadOnly,
            format!("{what} (an old layout, read and migrated but never written)"),
        )
        .with_context("key", escape_bytes(key))
        .with_context("template", template.source()));
    }
    Ok(())
}

/// The bytes of a typed prefix, checked to end with its template's separator: a prefix that
/// does not (a faulty hand-written impl) would reach into sibling directories (`tenants/1`
/// covers `tenants/10/...`), so it is refused before any read, watch or delete.
///
/// # Errors
/// `InvalidKey` naming the prefix.
fn prefix_bytes<P: Prefix>(prefix: &P) -> Result<Vec<u8>> {
    let encoded = prefix.encode();
    let sep = P::template().separator().as_char();
    if encoded.len() < 2 || !encoded.ends_with(sep) {
        return Err(Error::invalid_key(format!(
            "a prefix must be a directory ending with `{sep}`"
        ))
        .with_context("prefix", &encoded)
        .with_context("template", P::TEMPLATE));
    }
    Ok(encoded.into_bytes())
}

/// Parses raw key bytes as a `K`.
///
/// # Errors
/// `InvalidKey` for bytes that are not UTF-8 or not a key of `K`'s template.
fn parse_key<K: Key>(raw: &[u8]) -> Result<K> {
    let text = std::str::from_utf8(raw).map_err(|e| {
        Error::invalid_key("the key is not UTF-8")
            .with_context("key", escape_bytes(raw))
            .with_context("template", K::TEMPLATE)
            .with_source(e)
    })?;
    Ok(K::parse(text)?)
}

/// Encodes a value, naming the key in the error.
/// `InvalidValue` when `value` disagrees with `key` ([`Key::check_value`]).
fn agreeing<K: Key>(key: &K, value: &ValueOf<K>) -> Result<()> {
    key.check_value(value).map_err(|why| {
        crate::Error::new(
            crate::ErrorKind::InvalidValue,
            format!("the value disagrees with its key: {why}"),
        )
        .with_context("key", key.encode())
    })
}

fn encode_value<C: Codec>(codec: &C, key: &[u8], value: &C::Value) -> Result<Vec<u8>> {
    codec
        .encode_for(key, value)
        .map_err(|e| e.with_context("key", escape_bytes(key)))
}

/// Decodes an entry's value, naming the key in the error.
fn decode_value<C: Codec>(codec: &C, entry: &Entry) -> Result<C::Value> {
    codec
        .decode_for(&entry.key, &entry.value)
        .map_err(|e| e.with_context("key", escape_bytes(&entry.key)))
}
