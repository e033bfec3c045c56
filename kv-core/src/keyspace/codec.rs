//! The [`Codec`] trait: how a key's value is turned into bytes and back.

use crate::error::Result;

/// Encodes and decodes the values stored under a key.
pub trait Codec: Send + Sync + 'static {
    /// The value type.
    type Value: Send + Sync + 'static;

    /// Encodes a value into the bytes stored.
    ///
    /// # Errors
    /// [`ErrorKind::Codec`](crate::ErrorKind::Codec) when the value cannot be encoded.
    fn encode(&self, value: &Self::Value) -> Result<Vec<u8>>;

    /// Decodes stored bytes into a value.
    ///
    /// # Errors
    /// [`ErrorKind::Codec`](crate::ErrorKind::Codec) when the bytes are not a value.
    fn decode(&self, bytes: &[u8]) -> Result<Self::Value>;
}
