//! [`Template`]: the runtime form of a key template such as `jxt/tenants/{id}/database/{service}`.

use super::key_error::{KeyError, KeyErrorReason};
use super::segment::{EncodeSegment, Separator};
use std::borrow::Cow;
use std::fmt;

/// One piece of a template segment: literal text or a variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Literal text (`{{` and `}}` already unescaped to `{` and `}`).
    Literal(String),
    /// A variable, by name (`id` for `{id}`).
    Var(String),
}

/// One separator-delimited segment of a template, made of one or more parts.
///
/// Most segments are a single literal or a single variable; a variable may share a segment
/// with literals (`{ip}:{port}` in a `/` template) when a literal follows it: the variable
/// then ends at the first occurrence of that literal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateSegment {
    parts: Vec<Part>,
}

impl TemplateSegment {
    /// The parts, in order.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// The literal text when the segment is a single literal.
    pub fn literal(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [Part::Literal(text)] => Some(text),
            _ => None,
        }
    }

    /// The variable name when the segment is a single variable.
    pub fn var(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [Part::Var(name)] => Some(name),
            _ => None,
        }
    }

    /// Whether the segment holds at least one variable.
    pub fn has_var(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Var(_)))
    }
}

/// A template that does not parse: the template text and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid template {template:?}: {reason}")]
pub struct TemplateError {
    template: String,
    reason: String,
}

impl TemplateError {
    pub(crate) fn new(template: &str, reason: impl Into<String>) -> Self {
        TemplateError {
            template: template.to_owned(),
            reason: reason.into(),
        }
    }

    /// What is wrong with the template.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// Whether a template describes full keys or directories (prefixes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TemplateKind {
    /// A full key: no trailing separator.
    Key,
    /// A directory: always ends with the separator.
    Prefix,
}

/// A parsed key template: separator, leading separator, segments and an optional Redis
/// Cluster hash tag.
///
/// Templates are written as in the seed documents. The separator is `/` if the template
/// contains one (outside variables), else `:` if it contains one, else `/`.
///
/// ```
/// use kv_core::keyspace::{Separator, Template};
///
/// let t = Template::key("/registry/{group}/{service}/{addr}/status", None)?;
/// assert_eq!(t.separator(), Separator::Slash);
/// assert!(t.leading_separator());
/// assert_eq!(t.root(), Some("registry"));
/// assert_eq!(t.vars().collect::<Vec<_>>(), ["group", "service", "addr"]);
///
/// let t = Template::key("nxc:map:{realm}:{provider}", Some("realm"))?;
/// assert_eq!(t.separator(), Separator::Colon);
/// let [realm, provider] = t.captures("nxc:map:{prod}:openai")?;
/// assert_eq!((realm, provider), ("prod", "openai"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    source: Cow<'static, str>,
    kind: TemplateKind,
    separator: Separator,
    leading: bool,
    segments: Vec<TemplateSegment>,
    hash_tag: Option<usize>,
    var_count: usize,
}

impl Template {
    /// Parses the template of a full key, with an optional hash tag: the name of a variable,
    /// or the text of a literal segment, whose segment is wrapped in `{`…`}` in every key.
    ///
    /// # Errors
    /// [`TemplateError`] for an empty template or segment, a doubled or trailing separator,
    /// stray braces, a bad or repeated variable name, two variables without a literal between
    /// them, a `.`/`..` segment, or an unknown hash tag.
    pub fn key(
        source: impl Into<Cow<'static, str>>,
        hash_tag: Option<&str>,
    ) -> Result<Self, TemplateError> {
        Self::parse(source.into(), TemplateKind::Key, None, hash_tag)
    }

    /// Parses the template of a prefix; it must end with the separator (`jxt/tenants/{id}/`).
    ///
    /// # Errors
    /// As [`Template::key`], and when the template does not end with its separator.
    pub fn prefix(
        source: impl Into<Cow<'static, str>>,
        hash_tag: Option<&str>,
    ) -> Result<Self, TemplateError> {
        Self::parse(source.into(), TemplateKind::Prefix, None, hash_tag)
    }

    /// Parses a template with an explicit separator instead of the inferred one.
    ///
    /// # Errors
    /// As [`Template::key`].
    pub fn with_separator(
        source: impl Into<Cow<'static, str>>,
        kind: TemplateKind,
        separator: Separator,
        hash_tag: Option<&str>,
    ) -> Result<Self, TemplateError> {
        Self::parse(source.into(), kind, Some(separator), hash_tag)
    }

    fn parse(
        source: Cow<'static, str>,
        kind: TemplateKind,
        separator: Option<Separator>,
        hash_tag: Option<&str>,
    ) -> Result<Self, TemplateError> {
        let src: &str = &source;
        let err = |reason: String| TemplateError::new(src, reason);
        if src.is_empty() {
            return Err(err("a template must not be empty".into()));
        }
        let separator = separator.unwrap_or_else(|| infer_separator(src));
        let sep = separator.as_char();
        let leading = src.starts_with(sep);
        let mut body = if leading { &src[1..] } else { src };
        match (kind, body.ends_with(sep)) {
            (TemplateKind::Prefix, true) => body = &body[..body.len() - 1],
            (TemplateKind::Prefix, false) => {
                return Err(err(format!("a prefix must end with the separator `{sep}`")));
            }
            (TemplateKind::Key, true) => {
                return Err(err(format!(
                    "a key must not end with the separator `{sep}`"
                )));
            }
            (TemplateKind::Key, false) => {}
        }
        if body.is_empty() {
            return Err(err("a template needs at least one segment".into()));
        }
        let mut segments = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for (index, text) in body.split(sep).enumerate() {
            let segment = parse_segment(text, index).map_err(&err)?;
            for part in &segment.parts {
                if let Part::Var(name) = part {
                    if names.contains(name) {
                        return Err(err(format!("variable `{name}` appears twice")));
                    }
                    names.push(name.clone());
                }
            }
            segments.push(segment);
        }
        let hash_tag = match hash_tag {
            None => None,
            Some(tag) => Some(find_tag(&segments, tag).ok_or_else(|| {
                err(format!(
                    "hash tag `{tag}` names neither a variable nor a literal segment"
                ))
            })?),
        };
        Ok(Template {
            kind,
            separator,
            leading,
            segments,
            hash_tag,
            var_count: names.len(),
            source,
        })
    }

