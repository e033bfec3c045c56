//! [`KeyError`]: why a raw key does not parse as a key of one template.

use super::segment::SegmentError;
use std::borrow::Cow;
use std::fmt;

/// Why a raw key does not match a template.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyErrorReason {
    /// The overall shape differs: leading/trailing separator, hash tag braces.
    Shape(String),
    /// The key has another number of segments.
    Depth {
        /// Segments in the template.
        expected: usize,
        /// Segments in the key.
        found: usize,
    },
    /// A literal segment (or the literal part of one) differs.
    Literal {
        /// The template's literal.
        expected: String,
        /// The key's segment.
        found: String,
    },
    /// A variable's raw text does not decode as its type.
    Field {
        /// The variable's name.
        name: Cow<'static, str>,
        /// The segment error.
        error: SegmentError,
    },
}

impl fmt::Display for KeyErrorReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyErrorReason::Shape(reason) => f.write_str(reason),
            KeyErrorReason::Depth { expected, found } => {
                write!(f, "{found} segments, the template has {expected}")
            }
            KeyErrorReason::Literal { expected, found } => {
                write!(f, "expected `{expected}`, found `{found}`")
            }
            KeyErrorReason::Field { name, error } => write!(f, "field `{name}`: {error}"),
        }
    }
}

/// A raw key that is not a key of a template: the template, the key, how far it matched and
/// why it stopped.
///
/// Converts into [`Error`](crate::Error) of kind [`InvalidKey`](crate::ErrorKind::InvalidKey),
/// whose [`condition`](crate::Error::condition) it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "key {:?} does not match template `{}` at segment {}: {}",
    self.0.raw,
    self.0.template,
    self.0.position,
    self.0.reason
)]
pub struct KeyError(Box<Inner>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Inner {
    template: Cow<'static, str>,
    raw: String,
    position: usize,
    reason: KeyErrorReason,
}

impl KeyError {
    /// A new error: `raw` stops matching `template` at segment `position` because of `reason`.
    pub fn new(
        template: impl Into<Cow<'static, str>>,
        raw: &str,
        position: usize,
        reason: KeyErrorReason,
    ) -> Self {
        KeyError(Box::new(Inner {
            template: template.into(),
            raw: raw.to_owned(),
            position,
            reason,
        }))
    }

    /// The template the key was matched against.
    pub fn template(&self) -> &str {
        &self.0.template
    }

    /// The raw key.
    pub fn raw(&self) -> &str {
        &self.0.raw
    }

    /// The index of the segment where matching stopped (0 = the first segment); a larger
    /// position means the key came closer to the template.
    pub fn position(&self) -> usize {
        self.0.position
    }

    /// Why matching stopped.
    pub fn reason(&self) -> &KeyErrorReason {
        &self.0.reason
    }
}

impl From<KeyError> for crate::Error {
    fn from(err: KeyError) -> Self {
        let template = err.0.template.clone();
        crate::Error::from_condition(crate::ErrorKind::InvalidKey, err)
            .with_context("template", template)
    }
}

impl From<SegmentError> for crate::Error {
    fn from(err: SegmentError) -> Self {
        crate::Error::from_condition(crate::ErrorKind::InvalidKey, err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A condition (a key that breaks its template, a schema's own refusal) is the error's
    /// message; a reporter that walks the causes must not show its text a second time.
    #[test]
    fn chain_shows_a_condition_once() {
        let key = KeyError::new(
            "a/{id}",
            "b/1",
            0,
            KeyErrorReason::Literal {
                expected: "a".into(),
                found: "b".into(),
            },
        );
        let segment = SegmentError::new("x y", "a space is outside the charset");
        for (err, text) in [
            (crate::Error::from(key.clone()), key.to_string()),
            (crate::Error::from(segment.clone()), segment.to_string()),
        ] {
            assert_eq!(err.chain().matches(&text).count(), 1, "{}", err.chain());
            assert_eq!(err.message(), text);
            let mut cause = std::error::Error::source(&err);
            while let Some(c) = cause {
                assert_ne!(c.to_string(), text, "a cause repeats the message");
                cause = c.source();
            }
        }
        // The condition is still there, typed.
        let err = crate::Error::from(key.clone());
        let condition = err.condition().and_then(|c| c.downcast_ref::<KeyError>());
        assert_eq!(condition, Some(&key));
    }
}
