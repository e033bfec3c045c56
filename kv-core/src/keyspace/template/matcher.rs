//! Matching raw keys against a [`Template`]: capturing the variables' raw text.

use super::layout::{Template, TemplateKind};
use super::part::{Part, TemplateSegment};
use crate::keyspace::key_error::{KeyError, KeyErrorReason};

impl Template {
    /// Matches `raw` against the template's shape and returns the raw text of each variable,
    /// in template order, without decoding them. A variable followed by a literal in the same
    /// segment ends at the literal's first occurrence.
    ///
    /// # Errors
    /// [`KeyError`] with the segment position where `raw` stops matching: a missing or extra
    /// leading/trailing separator, a different depth, a literal that differs, a missing hash
    /// tag, or `N` not equal to the number of variables.
    pub fn captures<'a, const N: usize>(&self, raw: &'a str) -> Result<[&'a str; N], KeyError> {
        let mut out = [""; N];
        self.capture_into(raw, &mut out)?;
        Ok(out)
    }

    /// [`Template::captures`] into a `Vec`, for callers that do not know the number of
    /// variables at compile time (schema tools, the invariant harness).
    ///
    /// # Errors
    /// As [`Template::captures`].
    pub fn captures_vec<'a>(&self, raw: &'a str) -> Result<Vec<&'a str>, KeyError> {
        let mut out = vec![""; self.var_count];
        self.capture_into(raw, &mut out)?;
        Ok(out)
    }

    fn capture_into<'a>(&self, raw: &'a str, out: &mut [&'a str]) -> Result<(), KeyError> {
        if out.len() != self.var_count {
            return Err(self.error(
                raw,
                0,
                KeyErrorReason::Shape(format!(
                    "the template has {} variables, {} were asked for",
                    self.var_count,
                    out.len()
                )),
            ));
        }
        let sep = self.separator.as_char();
        let mut body = raw;
        if self.leading {
            body = body.strip_prefix(sep).ok_or_else(|| {
                self.error(raw, 0, KeyErrorReason::Shape("no leading separator".into()))
            })?;
        } else if body.starts_with(sep) {
            return Err(self.error(
                raw,
                0,
                KeyErrorReason::Shape("unexpected leading separator".into()),
            ));
        }
        if self.kind == TemplateKind::Prefix {
            body = body.strip_suffix(sep).ok_or_else(|| {
                self.error(
                    raw,
                    0,
                    KeyErrorReason::Shape("a prefix ends with the separator".into()),
                )
            })?;
        }
        // The depth is checked first so that a key of another depth ranks below keys that
        // match the shape (see `NoMatch`): its position is 0.
        if body.split(sep).count() != self.segments.len() {
            return Err(self.depth_error(raw, 0, body));
        }
        let mut pieces = body.split(sep);
        let mut var = 0;
        for (index, segment) in self.segments.iter().enumerate() {
            let Some(mut piece) = pieces.next() else {
                return Err(self.depth_error(raw, index, body));
            };
            if self.hash_tag == Some(index) {
                piece = piece
                    .strip_prefix('{')
                    .and_then(|p| p.strip_suffix('}'))
                    .ok_or_else(|| {
                        self.error(
                            raw,
                            index,
                            KeyErrorReason::Shape("missing hash tag braces".into()),
                        )
                    })?;
            }
            let mut rest = piece;
            let mut parts = segment.parts.iter().peekable();
            while let Some(part) = parts.next() {
                match part {
                    Part::Literal(text) => {
                        rest = rest.strip_prefix(text.as_str()).ok_or_else(|| {
                            self.error(
                                raw,
                                index,
                                KeyErrorReason::Literal {
                                    expected: text.clone(),
                                    found: piece.to_owned(),
                                },
                            )
                        })?;
                    }
                    Part::Var(_) => {
                        let end = match parts.peek() {
                            Some(Part::Literal(next)) => {
                                rest.find(next.as_str()).ok_or_else(|| {
                                    self.error(
                                        raw,
                                        index,
                                        KeyErrorReason::Literal {
                                            expected: next.clone(),
                                            found: piece.to_owned(),
                                        },
                                    )
                                })?
                            }
                            _ => rest.len(),
                        };
                        out[var] = &rest[..end];
                        var += 1;
                        rest = &rest[end..];
                    }
                }
            }
            if !rest.is_empty() {
                return Err(self.error(
                    raw,
                    index,
                    KeyErrorReason::Literal {
                        expected: segment_text(segment),
                        found: piece.to_owned(),
                    },
                ));
            }
        }
        if pieces.next().is_some() {
            return Err(self.depth_error(raw, self.segments.len(), body));
        }
        Ok(())
    }

    /// A [`KeyError`] for `raw` against this template.
    pub fn error(&self, raw: &str, position: usize, reason: KeyErrorReason) -> KeyError {
        KeyError::new(self.source.clone(), raw, position, reason)
    }

    fn depth_error(&self, raw: &str, position: usize, body: &str) -> KeyError {
        let found = body.split(self.separator.as_char()).count();
        self.error(
            raw,
            position,
            KeyErrorReason::Depth {
                expected: self.segments.len(),
                found,
            },
        )
    }
}

fn segment_text(segment: &TemplateSegment) -> String {
    segment
        .parts
        .iter()
        .map(|p| match p {
            Part::Literal(text) => text.replace('{', "{{").replace('}', "}}"),
            Part::Var(name) => format!("{{{name}}}"),
        })
        .collect()
}
