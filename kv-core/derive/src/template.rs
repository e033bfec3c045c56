//! The template grammar, parsed and checked at compile time.
//!
//! A template is a key layout as the seed documents write it:
//! `jxt/tenants/{id}/database/{service}`, `/registry/{group}/{service}/{ip}:{port}/status`,
//! `nxc:map:{realm}:{provider}`. `{name}` is a variable, `{{` and `}}` are literal braces,
//! everything else is literal. The separator is `/` when the template contains one, else `:`
//! when it contains one, else `/`; a `/` template may use `:` only as the delimiter between two
//! variables of one segment.

use std::collections::HashSet;

/// The separator between segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sep {
    /// `/`, as in etcd layouts.
    Slash,
    /// `:`, as in Redis layouts.
    Colon,
}

impl Sep {
    pub(crate) fn char(self) -> char {
        match self {
            Sep::Slash => '/',
            Sep::Colon => ':',
        }
    }
}

/// One piece of a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    /// Literal text (braces already unescaped).
    Lit(String),
    /// A variable, named by a field of the key struct.
    Var(String),
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Template {
    /// The template as written.
    pub(crate) text: String,
    /// The separator.
    pub(crate) sep: Sep,
    /// Whether the key starts with the separator (`/registry/...`).
    pub(crate) leading: bool,
    /// Whether the template ends with the separator (a directory).
    pub(crate) trailing: bool,
    /// The segments, each a non-empty list of parts with no two adjacent literals.
    pub(crate) segments: Vec<Vec<Part>>,
}

/// Tokens before splitting into segments.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Char(char),
    Var(String),
}

impl Template {
    /// Parses and checks a template's own syntax (not its variables against fields).
    ///
    /// Errors are messages meant to be shown at the template's span.
    ///
    /// `read_only` templates (an old layout's, `#[kv(read_only)]`) may have empty segments,
    /// as keys written with a doubled separator do (`jxt//tenants/{id}/meta`); an empty
    /// segment is the empty literal.
    pub(crate) fn parse(text: &str, read_only: bool) -> Result<Template, String> {
        if text.is_empty() {
            return Err("empty template: a key needs at least one segment".into());
        }
        let tokens = tokenize(text)?;
        // As keyplane-core's `Template` infers it: `/` if present, else `:` if present, else `/`.
        let sep = if tokens.contains(&Token::Char('/')) || !tokens.contains(&Token::Char(':')) {
            Sep::Slash
        } else {
            Sep::Colon
        };
        let sep_char = sep.char();
        let mut raw: Vec<Vec<Token>> = vec![Vec::new()];
        for token in tokens {
            match token {
                Token::Char(c) if c == sep_char => raw.push(Vec::new()),
                other => raw.last_mut().expect("never empty").push(other),
            }
        }
        let leading = raw.len() > 1 && raw[0].is_empty();
        if leading {
            raw.remove(0);
        }
        let trailing = raw.len() > 1 && raw.last().is_some_and(Vec::is_empty);
        if trailing {
            raw.pop();
        }
        if raw.iter().all(Vec::is_empty) {
            return Err(format!(
                "template `{text}` has an empty segment and nothing else: a key needs at least one non-empty segment"
            ));
        }
        if let Some(i) = raw.iter().position(Vec::is_empty)
            && !read_only
        {
            let s = sep_char;
            return Err(format!(
                "template `{text}` has a doubled separator `{s}{s}` (empty segment {n}): every segment must be non-empty (an old layout that has them is declared `#[kv(read_only)]`)",
                n = i + 1
            ));
        }
        let segments: Vec<Vec<Part>> = raw
            .into_iter()
            .map(|tokens| {
                if tokens.is_empty() {
                    vec![Part::Lit(String::new())]
                } else {
                    group(tokens)
                }
            })
            .collect();
        let mut seen = HashSet::new();
        for (i, seg) in segments.iter().enumerate() {
            check_segment(text, sep, i, seg)?;
            for part in seg {
                if let Part::Var(name) = part
                    && !seen.insert(name.clone())
                {
                    return Err(format!(
                        "template `{text}` uses variable `{{{name}}}` twice: each field appears once"
                    ));
                }
            }
        }
        Ok(Template {
            text: text.to_owned(),
            sep,
            leading,
            trailing,
            segments,
        })
    }

    /// The variables in order of appearance.
    pub(crate) fn vars(&self) -> impl Iterator<Item = &str> {
        self.segments.iter().flatten().filter_map(|p| match p {
            Part::Var(v) => Some(v.as_str()),
            Part::Lit(_) => None,
        })
    }