    /// The template text as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether this is a key or a prefix template.
    pub fn kind(&self) -> TemplateKind {
        self.kind
    }

    /// The separator.
    pub fn separator(&self) -> Separator {
        self.separator
    }

    /// Whether keys start with the separator (`/registry/...`).
    pub fn leading_separator(&self) -> bool {
        self.leading
    }

    /// The segments, in order (without the leading or trailing separator).
    pub fn segments(&self) -> &[TemplateSegment] {
        &self.segments
    }

    /// The number of segments: the fixed depth of every key of the template.
    pub fn depth(&self) -> usize {
        self.segments.len()
    }

    /// The first segment when it is a literal (`jxt`, `registry`, `nxc`).
    pub fn root(&self) -> Option<&str> {
        self.segments.first().and_then(TemplateSegment::literal)
    }

    /// The index of the segment wrapped in a Redis Cluster hash tag, if one is declared.
    pub fn hash_tag(&self) -> Option<usize> {
        self.hash_tag
    }

    /// The variable names, in template order.
    pub fn vars(&self) -> impl Iterator<Item = &str> {
        self.segments.iter().flat_map(|s| {
            s.parts.iter().filter_map(|p| match p {
                Part::Var(name) => Some(name.as_str()),
                Part::Literal(_) => None,
            })
        })
    }

    /// The number of variables.
    pub fn var_count(&self) -> usize {
        self.var_count
    }

    /// Writes a key (or prefix) of this template into `out`, taking the variables' values in
    /// template order. Nothing is allocated beyond `out`.
    ///
    /// # Panics
    /// When `values` does not have one value per variable (a bug in the calling impl).
    pub fn write(&self, out: &mut String, values: &[&dyn EncodeSegment]) {
        assert_eq!(
            values.len(),
            self.var_count,
            "template {} takes {} values",
            self.source,
            self.var_count
        );
        let sep = self.separator;
        let mut values = values.iter();
        if self.leading {
            out.push(sep.as_char());
        }
        for (index, segment) in self.segments.iter().enumerate() {
            if index > 0 {
                out.push(sep.as_char());
            }
            let tagged = self.hash_tag == Some(index);
            if tagged {
                out.push('{');
            }
            for part in &segment.parts {
                match part {
                    Part::Literal(text) => out.push_str(text),
                    Part::Var(_) => {
                        if let Some(value) = values.next() {
                            value.encode_segment(sep, out);
                        }
                    }
                }
            }
            if tagged {
                out.push('}');
            }
        }
        if self.kind == TemplateKind::Prefix {
            out.push(sep.as_char());
        }
    }

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
        if N != self.var_count {
            return Err(self.error(
                raw,
                0,
                KeyErrorReason::Shape(format!(
                    "the template has {} variables, {N} were asked for",
                    self.var_count
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
        Ok(out)
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

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

fn infer_separator(src: &str) -> Separator {
    let mut depth = 0usize;
    let mut colon = false;
    for c in src.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            '/' if depth == 0 => return Separator::Slash,
            ':' if depth == 0 => colon = true,
            _ => {}
        }
    }
    if colon {
        Separator::Colon
    } else {
        Separator::Slash
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

fn parse_segment(text: &str, index: usize) -> Result<TemplateSegment, String> {
    if text.is_empty() {
        return Err(format!(
            "segment {index} is empty (doubled or stray separator)"
        ));
    }
    if text == "." || text == ".." {
        return Err(format!("segment {index} is `{text}`"));
    }
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                literal.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                literal.push('}');
            }
            '}' => return Err(format!("stray `}}` in segment {index} (write `}}}}`)")),
            '{' => {
                let mut name = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) => name.push(c),
                        None => return Err(format!("unclosed `{{` in segment {index}")),
                    }
                }
                if !is_ident(&name) {
                    return Err(format!("`{{{name}}}` is not a variable name"));
                }
                if !literal.is_empty() {
                    parts.push(Part::Literal(std::mem::take(&mut literal)));
                } else if matches!(parts.last(), Some(Part::Var(_))) {
                    return Err(format!(
                        "two variables in segment {index} without a literal delimiter"
                    ));
                }
                parts.push(Part::Var(name));
            }
            c => literal.push(c),
        }
    }
    if !literal.is_empty() {
        parts.push(Part::Literal(literal));
    }
    Ok(TemplateSegment { parts })
}

fn is_ident(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

fn find_tag(segments: &[TemplateSegment], tag: &str) -> Option<usize> {
    segments
        .iter()
        .position(|s| {
            s.parts
                .iter()
                .any(|p| matches!(p, Part::Var(n) if n == tag))
        })
        .or_else(|| segments.iter().position(|s| s.literal() == Some(tag)))
}
