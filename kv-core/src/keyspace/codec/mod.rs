//! Codecs: how a key's value becomes bytes and back.
//!
//! The [`Codec`] trait (and [`BuildCodec`] for codecs built with state from a
//! [`CodecContext`]), the built-in codecs ([`Json`], [`Text`], [`Bytes`], [`Empty`],
//! [`SegmentCodec`], and with feature `encryption` `Encrypted`), and [`ValueInfo`], what a
//! tool knows of a value without its Rust type.

#[cfg(feature = "encryption")]
mod encrypted;
mod json;
mod plain;
mod segment;
mod traits;
mod value_info;

#[cfg(feature = "encryption")]
pub use encrypted::{
    ENVELOPE_VERSION, Encrypted, EncryptionKey, Keyring, ReencryptReport, UNBOUND_ENVELOPE_VERSION,
    reencrypt_prefix,
};
pub use json::Json;
pub use plain::{Bytes, Empty, Text};
pub use segment::SegmentCodec;
pub use traits::{BuildCodec, Codec, CodecContext};
pub use value_info::{ValueFormat, ValueInfo};
