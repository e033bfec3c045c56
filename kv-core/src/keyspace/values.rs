//! [`KeyspaceValues`]: a keyspace that carries its value types, as redb's `TableDefinition`
//! carries its value type, so that a reader decodes any entry of the schema without a
//! hand-written match.

use super::codec::{BuildCodec, Codec, CodecContext};
use super::key::{PlainKey, ValueOf};
use super::keyspace::Keyspace;
use crate::Result;
use std::fmt;

/// A keyspace whose every template names its value type: [`Value`](Self::Value) is an enum
/// with one variant per keyspace variant, and [`decode_value`](Self::decode_value) decodes
/// the bytes stored at a key with that key's codec.
///
/// `#[derive(Keyspace)]` with `#[kv(value_enum = Name)]` generates both the enum and this
/// impl. A variant marked `#[kv(raw)]` keeps the stored bytes (`Vec<u8>`) instead: for a
/// collection key (whose plain value, if any, is another program's), or a codec that needs
/// the key itself to decode (a value bound to its key by encryption).
///
/// ```
/// use keyplane_core::keyspace::{CodecContext, Json, Key, Keyspace, KeyspaceValues, Text};
///
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "app/{id}/name", value = Text)]
/// struct NameKey { id: u64 }
///
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "app/{id}/ports", value = Json<Vec<u16>>)]
/// struct PortsKey { id: u64 }
///
/// #[derive(Keyspace, Debug, Clone, PartialEq)]
/// #[kv(value_enum = AppValue)]
/// enum App {
///     Name(NameKey),
///     Ports(PortsKey),
/// }
///
/// let key = App::parse("app/7/ports")?;
/// let value = key.decode_value(b"[80,443]", &CodecContext::new())?;
/// assert_eq!(value, AppValue::Ports(vec![80, 443]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait KeyspaceValues: Keyspace {
    /// The decoded value of any key of the keyspace: one variant per template.
    type Value: Clone + fmt::Debug + Send + Sync + 'static;

    /// Decodes `bytes`, the value stored at this key, with its template's codec built from
    /// `context` (where state such as a keyring comes from).
    ///
    /// # Errors
    /// `Codec` when the bytes do not decode; `Config` when the codec needs state `context`
    /// lacks.
    fn decode_value(&self, bytes: &[u8], context: &CodecContext) -> Result<Self::Value>;
}

/// Decodes `bytes` with the codec of plain key type `K` built from `context`: what the
/// generated [`KeyspaceValues::decode_value`] calls for each template. A collection key is
/// not a [`PlainKey`], so a value variant for one must be `#[kv(raw)]`.
///
/// # Errors
/// As [`KeyspaceValues::decode_value`].
pub fn decode_plain<K: PlainKey>(bytes: &[u8], context: &CodecContext) -> Result<ValueOf<K>> {
    K::Value::build(context)?.decode(bytes)
}
