//! The stateless byte-level codecs: `Text`, `Bytes` and `Empty`.

use super::traits::{Codec, codec_error};
use crate::Result;
use crate::raw::escape_bytes;

/// Stores a `String` as its UTF-8 bytes, unchanged.
///
/// Decoding bytes that are not valid UTF-8 fails with
/// [`ErrorKind::Codec`](crate::ErrorKind::Codec); nothing is replaced or normalised.
///
/// ```
/// use keyplane_core::keyspace::{Codec, Text};
/// assert_eq!(Text.encode(&"默认".to_string())?, "默认".as_bytes());
/// assert_eq!(Text.decode(b"on")?, "on");
/// assert!(Text.decode(b"\xff").is_err());
/// # Ok::<(), keyplane_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Text;

impl Codec for Text {
    type Value = String;
    const FORMAT: crate::keyspace::ValueFormat = crate::keyspace::ValueFormat::Text;

    fn encode(&self, value: &String) -> Result<Vec<u8>> {
        Ok(value.as_bytes().to_vec())
    }

    fn decode(&self, bytes: &[u8]) -> Result<String> {
        String::from_utf8(bytes.to_vec()).map_err(|e| {
            codec_error("text", "the stored bytes are not valid UTF-8")
                .with_context("valid_up_to", e.utf8_error().valid_up_to())
                .with_source(e.utf8_error())
        })
    }
}

/// Stores a `Vec<u8>` as is: the identity codec.
///
/// ```
/// use keyplane_core::keyspace::{Bytes, Codec};
/// assert_eq!(Bytes.decode(&Bytes.encode(&vec![0, 255])?)?, vec![0, 255]);
/// # Ok::<(), keyplane_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Bytes;

impl Codec for Bytes {
    type Value = Vec<u8>;

    fn encode(&self, value: &Vec<u8>) -> Result<Vec<u8>> {
        Ok(value.clone())
    }

    fn decode(&self, bytes: &[u8]) -> Result<Vec<u8>> {
        Ok(bytes.to_vec())
    }
}

/// Presence only: the key's existence is the information, its value is empty.
///
/// Encodes `()` as `b""` and decodes only the empty value: a non-empty value under a
/// presence key means another writer disagrees about the schema, which is reported as
/// [`ErrorKind::Codec`](crate::ErrorKind::Codec) rather than ignored.
///
/// ```
/// use keyplane_core::keyspace::{Codec, Empty};
/// assert_eq!(Empty.encode(&())?, b"");
/// Empty.decode(b"")?;
/// assert!(Empty.decode(b"1").is_err());
/// # Ok::<(), keyplane_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Empty;

impl Codec for Empty {
    type Value = ();
    const FORMAT: crate::keyspace::ValueFormat = crate::keyspace::ValueFormat::Empty;

    fn encode(&self, _: &()) -> Result<Vec<u8>> {
        Ok(Vec::new())
    }

    fn decode(&self, bytes: &[u8]) -> Result<()> {
        if bytes.is_empty() {
            Ok(())
        } else {
            const SHOWN: usize = 32;
            Err(
                codec_error("empty", "a presence-only key holds a non-empty value")
                    .with_context("len", bytes.len())
                    .with_context("value", escape_bytes(&bytes[..bytes.len().min(SHOWN)])),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn text_round_trips_and_rejects_invalid_utf8() {
        for s in ["", "on", "默认租户", "a/b%2F{}", "😀"] {
            let s = s.to_string();
            assert_eq!(Text.decode(&Text.encode(&s).unwrap()).unwrap(), s);
        }
        for bad in [&b"\xff"[..], b"ab\xc3", b"\xed\xa0\x80"] {
            assert_eq!(Text.decode(bad).unwrap_err().kind(), ErrorKind::Codec);
        }
    }

    #[test]
    fn bytes_is_the_identity() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(Bytes.encode(&all).unwrap(), all);
        assert_eq!(Bytes.decode(&all).unwrap(), all);
        assert_eq!(Bytes.decode(b"").unwrap(), Vec::<u8>::new());
    }

    #[test]
    fn empty_accepts_only_the_empty_value() {
        assert_eq!(Empty.encode(&()).unwrap(), Vec::<u8>::new());
        assert!(Empty.decode(b"").is_ok());
        for bad in [&b" "[..], b"\0", b"1", b"null"] {
            assert_eq!(Empty.decode(bad).unwrap_err().kind(), ErrorKind::Codec);
        }
    }
}
