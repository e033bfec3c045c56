//! [`Template`]: the runtime form of a key template such as `jxt/tenants/{id}/database/{service}`.

use super::parse::{find_tag, infer_separator, parse_segment};
use super::part::{Part, TemplateSegment};
use crate::keyspace::segment::{EncodeSegment, Separator};
use std::borrow::Cow;
use std::fmt;

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
/// use keyplane_core::keyspace::{Separator, Template};
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
    pub(in crate::keyspace) source: Cow<'static, str>,
    pub(in crate::keyspace) kind: TemplateKind,
    pub(in crate::keyspace) separator: Separator,
    pub(in crate::keyspace) leading: bool,
    pub(in crate::keyspace) segments: Vec<TemplateSegment>,
    pub(in crate::keyspace) hash_tag: Option<usize>,
    pub(in crate::keyspace) var_count: usize,
    pub(in crate::keyspace) read_only: bool,
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
        Self::parse(source.into(), TemplateKind::Key, None, hash_tag, false)
    }

    /// Parses the template of a prefix; it must end with the separator (`jxt/tenants/{id}/`).
    ///
    /// # Errors
    /// As [`Template::key`], and when the template does not end with its separator.
    pub fn prefix(
        source: impl Into<Cow<'static, str>>,
        hash_tag: Option<&str>,
    ) -> Result<Self, TemplateError> {
        Self::parse(source.into(), TemplateKind::Prefix, None, hash_tag, false)
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
        Self::parse(source.into(), kind, Some(separator), hash_tag, false)
    }

    /// Parses the template of an old layout that is read and migrated but never written
    /// again: the typed store refuses every write to its keys
    /// ([`ErrorKind::ReadOnly`](crate::ErrorKind::ReadOnly)). Unlike the other constructors,
    /// it accepts empty segments, because old layouts have them: a client that joined a
    /// namespace and a key starting with the separator wrote `jxt//tenants/7/meta`. An empty
    /// segment matches exactly an empty segment of a key. The separator is inferred when
    /// `separator` is `None`.
    ///
    /// ```
    /// use keyplane_core::keyspace::{Template, TemplateKind};
    ///
    /// let old = Template::read_only("jxt//tenants/{id}/meta", TemplateKind::Key, None)?;
    /// assert!(old.is_read_only());
    /// assert_eq!(old.segments()[1].literal(), Some(""));
    /// let [id] = old.captures("jxt//tenants/7/meta")?;
    /// assert_eq!(id, "7");
    /// assert!(old.captures::<1>("jxt/tenants/7/meta").is_err());
    /// // The layouts of today keep refusing doubled separators.
    /// assert!(Template::key("jxt//tenants/{id}/meta", None).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Template::key`], except for empty segments.
    pub fn read_only(
        source: impl Into<Cow<'static, str>>,
        kind: TemplateKind,
        separator: Option<Separator>,
    ) -> Result<Self, TemplateError> {
        Self::parse(source.into(), kind, separator, None, true)
    }

    fn parse(
        source: Cow<'static, str>,
        kind: TemplateKind,
        separator: Option<Separator>,
        hash_tag: Option<&str>,
        read_only: bool,
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
        if body.is_empty() || (read_only && body.split(sep).all(str::is_empty)) {
            return Err(err("a template needs at least one segment".into()));
        }
        let mut segments = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for (index, text) in body.split(sep).enumerate() {
            let segment = parse_segment(text, index, read_only).map_err(&err)?;
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
            read_only,
        })
    }

    /// Whether the template is an old layout's ([`Template::read_only`]): its keys are read,
    /// listed, watched and migrated, never written through the typed store.
    pub fn is_read_only(&self) -> bool {
        self.read_only
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
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}
