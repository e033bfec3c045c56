//! The [`Codec`] trait: how a key's value is turned into bytes and back.

use crate::error::{Error, ErrorKind, Result};

/// Encodes and decodes the values stored under a key.
///
/// A key type names its codec ([`Key::Value`](super::Key::Value)); the typed facade
/// encodes every value before it writes anything, so a value that fails to encode writes
/// nothing. Stateless codecs ([`Json`](super::Json), [`Text`](super::Text),
/// [`Bytes`](super::Bytes), [`Empty`](super::Empty)) implement `Default` and are built on
/// demand; codecs with state (`Encrypted` (feature `encryption`)) are values passed to the
/// facade's `*_with` methods.
///
/// Decoding is strict: bytes that are not a value of the codec's format are an error of kind
/// [`ErrorKind::Codec`], never a default value.
///
/// ```
/// use kv_core::keyspace::{Codec, Text};
/// let bytes = Text.encode(&"on".to_string())?;
/// assert_eq!(Text.decode(&bytes)?, "on");
/// # Ok::<(), kv_core::Error>(())
/// ```
pub trait Codec: Send + Sync + 'static {
    /// The value type.
    type Value: Send + Sync + 'static;

    /// Encodes a value into the bytes stored.
    ///
    /// # Errors
    /// [`ErrorKind::Codec`] when the value cannot be encoded.
    fn encode(&self, value: &Self::Value) -> Result<Vec<u8>>;

    /// Decodes stored bytes into a value.
    ///
    /// # Errors
    /// [`ErrorKind::Codec`] when the bytes are not a value.
    fn decode(&self, bytes: &[u8]) -> Result<Self::Value>;
}

/// An [`ErrorKind::Codec`] error naming the codec that raised it.
pub(crate) fn codec_error(codec: &'static str, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Codec, message).with_context("codec", codec)
}
