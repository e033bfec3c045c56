//! Parsing template text into segments and parts.

use super::part::{Part, TemplateSegment};
use crate::keyspace::segment::Separator;

pub(in crate::keyspace) fn infer_separator(src: &str) -> Separator {
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

/// Parses one segment. An empty segment is an error unless `allow_empty` (old layouts read
/// by [`Template::read_only`](crate::keyspace::Template::read_only)); it is then the empty literal.
pub(in crate::keyspace) fn parse_segment(
    text: &str,
    index: usize,
    allow_empty: bool,
) -> Result<TemplateSegment, String> {
    if text.is_empty() && allow_empty {
        return Ok(TemplateSegment {
            parts: vec![Part::Literal(String::new())],
        });
    }
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
    for window in parts.windows(3) {
        if let [Part::Var(_), Part::Literal(delimiter), Part::Var(_)] = window
            && delimiter.chars().all(could_be_in_a_value)
        {
            return Err(format!(
                "delimiter `{delimiter}` in segment {index} could occur inside the variables' values"
            ));
        }
    }
    Ok(TemplateSegment { parts })
}

/// Characters that text, numbers and escapes commonly hold, so they cannot delimit two
/// variables unambiguously.
fn could_be_in_a_value(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~' | '%')
}

fn is_ident(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

pub(in crate::keyspace) fn find_tag(segments: &[TemplateSegment], tag: &str) -> Option<usize> {
    segments
        .iter()
        .position(|s| {
            s.parts
                .iter()
                .any(|p| matches!(p, Part::Var(n) if n == tag))
        })
        .or_else(|| segments.iter().position(|s| s.literal() == Some(tag)))
}
