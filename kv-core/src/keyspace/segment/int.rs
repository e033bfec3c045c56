//! Integer segments: canonical decimal, no sign on unsigned, no leading zeros, no `-0`.

use super::spec::SegmentSpec;
use super::traits::{Segment, SegmentError, Separator};
use std::fmt::Write;

/// Appends `value` in canonical decimal, without the formatter (a lookup of a typed key
/// encodes it on every call).
fn push_decimal(value: i128, out: &mut String) {
    if value < 0 {
        out.push('-');
    }
    let mut digits = [0u8; 40];
    let mut at = digits.len();
    // Most values fit 64 bits, whose division is the cheaper; the casts below take digits,
    // each less than 10.
    match u64::try_from(value.unsigned_abs()) {
        Ok(mut n) => loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        },
        Err(_) => {
            let mut n = value.unsigned_abs();
            loop {
                at -= 1;
                digits[at] = b'0' + (n % 10) as u8;
                n /= 10;
                if n == 0 {
                    break;
                }
            }
        }
    }
    for &d in &digits[at..] {
        out.push(char::from(d));
    }
}

/// Checks the canonical decimal form: an optional `-` (when `signed`), then digits without a
/// leading zero (except `0` itself), and never `-0`.
fn check_decimal(raw: &str, signed: bool) -> Result<(), SegmentError> {
    let digits = match raw.strip_prefix('-') {
        Some(rest) if signed => {
            if rest == "0" {
                return Err(SegmentError::new(raw, "`-0` is not canonical"));
            }
            rest
        }
        Some(_) => return Err(SegmentError::new(raw, "an unsigned integer has no sign")),
        None => raw,
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SegmentError::new(raw, "not a decimal integer"));
    }
    if digits.len() > 1 && digits.starts_with('0') {
        return Err(SegmentError::new(raw, "leading zeros are not canonical"));
    }
    Ok(())
}

macro_rules! int_segment {
    ($($t:ty: $signed:expr),* $(,)?) => {$(
        impl Segment for $t {
            fn encode(&self, _sep: Separator, out: &mut String) {
                // Every type here widens to i128 without loss but u128, whose values past
                // i128::MAX take the formatter's path.
                match i128::try_from(*self) {
                    Ok(value) => push_decimal(value, out),
                    // Writing to a String cannot fail.
                    Err(_) => {
                        let _ = write!(out, "{self}");
                    }
                }
            }

            fn decode(raw: &str, _sep: Separator) -> Result<Self, SegmentError> {
                // Fast path: short canonical unsigned digits, accumulated in one pass.
                if !$signed && !raw.is_empty() && raw.len() < 20 && (raw.len() == 1 || !raw.starts_with('0')) {
                    let mut value: u64 = 0;
                    let mut digits = true;
                    for b in raw.bytes() {
                        digits &= b.is_ascii_digit();
                        value = value.wrapping_mul(10).wrapping_add(u64::from(b.wrapping_sub(b'0')));
                    }
                    if digits {
                        return <$t>::try_from(value).map_err(|_| {
                            SegmentError::new(raw, concat!("out of range for ", stringify!($t)))
                        });
                    }
                }
                check_decimal(raw, $signed)?;
                raw.parse::<$t>().map_err(|_| {
                    SegmentError::new(raw, concat!("out of range for ", stringify!($t)))
                })
            }

            fn describe() -> String {
                format!(
                    "{} in canonical decimal ({}, no leading zeros)",
                    stringify!($t),
                    if $signed { "`-` for negatives, no `-0`" } else { "no sign" },
                )
            }

            fn spec() -> SegmentSpec {
                // Every integer type is at most 128 bits wide.
                SegmentSpec::Int { signed: $signed, bits: <$t>::BITS as u8 }
            }
        }
    )*};
}

int_segment!(u8: false, u16: false, u32: false, u64: false, u128: false, usize: false);
int_segment!(i8: true, i16: true, i32: true, i64: true, i128: true, isize: true);

#[cfg(test)]
mod tests {
    use super::*;

    const S: Separator = Separator::Slash;

    #[test]
    fn canonical_decimal_only() {
        assert_eq!(u64::decode("0", S), Ok(0));
        assert_eq!(u64::decode("18446744073709551615", S), Ok(u64::MAX));
        assert_eq!(i64::decode("-9223372036854775808", S), Ok(i64::MIN));
        assert_eq!(i8::decode("-1", S), Ok(-1));
        for bad in [
            "",
            "00",
            "01",
            "+1",
            "-1",
            " 1",
            "1 ",
            "1e3",
            "0x10",
            "18446744073709551616",
        ] {
            assert!(u64::decode(bad, S).is_err(), "{bad:?}");
        }
        for bad in ["-0", "-01", "+1", "--1", "-", "128"] {
            assert!(i8::decode(bad, S).is_err(), "{bad:?}");
        }
        assert_eq!(255u8.to_segment_string(S), "255");
        assert_eq!((-7i32).to_segment_string(Separator::Colon), "-7");
        assert!(u64::can_produce("10", S) && !u64::can_produce("b", S));
    }
}