    /// Whether a literal contains a brace (`{{` or `}}` in the template).
    pub(crate) fn has_literal_brace(&self) -> bool {
        self.segments.iter().flatten().any(|p| match p {
            Part::Lit(l) => l.contains(['{', '}']),
            Part::Var(_) => false,
        })
    }

    /// The text of segment `index` as written in the template (braces escaped again).
    pub(crate) fn segment_text(&self, index: usize) -> String {
        self.segments[index]
            .iter()
            .map(|p| match p {
                Part::Lit(l) => l.replace('{', "{{").replace('}', "}}"),
                Part::Var(v) => format!("{{{v}}}"),
            })
            .collect()
    }

    /// The segment a hash tag names: the segment of the variable `tag`, or else the literal
    /// segment whose text is `tag` (the rule of `Template::key` in keyplane-core).
    pub(crate) fn tag_segment(&self, tag: &str) -> Option<usize> {
        let var = |seg: &Vec<Part>| seg.iter().any(|p| matches!(p, Part::Var(v) if v == tag));
        let lit = |seg: &Vec<Part>| matches!(seg.as_slice(), [Part::Lit(l)] if l == tag);
        self.segments
            .iter()
            .position(var)
            .or_else(|| self.segments.iter().position(lit))
    }
}

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '{' if chars.peek().is_some_and(|&(_, n)| n == '{') => {
                chars.next();
                tokens.push(Token::Char('{'));
            }
            '}' if chars.peek().is_some_and(|&(_, n)| n == '}') => {
                chars.next();
                tokens.push(Token::Char('}'));
            }
            '{' => {
                let rest = &text[at + 1..];
                let Some(end) = rest
                    .find(['}', '{'])
                    .filter(|&e| rest[e..].starts_with('}'))
                else {
                    return Err(format!(
                        "template `{text}` has a stray `{{` at byte {at}: write `{{{{` for a literal brace or close the variable with `}}`"
                    ));
                };
                let name = &rest[..end];
                if !is_ident(name) {
                    return Err(format!(
                        "template `{text}` has an invalid variable `{{{name}}}` at byte {at}: a variable names a field (`{{field}}`); write `{{{{` for a literal brace"
                    ));
                }
                tokens.push(Token::Var(name.to_owned()));
                for _ in 0..=name.chars().count() {
                    chars.next();
                }
            }
            '}' => {
                return Err(format!(
                    "template `{text}` has a stray `}}` at byte {at}: write `}}}}` for a literal brace"
                ));
            }
            c if c.is_control() => {
                return Err(format!(
                    "template `{text}` contains the control character {c:?} at byte {at}"
                ));
            }
            c => tokens.push(Token::Char(c)),
        }
    }
    Ok(tokens)
}

fn is_ident(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name != "_"
}

fn group(tokens: Vec<Token>) -> Vec<Part> {
    let mut parts: Vec<Part> = Vec::new();
    for token in tokens {
        match token {
            Token::Var(v) => parts.push(Part::Var(v)),
            Token::Char(c) => match parts.last_mut() {
                Some(Part::Lit(l)) => l.push(c),
                _ => parts.push(Part::Lit(c.to_string())),
            },
        }
    }
    parts
}

/// Characters that segment values commonly contain (digits, letters, UUID hyphens, dots of
/// host names, unreserved and percent-escape characters): a delimiter made only of them cannot
/// tell where one variable ends and the next begins.
fn is_value_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '~' | '%')
}

