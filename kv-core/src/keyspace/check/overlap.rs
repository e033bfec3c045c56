//! Can two template segments produce the same text? The segment-level core of the checker.

use crate::keyspace::info::{FieldInfo, TemplateInfo};
use crate::keyspace::segment::Separator;
use crate::keyspace::template::{Part, TemplateSegment};

/// Texts tried when two variables (or a variable and a mixed segment) are compared: one or
/// more values of every built-in segment type, and the adversarial shapes users' types are
/// likely to accept. Two variables overlap when both types accept one of these.
const PROBES: &[&str] = &[
    "0",
    "1",
    "10",
    "-1",
    "007",
    "0000000001",
    "a",
    "b",
    "x1",
    "A",
    "Z9",
    "_",
    "a_b",
    "a-b",
    "a.b",
    "a~b",
    "a@b",
    "a+b",
    "a%20b",
    "%E9%BB%98",
    "67e55044-10b1-426f-9247-bb680e5fe0c8",
    "127.0.0.1",
    "127.0.0.1:80",
    "[::1]:80",
    "[%3A%3A1]%3A80",
    "127.0.0.1%3A80",
    "example.com:443",
    "example.com%3A443",
    "default",
    "meta",
];

/// The text of one segment of a key, for comparison: what a template segment is once its
/// hash-tag braces are taken into account.
pub(crate) struct Side<'a> {
    pub(crate) info: &'a TemplateInfo,
    pub(crate) segment: &'a TemplateSegment,
    pub(crate) tagged: bool,
}

impl Side<'_> {
    fn sep(&self) -> Separator {
        self.info.template.separator()
    }

    fn field(&self, name: &str) -> Option<&FieldInfo> {
        self.info.field(name)
    }

    /// Whether this segment can be exactly `text` (including hash-tag braces).
    pub(crate) fn can_be(&self, text: &str) -> bool {
        let text = if self.tagged {
            match text.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
                Some(inner) => inner,
                None => return false,
            }
        } else {
            text
        };
        self.parts_can_be(self.segment.parts(), text)
    }

    fn parts_can_be(&self, parts: &[Part], text: &str) -> bool {
        match parts {
            [] => text.is_empty(),
            [Part::Literal(lit), rest @ ..] => text
                .strip_prefix(lit.as_str())
                .is_some_and(|t| self.parts_can_be(rest, t)),
            [Part::Var(name), rest @ ..] => {
                let (value, tail) = match rest.first() {
                    Some(Part::Literal(next)) => match text.find(next.as_str()) {
                        Some(end) => text.split_at(end),
                        None => return false,
                    },
                    _ => (text, ""),
                };
                let Some(field) = self.field(name) else {
                    // A variable without field information may be anything.
                    return self.parts_can_be(rest, tail);
                };
                field.can_produce(value, self.sep()) && self.parts_can_be(rest, tail)
            }
        }
    }

    /// Some texts this segment can be: the literal itself, or the probes its variables accept
    /// put together with its literals.
    pub(crate) fn examples(&self) -> Vec<String> {
        let mut texts = vec![String::new()];
        for part in self.segment.parts() {
            let options: Vec<&str> = match part {
                Part::Literal(lit) => vec![lit.as_str()],
                Part::Var(name) => match self.field(name) {
                    Some(field) => PROBES
                        .iter()
                        .copied()
                        .filter(|p| field.can_produce(p, self.sep()))
                        .collect(),
                    None => PROBES.to_vec(),
                },
            };
            texts = texts
                .iter()
                .flat_map(|t| options.iter().map(move |o| format!("{t}{o}")))
                .take(256)
                .collect();
        }
        if self.tagged {
            texts = texts.into_iter().map(|t| format!("{{{t}}}")).collect();
        }
        texts
    }

    /// The single variable's field when the segment is one untagged-or-tagged variable.
    fn sole_field(&self) -> Option<&FieldInfo> {
        self.segment.var().and_then(|name| self.field(name))
    }
}

/// Whether segments `a` and `b` can hold the same text; `Some(example)` gives a witness.
pub(crate) fn overlap(a: &Side<'_>, b: &Side<'_>) -> Option<String> {
    if let (Some(x), Some(y)) = (a.segment.literal(), b.segment.literal()) {
        let (x, y) = (brace(x, a.tagged), brace(y, b.tagged));
        return (x == y).then_some(x);
    }
    if let (Some(fa), Some(fb)) = (a.sole_field(), b.sole_field())
        && a.tagged == b.tagged
        && fa.type_name == fb.type_name
    {
        return Some(format!("any {}", fa.type_name));
    }
    a.examples()
        .into_iter()
        .find(|t| b.can_be(t))
        .or_else(|| b.examples().into_iter().find(|t| a.can_be(t)))
}

fn brace(text: &str, tagged: bool) -> String {
    if tagged {
        format!("{{{text}}}")
    } else {
        text.to_owned()
    }
}
