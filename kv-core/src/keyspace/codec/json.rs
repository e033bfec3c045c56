//! `Json<T>`: values stored as compact JSON through serde.

use super::traits::{Codec, codec_error};
use crate::Result;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt;
use std::marker::PhantomData;

/// Stores a `T` as compact JSON (`serde_json`), the format the seed systems' values use.
///
/// Encoding fails only if `T`'s `Serialize` impl fails (a map with non-string keys, for
/// instance); decoding fails on anything that is not a JSON text of `T`'s shape. Both fail
/// with [`ErrorKind::Codec`](crate::ErrorKind::Codec) and name the value type.
///
/// ```
/// use keyplane_core::keyspace::{Codec, Json};
/// #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
/// #[serde(rename_all = "camelCase")]
/// struct Meta { display_name: String }
///
/// let codec = Json::<Meta>::new();
/// let bytes = codec.encode(&Meta { display_name: "ACME".into() })?;
/// assert_eq!(bytes, br#"{"displayName":"ACME"}"#);
/// assert_eq!(codec.decode(&bytes)?.display_name, "ACME");
/// assert!(codec.decode(b"{").is_err());
/// # Ok::<(), keyplane_core::Error>(())
/// ```
pub struct Json<T>(PhantomData<fn() -> T>);

impl<T> Json<T> {
    /// The JSON codec of `T`.
    pub const fn new() -> Self {
        Json(PhantomData)
    }
}

impl<T> Default for Json<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for Json<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Json<T> {}

impl<T> fmt::Debug for Json<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Json<{}>", std::any::type_name::<T>())
    }
}

impl<T> Codec for Json<T>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    type Value = T;
    const FORMAT: crate::keyspace::ValueFormat = crate::keyspace::ValueFormat::Json;

    fn encode(&self, value: &T) -> Result<Vec<u8>> {
        serde_json::to_vec(value).map_err(|e| {
            codec_error("json", "cannot encode the value as JSON")
                .with_context("type", std::any::type_name::<T>())
                .with_source(e)
        })
    }

    fn decode(&self, bytes: &[u8]) -> Result<T> {
        serde_json::from_slice(bytes).map_err(|e| {
            codec_error(
                "json",
                "the stored bytes are not JSON of the expected shape",
            )
            .with_context("type", std::any::type_name::<T>())
            .with_context(
                "at",
                format_args!("line {} column {}", e.line(), e.column()),
            )
            .with_source(e)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;
    use std::collections::BTreeMap;

    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Meta {
        display_name: String,
        max_users: u32,
        tags: Vec<String>,
    }

    #[test]
    fn round_trip_is_compact() {
        let codec = Json::<Meta>::new();
        let meta = Meta {
            display_name: "默认租户".into(),
            max_users: 10,
            tags: vec!["a b".into()],
        };
        let bytes = codec.encode(&meta).unwrap();
        assert_eq!(
            bytes,
            r#"{"displayName":"默认租户","maxUsers":10,"tags":["a b"]}"#.as_bytes()
        );
        assert_eq!(codec.decode(&bytes).unwrap(), meta);
    }

    #[test]
    fn decode_errors_are_codec_errors_with_context() {
        let codec = Json::<Meta>::new();
        for bad in [&b""[..], b"{", br#"{"displayName":1}"#, b"\xff", b"null"] {
            let err = codec.decode(bad).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Codec, "{bad:?}");
            assert!(
                err.context()
                    .iter()
                    .any(|(k, v)| *k == "type" && v.contains("Meta"))
            );
            assert!(std::error::Error::source(&err).is_some());
        }
    }

    #[test]
    fn encode_errors_are_codec_errors() {
        // JSON object keys must be strings: a map keyed by a tuple cannot be encoded.
        let codec = Json::<BTreeMap<(u8, u8), u8>>::new();
        let err = codec.encode(&BTreeMap::from([((1, 2), 3)])).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Codec);
    }
}
