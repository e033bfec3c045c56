//! Validated text segments: [`TextRule`], [`TextSegment`] and the [`text_segment!`] macro.
//!
//! [`text_segment!`]: crate::text_segment

use super::charset::Charset;
use super::escape::{escape_into, unescape_strict};
pub use super::spec::TextPolicy;
use super::traits::{SegmentError, Separator, check_not_reserved};

/// The rule of one text segment type: charset, maximum length and policy.
#[derive(Debug, Clone)]
pub struct TextRule {
    charset: Option<Charset>,
    max_len: usize,
    policy: TextPolicy,
    /// The ASCII characters a value may hold under the charset and the policy, as a bitmap:
    /// the fast path of `validate` for ASCII values.
    ascii_allowed: u128,
}

impl TextRule {
    /// A rule. `charset` is a class such as `[a-zA-Z0-9_]` ([`Charset`]); `None` allows any
    /// character (only sensible with [`TextPolicy::Escape`]). `max_len` counts the value's
    /// bytes, before escaping.
    ///
    /// # Panics
    /// When `charset` is not a valid character class: the rule is a constant of a type
    /// declaration, so that is a bug in the declaration.
    pub fn new(charset: Option<&str>, max_len: usize, policy: TextPolicy) -> Self {
        let charset = charset.map(|c| match Charset::parse(c) {
            Ok(charset) => charset,
            Err(e) => panic!("invalid charset {c:?} in a text segment declaration: {e}"),
        });
        let mut rule = TextRule {
            charset,
            max_len,
            policy,
            ascii_allowed: 0,
        };
        for b in 0u8..0x80 {
            if rule.char_allowed(char::from(b)) {
                rule.ascii_allowed |= 1 << b;
            }
        }
        rule
    }

    fn char_allowed(&self, c: char) -> bool {
        self.charset.as_ref().is_none_or(|cs| cs.contains(c))
            && (self.policy == TextPolicy::Escape || !is_unsafe_verbatim(c))
    }

    /// The policy.
    pub fn policy(&self) -> TextPolicy {
        self.policy
    }

    /// The maximum length of a value, in bytes.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// The charset, if the rule restricts characters.
    pub fn charset(&self) -> Option<&Charset> {
        self.charset.as_ref()
    }

    /// Checks a value: not empty, `.` or `..`; at most `max_len` bytes; within the charset;
    /// and, for [`TextPolicy::Reject`], free of the characters a key cannot hold.
    ///
    /// # Errors
    /// [`SegmentError`] naming the broken rule.
    pub fn validate(&self, value: &str) -> Result<(), SegmentError> {
        check_not_reserved(value)?;
        if value.len() > self.max_len {
            return Err(SegmentError::new(
                value,
                format!("longer than {} bytes", self.max_len),
            ));
        }
        if value
            .bytes()
            .all(|b| b < 0x80 && self.ascii_allowed & (1 << b) != 0)
        {
            return Ok(());
        }
        if let Some(c) = value.chars().find(|&c| !self.char_allowed(c)) {
            let reason = match &self.charset {
                Some(cs) if !cs.contains(c) => format!("{c:?} is outside {}", cs.source()),
                _ => format!("{c:?} cannot appear in a key segment"),
            };
            return Err(SegmentError::new(value, reason));
        }
        Ok(())
    }

    /// Appends a validated value, escaped if the policy says so.
    pub fn encode(&self, value: &str, sep: Separator, out: &mut String) {
        match self.policy {
            TextPolicy::Reject => out.push_str(value),
            TextPolicy::Escape => escape_into(value, sep, out),
        }
    }

    /// Decodes a raw segment strictly and validates the value.
    ///
    /// # Errors
    /// [`SegmentError`] when `raw` is not the canonical encoding of a valid value.
    pub fn decode(&self, raw: &str, sep: Separator) -> Result<String, SegmentError> {
        match self.policy {
            TextPolicy::Reject => {
                self.validate(raw)?;
                Ok(raw.to_owned())
            }
            TextPolicy::Escape => {
                let value = unescape_strict(raw, sep)?;
                self.validate(&value)
                    .map_err(|e| SegmentError::new(raw, e.reason().to_owned()))?;
                Ok(value)
            }
        }
    }

    /// The rule in words.
    pub fn describe(&self) -> String {
        let charset = self
            .charset
            .as_ref()
            .map_or("any character", Charset::source);
        match self.policy {
            TextPolicy::Reject => format!(
                "text of {charset}, 1-{} bytes, not `.`/`..`, stored verbatim",
                self.max_len
            ),
            TextPolicy::Escape => format!(
                "text of {charset}, 1-{} bytes, not `.`/`..`, stored percent-escaped (Go url.PathEscape)",
                self.max_len
            ),
        }
    }
}

