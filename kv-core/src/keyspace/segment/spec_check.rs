//! [`SegmentSpec::check`] and [`SegmentSpec::describe`]: a spec applied through the built-in
//! types' own decoders, so a manifest's rule and the Rust type's rule cannot drift apart.

use super::hostport::HostPort;
use super::spec::{SegmentSpec, except_words};
use super::text::TextRule;
use super::traits::{Segment, SegmentError, Separator, check_not_reserved};
use std::net::Ipv4Addr;
use uuid::Uuid;

/// A decoder that keeps only whether `raw` decodes.
type Decode = fn(&str, Separator) -> Result<(), SegmentError>;

/// `T::decode`, the value dropped.
fn decode_ok<T: Segment>(raw: &str, sep: Separator) -> Result<(), SegmentError> {
    T::decode(raw, sep).map(drop)
}

/// The decoder of the integer type of the given sign and width, `None` for a width no type
/// has.
fn int_decoder(signed: bool, bits: u8) -> Option<Decode> {
    Some(match (signed, bits) {
        (false, 8) => decode_ok::<u8>,
        (false, 16) => decode_ok::<u16>,
        (false, 32) => decode_ok::<u32>,
        (false, 64) => decode_ok::<u64>,
        (false, 128) => decode_ok::<u128>,
        (true, 8) => decode_ok::<i8>,
        (true, 16) => decode_ok::<i16>,
        (true, 32) => decode_ok::<i32>,
        (true, 64) => decode_ok::<i64>,
        (true, 128) => decode_ok::<i128>,
        _ => return None,
    })
}

/// The largest value of the integer type of the given sign and width, `None` for a width no
/// type has.
fn int_max(signed: bool, bits: u8) -> Option<u128> {
    match bits {
        8 | 16 | 32 | 64 if signed => Some((1u128 << (bits - 1)) - 1),
        8 | 16 | 32 | 64 => Some((1u128 << bits) - 1),
        128 if signed => Some(i128::MAX.unsigned_abs()),
        128 => Some(u128::MAX),
        _ => None,
    }
}

/// The name of the integer type of the given sign and width, as `stringify!` writes it.
fn int_name(signed: bool, bits: u8) -> String {
    format!("{}{bits}", if signed { 'i' } else { 'u' })
}

/// The text rule of a spec whose charset parsed (checked by the caller).
fn text_rule(spec: &SegmentSpec) -> Option<TextRule> {
    match spec {
        SegmentSpec::Text {
            charset,
            max_len,
            policy,
            ..
        } if spec.validate().is_ok() => Some(TextRule::new(charset.as_deref(), *max_len, *policy)),
        _ => None,
    }
}

impl SegmentSpec {
    /// The spec of a text rule, no word excepted: what
    /// [`text_segment!`](crate::text_segment) types return from
    /// [`Segment::spec`](crate::keyspace::Segment::spec).
    pub fn text(rule: &TextRule) -> SegmentSpec {
        SegmentSpec::Text {
            charset: rule.charset().map(|c| c.source().to_owned()),
            max_len: rule.max_len(),
            policy: rule.policy(),
            except: Vec::new(),
        }
    }

    /// Checks a raw segment of a key separated by `sep`: `Ok` exactly when the type's
    /// [`Segment::decode`] accepts `raw` (for [`SegmentSpec::Custom`], when `raw` is a
    /// segment any type may produce; see there). Never panics, whatever the spec.
    ///
    /// # Errors
    /// [`SegmentError`] naming the rule `raw` breaks, or what is wrong with the spec when
    /// [`SegmentSpec::validate`] refuses it.
    pub fn check(&self, raw: &str, sep: Separator) -> Result<(), SegmentError> {
        let invalid = |e: String| SegmentError::new(raw, format!("invalid segment spec: {e}"));
        self.validate().map_err(invalid)?;
        let unknown_width = || invalid("no integer type of this width".into());
        match self {
            SegmentSpec::Int { signed, bits } => {
                int_decoder(*signed, *bits).ok_or_else(unknown_width)?(raw, sep)
            }
            SegmentSpec::Padded {
                width,
                signed,
                bits,
            } => {
                let max = int_max(*signed, *bits).ok_or_else(unknown_width)?;
                // As `Padded<N, T>::decode`: exactly N ASCII digits, then T's range.
                if raw.len() != *width || !raw.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(SegmentError::new(
                        raw,
                        format!("expected exactly {width} digits"),
                    ));
                }
                match raw.parse::<u128>() {
                    Ok(value) if value <= max => Ok(()),
                    _ => Err(SegmentError::new(raw, "out of range")),
                }
            }
            SegmentSpec::Uuid => decode_ok::<Uuid>(raw, sep),
            SegmentSpec::HostPort => decode_ok::<HostPort>(raw, sep),
            SegmentSpec::Ipv4 => decode_ok::<Ipv4Addr>(raw, sep),
            SegmentSpec::Text { except, .. } => {
                let rule = text_rule(self).ok_or_else(|| invalid("not a text rule".into()))?;
                let value = rule.decode(raw, sep)?;
                if except.contains(&value) {
                    return Err(SegmentError::new(raw, format!("`{value}` is reserved")));
                }
                Ok(())
            }
            SegmentSpec::Custom { .. } => {
                check_not_reserved(raw)?;
                match raw
                    .chars()
                    .find(|&c| c == sep.as_char() || matches!(c, '{' | '}' | '\0'))
                {
                    Some(c) => Err(SegmentError::new(
                        raw,
                        format!("{c:?} is in no key segment"),
                    )),
                    None => Ok(()),
                }
            }
        }
    }

    /// The rule in words, as the type's [`Segment::describe`] writes it (for `usize` and
    /// `isize`, the name of the integer type of their width).
    pub fn describe(&self) -> String {
        match self {
            SegmentSpec::Int { signed, bits } => format!(
                "{} in canonical decimal ({}, no leading zeros)",
                int_name(*signed, *bits),
                if *signed {
                    "`-` for negatives, no `-0`"
                } else {
                    "no sign"
                },
            ),
            SegmentSpec::Padded {
                width,
                signed,
                bits,
            } => format!(
                "{} as exactly {width} zero-padded decimal digits (sorts by value)",
                int_name(*signed, *bits)
            ),
            SegmentSpec::Uuid => Uuid::describe(),
            SegmentSpec::HostPort => HostPort::describe(),
            SegmentSpec::Ipv4 => Ipv4Addr::describe(),
            SegmentSpec::Text { except, .. } => match text_rule(self) {
                Some(rule) if except.is_empty() => rule.describe(),
                Some(rule) => format!("{}, {}", rule.describe(), except_words(except)),
                None => format!(
                    "invalid text rule: {}",
                    self.validate().err().unwrap_or_default()
                ),
            },
            SegmentSpec::Custom { rule } => rule.clone(),
        }
    }
}
