//! [`ValueInfo`] and [`ValueFormat`]: what a tool that shows and checks values (`kvctl`, its
//! UI, a schema manifest) knows of a template's value without its Rust type.

use crate::{Error, ErrorKind, Result};
use std::fmt;
use std::sync::Arc;

/// How a codec's stored bytes read ([`Codec::FORMAT`](crate::keyspace::Codec::FORMAT)): tools show a JSON value as JSON, a
/// text value as text and anything else as bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ValueFormat {
    /// A JSON text ([`Json`](crate::keyspace::Json)).
    Json,
    /// UTF-8 text ([`Text`](crate::keyspace::Text), a segment type's encoding).
    Text,
    /// Any bytes ([`Bytes`](crate::keyspace::Bytes), and every codec that says nothing).
    Bytes,
    /// No bytes at all ([`Empty`](crate::keyspace::Empty): the key's presence is the value).
    Empty,
}

impl ValueFormat {
    /// The format's name as a manifest writes it (`json`, `text`, `bytes`, `empty`).
    pub fn as_str(self) -> &'static str {
        match self {
            ValueFormat::Json => "json",
            ValueFormat::Text => "text",
            ValueFormat::Bytes => "bytes",
            ValueFormat::Empty => "empty",
        }
    }

    /// Whether `bytes` are in the format at all: JSON that parses, UTF-8 text, no bytes for
    /// [`Empty`](ValueFormat::Empty); any bytes for [`Bytes`](ValueFormat::Bytes).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidValue`] naming the format.
    pub fn check(self, bytes: &[u8]) -> Result<()> {
        let why = match self {
            ValueFormat::Json => serde_json::from_slice::<serde::de::IgnoredAny>(bytes)
                .err()
                .map(|e| format!("the value is not JSON: {e}")),
            ValueFormat::Text => std::str::from_utf8(bytes)
                .err()
                .map(|e| format!("the value is not UTF-8 text: {e}")),
            ValueFormat::Bytes => None,
            ValueFormat::Empty => (!bytes.is_empty()).then(|| "the value must be empty".to_owned()),
        };
        match why {
            Some(why) => Err(Error::new(ErrorKind::InvalidValue, why)),
            None => Ok(()),
        }
    }
}

impl fmt::Display for ValueFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The check of a value's bytes stored at a raw key.
type CheckFn = dyn Fn(&str, &[u8]) -> Result<()> + Send + Sync;

/// What a template's value is, for tools without its Rust type: its format, its JSON Schema
/// when it has one, and a check that decides whether bytes stored at a key are a value its
/// readers accept.
///
/// A derived key's check decodes with the key's own codec (built without state) and applies
/// the key's [`check_value`](crate::keyspace::Key::check_value); a schema loaded from a manifest brings its
/// own check ([`ValueInfo::custom`]).
#[derive(Clone)]
pub struct ValueInfo {
    /// How the stored bytes read.
    pub format: ValueFormat,
    /// The JSON Schema of a JSON value, when the schema knows one: derived keys whose value
    /// is `Json<T>` with `T: schemars::JsonSchema` have it with feature `json-schema`.
    pub json_schema: Option<Arc<serde_json::Value>>,
    check: Arc<CheckFn>,
}

impl ValueInfo {
    /// A value known only by its format: bytes in the format are a value ([`ValueFormat::check`]).
    pub fn of_format(format: ValueFormat) -> Self {
        ValueInfo::custom(format, None, move |_, bytes| format.check(bytes))
    }

    /// A value known from data: `check` decides whether bytes stored at a raw key are a value.
    pub fn custom(
        format: ValueFormat,
        json_schema: Option<serde_json::Value>,
        check: impl Fn(&str, &[u8]) -> Result<()> + Send + Sync + 'static,
    ) -> Self {
        ValueInfo {
            format,
            json_schema: json_schema.map(Arc::new),
            check: Arc::new(check),
        }
    }

    /// Whether `bytes`, stored at raw key `key`, are a value of the template.
    ///
    /// # Errors
    /// The codec's error (kind [`Codec`](ErrorKind::Codec)) when the bytes do not decode,
    /// [`InvalidValue`](ErrorKind::InvalidValue) when the value disagrees with its key or a
    /// loaded schema's check refuses it; a codec that needs state (`Encrypted`) fails to
    /// build without it.
    pub fn check(&self, key: &str, bytes: &[u8]) -> Result<()> {
        (self.check)(key, bytes)
    }
}

impl fmt::Debug for ValueInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ValueInfo")
            .field("format", &self.format)
            .field("json_schema", &self.json_schema.is_some())
            .finish_non_exhaustive()
    }
}
