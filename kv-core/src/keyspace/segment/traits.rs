//! The [`Segment`] trait: one typed variable segment of a key, with its separator and error.

use super::spec::SegmentSpec;
use std::borrow::Cow;
use std::fmt;

/// The byte that separates the segments of a key: `/` (etcd style) or `:` (Redis style).
///
/// The separator is part of a template: `jxt/tenants/{id}` uses [`Separator::Slash`],
/// `nxc:map:{realm}:{provider}` uses [`Separator::Colon`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Separator {
    /// `/`, as in `jxt/tenants/1/meta`.
    Slash,
    /// `:`, as in `nxc:map:prod:openai`.
    Colon,
}

impl Separator {
    /// The separator as a `char`.
    pub const fn as_char(self) -> char {
        match self {
            Separator::Slash => '/',
            Separator::Colon => ':',
        }
    }

    /// The separator as a byte.
    pub const fn as_byte(self) -> u8 {
        self.as_char() as u8
    }

    /// The separator as a one-character string.
    pub const fn as_str(self) -> &'static str {
        match self {
            Separator::Slash => "/",
            Separator::Colon => ":",
        }
    }

    /// The separator written as `c`, if `c` is one.
    pub const fn from_char(c: char) -> Option<Separator> {
        match c {
            '/' => Some(Separator::Slash),
            ':' => Some(Separator::Colon),
            _ => None,
        }
    }
}

impl fmt::Display for Separator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A segment that does not decode: the raw text and the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid segment {raw:?}: {reason}")]
pub struct SegmentError {
    raw: String,
    reason: Cow<'static, str>,
}

impl SegmentError {
    /// A new error for the raw segment text `raw`, saying which rule it breaks.
    pub fn new(raw: &str, reason: impl Into<Cow<'static, str>>) -> Self {
        SegmentError {
            raw: raw.to_owned(),
            reason: reason.into(),
        }
    }

    /// The raw segment text that was rejected.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The rule the segment breaks.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// A typed variable segment of a key template (`{id}` in `jxt/tenants/{id}/meta`).
///
/// Encoding is canonical and decoding strict: [`Segment::decode`] succeeds only when
/// [`Segment::encode`] of the result gives back exactly the raw text. An encoding is never
/// empty, `.` or `..`, and never contains the raw separator, `{`, `}` or a NUL byte; nothing
/// is normalised (`007` is not the integer 7, `ABC` is not the UUID `abc`).
///
/// Every built-in ([integers](u64), [`Padded`](crate::keyspace::Padded), [`uuid::Uuid`],
/// [`HostPort`](crate::keyspace::HostPort), [text newtypes](crate::text_segment)) implements it, and a
/// hand-written impl only has to keep the rules above; the invariant harness (feature
/// `proptest`) checks them.
///
/// ```
/// use keyplane_core::keyspace::{Segment, Separator};
///
/// let mut out = String::new();
/// 42u64.encode(Separator::Slash, &mut out);
/// assert_eq!(out, "42");
/// assert_eq!(u64::decode("42", Separator::Slash), Ok(42));
/// assert!(u64::decode("042", Separator::Slash).is_err()); // not canonical
/// assert!(u64::decode("+42", Separator::Slash).is_err());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a key segment",
    label = "a field of a key template must be a `Segment`",
    note = "for text, declare a validated newtype: `keyplane::text_segment!(pub Name, max_len = 128, policy = Escape);` (escaped and reversible) or `policy = Reject` with a `charset`, then use `Name` as the field's type",
    note = "integers, `Padded`, `uuid::Uuid` and `HostPort` are segments as they are; a type of your own implements `Segment` (its rules are in the trait's docs)"
)]
pub trait Segment: Sized + Clone + fmt::Debug + PartialEq + Send + Sync + 'static {
    /// Whether the byte order of encodings equals the order of values (zero-padded integers).
    /// Only types that set it are used for ordered range scans.
    const ORDERED: bool = false;

    /// Appends the canonical encoding of `self` for a key separated by `sep`.
    fn encode(&self, sep: Separator, out: &mut String);

    /// Parses a raw segment, accepting only canonical encodings.
    ///
    /// # Errors
    /// [`SegmentError`] naming the rule `raw` breaks.
    fn decode(raw: &str, sep: Separator) -> Result<Self, SegmentError>;

    /// The segment's rule in words, for schema listings (`kvctl schema`).
    fn describe() -> String;

    /// The segment's rule as data, for tools that load a schema from a manifest without the
    /// Rust type: [`SegmentSpec::check`] accepts exactly what [`Segment::decode`] does.
    ///
    /// The default is [`SegmentSpec::Custom`] with [`Segment::describe`], which such a tool
    /// cannot apply (it then accepts any segment without the separator). Override it when
    /// the rule is one a spec can state, so that those tools check keys the same way.
    fn spec() -> SegmentSpec {
        SegmentSpec::Custom {
            rule: Self::describe(),
        }
    }

    /// Whether some value of this type encodes to exactly `literal`; the schema checker uses
    /// it to find a variable that can produce a sibling template's literal.
    fn can_produce(literal: &str, sep: Separator) -> bool {
        Self::decode(literal, sep).is_ok()
    }

    /// The canonical encoding as a new string.
    fn to_segment_string(&self, sep: Separator) -> String {
        let mut out = String::new();
        self.encode(sep, &mut out);
        out
    }
}

/// The object-safe half of [`Segment`]: encoding only. Every [`Segment`] implements it, so a
/// key can be written from a list of `&dyn EncodeSegment` (see
/// [`Template::write`](crate::keyspace::Template::write)).
pub trait EncodeSegment: fmt::Debug + Send + Sync {
    /// Appends the canonical encoding, as [`Segment::encode`].
    fn encode_segment(&self, sep: Separator, out: &mut String);
}

impl<T: Segment> EncodeSegment for T {
    fn encode_segment(&self, sep: Separator, out: &mut String) {
        self.encode(sep, out)
    }
}

/// Rejects what no segment may be: empty, `.` and `..`.
///
/// # Errors
/// [`SegmentError`] saying which of the three `raw` is.
pub fn check_not_reserved(raw: &str) -> Result<(), SegmentError> {
    match raw {
        "" => Err(SegmentError::new(raw, "a segment must not be empty")),
        "." | ".." => Err(SegmentError::new(raw, "`.` and `..` are not segments")),
        _ => Ok(()),
    }
}
