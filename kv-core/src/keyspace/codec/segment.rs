//! `SegmentCodec<S>`: a value stored as the canonical text of a [`Segment`] type.

use super::traits::{Codec, codec_error};
use crate::Result;
use crate::keyspace::segment::{Segment, Separator};
use crate::raw::escape_bytes;
use std::fmt;
use std::marker::PhantomData;

/// Stores a [`Segment`] value (an id, a UUID, a `host:port`, a text newtype) as its canonical
/// segment text, and decodes strictly: only text the segment type would have written
/// decodes. Suited to set members and list items that are identifiers, such as the profile
/// ids of an `nxc:map:{realm}:{provider}` set.
///
/// The separator decides what a percent-escaping text type escapes; [`Default`] uses
/// [`Separator::Slash`], [`SegmentCodec::with_separator`] picks another.
///
/// ```
/// use keyplane_core::keyspace::{Codec, SegmentCodec};
/// let codec = SegmentCodec::<u64>::default();
/// assert_eq!(codec.encode(&42)?, b"42");
/// assert_eq!(codec.decode(b"42")?, 42);
/// assert!(codec.decode(b"042").is_err()); // not canonical
/// # Ok::<(), keyplane_core::Error>(())
/// ```
pub struct SegmentCodec<S> {
    separator: Separator,
    segment: PhantomData<fn() -> S>,
}

impl<S> SegmentCodec<S> {
    /// The codec of `S` with segments escaped for `separator`.
    pub const fn with_separator(separator: Separator) -> Self {
        SegmentCodec {
            separator,
            segment: PhantomData,
        }
    }
}

impl<S> Default for SegmentCodec<S> {
    fn default() -> Self {
        Self::with_separator(Separator::Slash)
    }
}

impl<S> Clone for SegmentCodec<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for SegmentCodec<S> {}

impl<S> fmt::Debug for SegmentCodec<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SegmentCodec<{}>({})",
            std::any::type_name::<S>(),
            self.separator
        )
    }
}

impl<S: Segment> Codec for SegmentCodec<S> {
    type Value = S;
    const FORMAT: crate::keyspace::ValueFormat = crate::keyspace::ValueFormat::Text;

    fn encode(&self, value: &S) -> Result<Vec<u8>> {
        Ok(value.to_segment_string(self.separator).into_bytes())
    }

    fn decode(&self, bytes: &[u8]) -> Result<S> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            codec_error("segment", "the stored bytes are not UTF-8")
                .with_context("value", escape_bytes(bytes))
                .with_source(e)
        })?;
        S::decode(text, self.separator).map_err(|e| {
            codec_error("segment", "the stored text is not a canonical segment")
                .with_context("type", std::any::type_name::<S>())
                .with_source(e)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn round_trips_and_rejects_non_canonical_text() {
        let ints = SegmentCodec::<u32>::default();
        for n in [0, 7, 10, u32::MAX] {
            assert_eq!(ints.decode(&ints.encode(&n).unwrap()).unwrap(), n);
        }
        for bad in [&b""[..], b"01", b"+1", b"-1", b"4294967296", b"\xff"] {
            assert_eq!(
                ints.decode(bad).unwrap_err().kind(),
                ErrorKind::Codec,
                "{bad:?}"
            );
        }
        let ids = SegmentCodec::<uuid::Uuid>::with_separator(Separator::Colon);
        let id = uuid::Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        let bytes = ids.encode(&id).unwrap();
        assert_eq!(bytes, b"01234567-89ab-cdef-0123-456789abcdef");
        assert_eq!(ids.decode(&bytes).unwrap(), id);
        assert!(ids.decode(b"01234567-89AB-CDEF-0123-456789ABCDEF").is_err());
    }
}
