//! [`Bytes`], the keys and values of a model-test sequence, and the strategy of values.

use proptest::prelude::*;
use std::fmt;

/// Bytes relative to the sequence's root, printed escaped.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub Vec<u8>);

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", keyplane_core::raw::escape_bytes(&self.0))
    }
}

/// A value.
pub fn value() -> impl Strategy<Value = Bytes> {
    proptest::sample::select(vec![&b""[..], b"a", b"b", b"ab", b"\xff"])
        .prop_map(|v| Bytes(v.to_vec()))
}
