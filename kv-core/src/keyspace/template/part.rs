//! [`TemplateSegment`] and its [`Part`]s: what a template is made of, which parsing builds
//! and matching reads.

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
    pub(in crate::keyspace) parts: Vec<Part>,
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
