//! The schema checker: finds templates that overlap or nest, and literals that break the
//! schema's rules.

use super::overlap::{Side, overlap};
use crate::keyspace::info::TemplateInfo;
use crate::keyspace::keyspace::{Keyspace, NamingRule};
use crate::keyspace::template::{Part, TemplateKind};
use std::fmt;

/// What a [`Finding`] is about.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FindingKind {
    /// Two templates can produce the same key.
    Overlap,
    /// A key of one template can be a directory of keys of another, and that is not declared
    /// with [`Key::DIRECTORY_OF`](crate::keyspace::Key::DIRECTORY_OF).
    Nesting,
    /// A literal segment breaks the schema's [`NamingRule`].
    Naming,
    /// A literal holds a byte keys must not: `{`/`}` (Redis Cluster hash tags), `%` (escaped
    /// segments), a control character or NUL (reserved by the store).
    UnsafeLiteral,
    /// A template is not a key template, or two infos carry the same template.
    Malformed,
}

/// One problem of a schema, naming the template(s) involved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What kind of problem.
    pub kind: FindingKind,
    /// The template (as written) the finding is about.
    pub template: String,
    /// The other template, for overlaps and nesting.
    pub other: Option<String>,
    /// The explanation, with an example where there is one.
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: `{}`", self.kind, self.template)?;
        if let Some(other) = &self.other {
            write!(f, " and `{other}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Checks the templates of a [`Keyspace`] with its naming rule.
///
/// An empty result means no problem was found.
pub fn check_keyspace<K: Keyspace>() -> Vec<Finding> {
    check(&K::templates(), K::naming_rule().as_ref())
}

/// Checks a schema's templates.
///
/// It finds templates that can produce the same key (a literal against a variable whose type
/// can produce it, or two variables whose types share a value), a template whose keys can be
/// directories of another's keys unless declared, literal segments outside `naming`, and
/// literals with bytes keys must not hold. Empty segments, doubled separators and `.`/`..` literals cannot
/// reach the checker: [`Template`](crate::keyspace::Template) refuses them when parsing.
///
/// Comparing two variables of different types relies on sample values of the built-in types
/// ([`Segment::can_produce`](crate::keyspace::Segment::can_produce) on both); variables of the same type
/// always overlap.
///
/// ```
/// use keyplane_core::keyspace::{
///     check, FieldInfo, FindingKind, Template, TemplateInfo, ValueFormat, ValueInfo,
/// };
/// use std::sync::LazyLock;
///
/// static BY_ID: LazyLock<Template> = LazyLock::new(|| Template::key("a/{x}", None).unwrap());
/// static FIXED: LazyLock<Template> = LazyLock::new(|| Template::key("a/b", None).unwrap());
/// keyplane_core::text_segment!(Name, charset = "[a-z]", max_len = 8, policy = Reject);
/// let info = |template, fields| TemplateInfo {
///     type_name: "example", template, fields, value_type: "()", encrypted: false, kind: None,
///     value: ValueInfo::of_format(ValueFormat::Bytes), directory_of: &[],
/// };
/// let findings = check(
///     &[info(&*BY_ID, vec![FieldInfo::of::<Name>("x")]), info(&*FIXED, vec![])],
///     None,
/// );
/// assert_eq!(findings.len(), 1);
/// assert_eq!(findings[0].kind, FindingKind::Overlap);
/// assert_eq!(findings[0].other.as_deref(), Some("a/b"));
/// ```
pub fn check(templates: &[TemplateInfo], naming: Option<&NamingRule>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for info in templates {
        check_one(info, naming, &mut findings);
    }
    for (i, a) in templates.iter().enumerate() {
        for b in &templates[i + 1..] {
            check_pair(a, b, &mut findings);
        }
    }
    findings
}

fn check_one(info: &TemplateInfo, naming: Option<&NamingRule>, findings: &mut Vec<Finding>) {
    let template = info.template;
    let mut push = |kind, message: String| {
        findings.push(Finding {
            kind,
            template: template.source().to_owned(),
            other: None,
            message,
        })
    };
    if template.kind() != TemplateKind::Key {
        push(
            FindingKind::Malformed,
            "a prefix template among key templates".into(),
        );
    }
    for var in template.vars() {
        if info.field(var).is_none() {
            push(
                FindingKind::Malformed,
                format!("variable `{var}` has no field information"),
            );
        }
    }
    for segment in template.segments() {
        for part in segment.parts() {
            let Part::Literal(literal) = part else {
                continue;
            };
            if let Some(c) = literal
                .chars()
                .find(|&c| matches!(c, '{' | '}' | '%') || c.is_control())
            {
                push(
                    FindingKind::UnsafeLiteral,
                    format!("literal `{literal}` holds {c:?}, which keys must not hold"),
                );
            }
            // The naming rule is about names: whole literal segments. Delimiters and affixes
            // inside a mixed segment (`:` in `{ip}:{port}`, `.json`) are structure.
            // The empty segment of an old layout's doubled separator is no name.
            if let Some(rule) = naming
                && segment.literal().is_some()
                && !(literal.is_empty() && template.is_read_only())
                && !rule.allows(literal)
            {
                push(
                    FindingKind::Naming,
                    format!(
                        "literal `{literal}` breaks the naming rule {}",
                        rule.describe()
                    ),
                );
            }
        }
    }
}

fn check_pair(a: &TemplateInfo, b: &TemplateInfo, findings: &mut Vec<Finding>) {
    let (ta, tb) = (a.template, b.template);
    if ta.source() == tb.source() {
        findings.push(finding(
            FindingKind::Malformed,
            a,
            b,
            "the same template twice".into(),
        ));
        return;
    }
    if ta.separator() != tb.separator() || ta.leading_separator() != tb.leading_separator() {
        // Segments never hold a raw separator, so keys that differ in separator or in the
        // leading separator cannot be equal or nested.
        return;
    }
    let shared = ta.depth().min(tb.depth());
    let mut witness = Vec::with_capacity(shared);
    for index in 0..shared {
        let left = Side {
            info: a,
            segment: &ta.segments()[index],
            tagged: ta.hash_tag() == Some(index),
        };
        let right = Side {
            info: b,
            segment: &tb.segments()[index],
            tagged: tb.hash_tag() == Some(index),
        };
        match overlap(&left, &right) {
            Some(example) => witness.push(example),
            None => return,
        }
    }
    let example = witness.join(ta.separator().as_str());
    if ta.depth() == tb.depth() {
        findings.push(finding(
            FindingKind::Overlap,
            a,
            b,
            format!("both can produce the key `{example}` (segment by segment)"),
        ));
        return;
    }
    let (dir, file) = if ta.depth() < tb.depth() {
        (a, b)
    } else {
        (b, a)
    };
    if !dir.directory_of.contains(&file.template.source()) {
        findings.push(finding(
            FindingKind::Nesting,
            dir,
            file,
            format!(
                "a key of the first (e.g. `{example}`) is a directory of keys of the second; \
                 declare it in DIRECTORY_OF if that is intended"
            ),
        ));
    }
}

fn finding(kind: FindingKind, a: &TemplateInfo, b: &TemplateInfo, message: String) -> Finding {
    Finding {
        kind,
        template: a.template.source().to_owned(),
        other: Some(b.template.source().to_owned()),
        message,
    }
}