fn check_segment(text: &str, sep: Sep, index: usize, seg: &[Part]) -> Result<(), String> {
    let n = index + 1;
    if let [Part::Lit(l)] = seg
        && (l == "." || l == "..")
    {
        return Err(format!(
            "template `{text}`: segment {n} is `{l}`, which paths resolve to another directory; `.` and `..` are never segments"
        ));
    }
    for pair in seg.windows(2) {
        if let [Part::Var(a), Part::Var(b)] = pair {
            return Err(format!(
                "template `{text}`: variables `{{{a}}}` and `{{{b}}}` in segment {n} have no literal delimiter between them, so a key cannot be split back into fields; put a delimiter such as `:` between them"
            ));
        }
    }
    for (i, part) in seg.iter().enumerate() {
        let Part::Lit(lit) = part else { continue };
        let between_vars = i > 0 && i + 1 < seg.len();
        if between_vars && lit.chars().all(is_value_char) {
            let (Part::Var(a), Part::Var(b)) = (&seg[i - 1], &seg[i + 1]) else {
                unreachable!("literals are never adjacent")
            };
            return Err(format!(
                "template `{text}`: the delimiter `{lit}` between `{{{a}}}` and `{{{b}}}` in segment {n} is ambiguous, because segment values may contain it; use a punctuation delimiter such as `:` or `@`"
            ));
        }
        if sep == Sep::Slash && lit.contains(':') && !between_vars {
            return Err(format!(
                "template `{text}` mixes the separators `/` and `:` (segment {n} `{lit}` contains `:`): use one separator; in a `/` template `:` may only delimit two variables of one segment, as in `{{ip}}:{{port}}`"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Part {
        Part::Lit(s.into())
    }
    fn var(s: &str) -> Part {
        Part::Var(s.into())
    }

    #[test]
    fn parses_the_seed_layouts() {
        let t = Template::parse("jxt/tenants/{id}/database/{service}", false).unwrap();
        assert_eq!(t.sep, Sep::Slash);
        assert!(!t.leading && !t.trailing);
        assert_eq!(
            t.segments,
            vec![
                vec![lit("jxt")],
                vec![lit("tenants")],
                vec![var("id")],
                vec![lit("database")],
                vec![var("service")]
            ]
        );

        let t = Template::parse("/registry/{group}/{service}/{ip}:{port}/status", false).unwrap();
        assert!(t.leading);
        assert_eq!(t.segments[3], vec![var("ip"), lit(":"), var("port")]);
        assert_eq!(
            t.vars().collect::<Vec<_>>(),
            ["group", "service", "ip", "port"]
        );

        let t = Template::parse("nxc:map:{realm}:{provider}", false).unwrap();
        assert_eq!(t.sep, Sep::Colon);
        assert_eq!(t.segments.len(), 4);

        assert_eq!(Template::parse("{id}", false).unwrap().sep, Sep::Slash);
        assert_eq!(Template::parse("config", false).unwrap().sep, Sep::Slash);

        let t = Template::parse("jxt/tenants/{id}/", false).unwrap();
        assert!(t.trailing);
        assert_eq!(t.segments.len(), 3);
    }

    #[test]
    fn literal_braces_and_affixes() {
        let t = Template::parse("a/{{x}}/v{n}.json", false).unwrap();
        assert_eq!(t.segments[1], vec![lit("{x}")]);
        assert_eq!(t.segments[2], vec![lit("v"), var("n"), lit(".json")]);
        assert!(t.has_literal_brace());
        assert_eq!(t.segment_text(1), "{{x}}");
        assert_eq!(t.segment_text(2), "v{n}.json");
        let t = Template::parse("nxc:{realm}:cfg:{realm_id}", false).unwrap();
        assert_eq!(t.tag_segment("realm"), Some(1));
        assert_eq!(t.tag_segment("cfg"), Some(2));
        assert_eq!(t.tag_segment("nope"), None);
    }

    #[test]
    fn read_only_templates_keep_empty_segments() {
        let t = Template::parse("jxt//tenants/{id}/meta", true).unwrap();
        assert!(!t.leading && !t.trailing);
        assert_eq!(t.segments.len(), 5);
        assert_eq!(t.segments[1], vec![lit("")]);
        assert_eq!(t.segment_text(1), "");
        let t = Template::parse("jxt//tenants/{id}/", true).unwrap();
        assert!(t.trailing);
        assert_eq!(t.segments.len(), 4);
        let t = Template::parse("//a", true).unwrap();
        assert!(t.leading);
        assert_eq!(t.segments, vec![vec![lit("")], vec![lit("a")]]);
        // Everything else is checked as for any template.
        assert!(Template::parse("/", true).is_err());
        assert!(Template::parse("a//{x}{y}", true).is_err());
        let err = Template::parse("jxt//tenants/{id}/meta", false).unwrap_err();
        assert!(err.contains("read_only"), "{err}");
    }

    #[test]
    fn rejects_bad_templates() {
        let cases = [
            ("", "empty template"),
            ("/", "empty segment"),
            ("a//b", "doubled separator `//`"),
            ("a::b", "doubled separator `::`"),
            ("//a", "doubled separator"),
            ("a/{id", "stray `{`"),
            ("a/{i{d}", "stray `{`"),
            ("a/id}", "stray `}`"),
            ("a/{}", "invalid variable"),
            ("a/{1x}", "invalid variable"),
            ("a/{x}{y}", "no literal delimiter"),
            ("a/{x}-{y}", "ambiguous"),
            ("a/{x}/{x}", "twice"),
            ("nxc:map/{x}", "mixes the separators"),
            ("a/b:{x}", "mixes the separators"),
            ("a/\u{0}", "control character"),
            ("a/../b", "`..`"),
            ("./b", "`.`"),
        ];
        for (text, want) in cases {
            let err = Template::parse(text, false).unwrap_err();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }
}