/// Characters a [`TextPolicy::Reject`] value never holds: both separators, the braces of
/// hash tags and templates, `%` (readers may unescape keys) and control characters (NUL is
/// reserved by the store).
fn is_unsafe_verbatim(c: char) -> bool {
    matches!(c, '/' | ':' | '{' | '}' | '%') || c.is_control()
}

/// A text newtype declared with [`text_segment!`](crate::text_segment): its rule and its
/// string. The macro implements it together with [`Segment`](crate::keyspace::Segment).
pub trait TextSegment: Sized {
    /// The type's rule.
    fn rule() -> &'static TextRule;

    /// The value.
    fn as_str(&self) -> &str;

    /// Wraps a value that passed [`TextRule::validate`].
    fn from_validated(value: String) -> Self;
}

/// Declares a validated text segment type in one line.
///
/// `text_segment!(pub Name, charset = "[...]", max_len = N, policy = Reject | Escape)`;
/// `charset` may be omitted (any character), doc comments and attributes go first. The type
/// gets `new`, `as_str`, `into_string`, `Display`, `AsRef<str>`, `Segment` and `TextSegment`.
///
/// ```
/// use keyplane_core::keyspace::{Segment, Separator};
/// keyplane_core::text_segment!(
///     /// A tenant code such as `acme_01`.
///     pub TenantCode, charset = "[a-zA-Z0-9_]", max_len = 64, policy = Reject
/// );
/// keyplane_core::text_segment!(pub DisplayName, max_len = 128, policy = Escape);
///
/// assert_eq!(TenantCode::new("acme_01")?.as_str(), "acme_01");
/// assert!(TenantCode::new("acme-01").is_err());
/// let name = DisplayName::new("默认 租户/1")?;
/// assert_eq!(name.to_segment_string(Separator::Slash), "%E9%BB%98%E8%AE%A4%20%E7%A7%9F%E6%88%B7%2F1");
/// # Ok::<(), keyplane_core::keyspace::SegmentError>(())
/// ```
#[macro_export]
macro_rules! text_segment {
    ($(#[$meta:meta])* $vis:vis $name:ident, charset = $charset:expr, max_len = $max:expr, policy = $policy:ident $(,)?) => {
        $crate::text_segment!(@impl $(#[$meta])* $vis $name, ::std::option::Option::Some($charset), $max, $policy);
    };
    ($(#[$meta:meta])* $vis:vis $name:ident, max_len = $max:expr, policy = $policy:ident $(,)?) => {
        $crate::text_segment!(@impl $(#[$meta])* $vis $name, ::std::option::Option::None, $max, $policy);
    };
    (@impl $(#[$meta:meta])* $vis:vis $name:ident, $charset:expr, $max:expr, $policy:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        $vis struct $name(::std::string::String);

        impl $name {
            /// Validates `value` against the type's rule.
            ///
            /// # Errors
            /// [`SegmentError`]($crate::keyspace::SegmentError) naming the broken rule.
            $vis fn new(value: impl ::std::convert::Into<::std::string::String>) -> ::std::result::Result<Self, $crate::keyspace::SegmentError> {
                let value = value.into();
                <Self as $crate::keyspace::TextSegment>::rule().validate(&value)?;
                ::std::result::Result::Ok($name(value))
            }

            /// The value.
            $vis fn as_str(&self) -> &str {
                &self.0
            }

            /// The value as a `String`.
            $vis fn into_string(self) -> ::std::string::String {
                self.0
            }
        }

        impl $crate::keyspace::TextSegment for $name {
            fn rule() -> &'static $crate::keyspace::TextRule {
                static RULE: ::std::sync::LazyLock<$crate::keyspace::TextRule> = ::std::sync::LazyLock::new(|| {
                    $crate::keyspace::TextRule::new($charset, $max, $crate::keyspace::TextPolicy::$policy)
                });
                &RULE
            }

            fn as_str(&self) -> &str {
                &self.0
            }

            fn from_validated(value: ::std::string::String) -> Self {
                $name(value)
            }
        }

        impl $crate::keyspace::Segment for $name {
            fn encode(&self, sep: $crate::keyspace::Separator, out: &mut ::std::string::String) {
                <Self as $crate::keyspace::TextSegment>::rule().encode(&self.0, sep, out)
            }

            fn decode(raw: &str, sep: $crate::keyspace::Separator) -> ::std::result::Result<Self, $crate::keyspace::SegmentError> {
                <Self as $crate::keyspace::TextSegment>::rule().decode(raw, sep).map($name)
            }

            fn describe() -> ::std::string::String {
                <Self as $crate::keyspace::TextSegment>::rule().describe()
            }

            fn spec() -> $crate::keyspace::SegmentSpec {
                $crate::keyspace::SegmentSpec::text(<Self as $crate::keyspace::TextSegment>::rule())
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl ::std::convert::AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}
