//! [`Padded`]: a zero-padded unsigned integer whose encodings sort like its values.

use super::spec::SegmentSpec;
use super::traits::{Segment, SegmentError, Separator};
use std::fmt::{self, Write};

/// Unsigned integer types that [`Padded`] can hold.
pub trait PaddedInt:
    Copy + fmt::Debug + fmt::Display + PartialEq + Ord + Send + Sync + 'static
{
    /// Whether the type is signed, for [`SegmentSpec::Padded`].
    const SIGNED: bool;

    /// The width of the type in bits, for [`SegmentSpec::Padded`].
    const BITS: u8;

    /// Parses ASCII digits (at least one), `None` on overflow.
    fn parse_digits(digits: &str) -> Option<Self>;
}

macro_rules! padded_int {
    ($($t:ty),*) => {$(
        impl PaddedInt for $t {
            const SIGNED: bool = false;
            // Every integer type is at most 128 bits wide.
            const BITS: u8 = <$t>::BITS as u8;

            fn parse_digits(digits: &str) -> Option<Self> {
                digits.parse().ok()
            }
        }
    )*};
}

padded_int!(u8, u16, u32, u64, u128, usize);

/// An unsigned integer written with exactly `N` digits, zero-padded (`Padded::<6, u32>` 42 is
/// `000042`), so that byte order equals numeric order: [`Segment::ORDERED`] is `true`.
///
/// A value with more than `N` digits cannot be built; a raw segment decodes only with exactly
/// `N` digits.
///
/// ```
/// use keyplane_core::keyspace::{Padded, Segment, Separator};
/// let p = Padded::<6, u32>::new(42)?;
/// assert_eq!(p.to_segment_string(Separator::Slash), "000042");
/// assert!(Padded::<2, u32>::new(100).is_err());
/// assert!(Padded::<6, u32>::decode("42", Separator::Slash).is_err());
/// # Ok::<(), keyplane_core::keyspace::SegmentError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Padded<const N: usize, T>(T);

impl<const N: usize, T: PaddedInt> Padded<N, T> {
    /// Wraps `value`.
    ///
    /// # Errors
    /// [`SegmentError`] when `value` has more than `N` digits, or `N` is zero.
    pub fn new(value: T) -> Result<Self, SegmentError> {
        let text = value.to_string();
        if N == 0 || text.len() > N {
            return Err(SegmentError::new(
                &text,
                format!("more than {N} digits for a padded segment"),
            ));
        }
        Ok(Padded(value))
    }

    /// The integer.
    pub fn get(self) -> T {
        self.0
    }
}

impl<const N: usize, T: PaddedInt> Segment for Padded<N, T> {
    const ORDERED: bool = true;

    fn encode(&self, _sep: Separator, out: &mut String) {
        // Writing to a String cannot fail.
        let _ = write!(out, "{:0width$}", self.0, width = N);
    }

    fn decode(raw: &str, _sep: Separator) -> Result<Self, SegmentError> {
        if N == 0 || raw.len() != N || !raw.bytes().all(|b| b.is_ascii_digit()) {
            return Err(SegmentError::new(
                raw,
                format!("expected exactly {N} digits"),
            ));
        }
        T::parse_digits(raw)
            .map(Padded)
            .ok_or_else(|| SegmentError::new(raw, "out of range"))
    }

    fn describe() -> String {
        format!(
            "{} as exactly {N} zero-padded decimal digits (sorts by value)",
            std::any::type_name::<T>()
        )
    }

    fn spec() -> SegmentSpec {
        SegmentSpec::Padded {
            width: N,
            signed: T::SIGNED,
            bits: T::BITS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_width_and_ordered() {
        let s = Separator::Slash;
        type P = Padded<3, u8>;
        assert_eq!(P::new(7).unwrap().to_segment_string(s), "007");
        assert_eq!(P::decode("255", s), Ok(P::new(255).unwrap()));
        for bad in ["", "7", "07", "0007", "256", "-07", "+07", "0x7"] {
            assert!(P::decode(bad, s).is_err(), "{bad:?}");
        }
        let mut values: Vec<P> = [10u8, 9, 100, 1, 11].map(|v| P::new(v).unwrap()).to_vec();
        let mut encoded: Vec<String> = values.iter().map(|v| v.to_segment_string(s)).collect();
        values.sort();
        encoded.sort();
        let decoded: Vec<P> = encoded.iter().map(|e| P::decode(e, s).unwrap()).collect();
        assert_eq!(decoded, values);
    }
}
