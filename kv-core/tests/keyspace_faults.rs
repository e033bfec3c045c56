//! Planted faults: the invariant harness and the schema checker must reject each of them.
#![cfg(feature = "proptest")]

use keyplane_core::keyspace::{
    FieldInfo, FindingKind, Key, KeyError, KeyStrategy, Keyspace, KeyspaceStrategy, ListPrefix,
    NoMatch, Prefix, PrefixStrategy, Segment, SegmentError, SegmentStrategy, Separator, Template,
    TemplateInfo, Text, check_keyspace, decode_field, segment, verify_key, verify_keyspace,
    verify_prefix, verify_segment, verify_segment_order,
};
use proptest::prelude::*;
use std::sync::LazyLock;

keyplane_core::text_segment!(Word, charset = "[a-z]", max_len = 8, policy = Reject);

/// A text segment that forgets to escape: it writes the value verbatim.
#[derive(Debug, Clone, PartialEq)]
struct Unescaped(String);

impl Segment for Unescaped {
    fn encode(&self, _sep: Separator, out: &mut String) {
        out.push_str(&self.0);
    }
    fn decode(raw: &str, _sep: Separator) -> Result<Self, SegmentError> {
        if raw.is_empty() {
            return Err(SegmentError::new(raw, "empty"));
        }
        Ok(Unescaped(raw.to_owned()))
    }
    fn describe() -> String {
        "any non-empty text, verbatim".into()
    }
}

impl SegmentStrategy for Unescaped {
    fn strategy() -> BoxedStrategy<Self> {
        "[a-z/:]{1,6}".prop_map(Unescaped).boxed()
    }
}

/// An integer that accepts leading zeros and claims an order it does not have.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Loose(u32);

impl Segment for Loose {
    const ORDERED: bool = true;
    fn encode(&self, _sep: Separator, out: &mut String) {
        out.push_str(&self.0.to_string());
    }
    fn decode(raw: &str, _sep: Separator) -> Result<Self, SegmentError> {
        raw.parse()
            .map(Loose)
            .map_err(|_| SegmentError::new(raw, "not a number"))
    }
    fn describe() -> String {
        "a number, loosely".into()
    }
}

impl SegmentStrategy for Loose {
    fn strategy() -> BoxedStrategy<Self> {
        (0u32..200).prop_map(Loose).boxed()
    }
}

/// Declares a one-variable key `$template` over field `x: $ty`.
macro_rules! one_var_key {
    ($name:ident, $template:literal, $ty:ty, $directory_of:expr) => {
        #[derive(Debug, Clone, PartialEq)]
        struct $name {
            x: $ty,
        }
        impl Key for $name {
            const TEMPLATE: &'static str = $template;
            const DIRECTORY_OF: &'static [&'static str] = $directory_of;
            type Value = Text;
            fn template() -> &'static Template {
                static T: LazyLock<Template> =
                    LazyLock::new(|| Template::key($template, None).unwrap());
                &T
            }
            fn write(&self, out: &mut String) {
                Self::template().write(out, &[&self.x]);
            }
            fn parse(raw: &str) -> Result<Self, KeyError> {
                let t = Self::template();
                let [x] = t.captures(raw)?;
                Ok($name {
                    x: decode_field(t, raw, 1, "x", x)?,
                })
            }
            fn fields(&self) -> Vec<(&'static str, String)> {
                vec![("x", self.x.to_segment_string(Self::template().separator()))]
            }
            fn field_infos() -> Vec<FieldInfo> {
                vec![FieldInfo::of::<$ty>("x")]
            }
        }
        impl KeyStrategy for $name {
            fn strategy() -> BoxedStrategy<Self> {
                segment::<$ty>().prop_map(|x| $name { x }).boxed()
            }
        }
    };
}

one_var_key!(UnescapedSlashKey, "files/{x}/meta", Unescaped, &[]);
one_var_key!(UnescapedColonKey, "files:{x}:meta", Unescaped, &[]);
one_var_key!(WordKey, "a/{x}", Word, &[]);
one_var_key!(WordDirKey, "a/{x}", Word, &["a/{x}/c"]);
one_var_key!(WordChildKey, "a/{x}/c", Word, &[]);
one_var_key!(CleanKey, "t/{x}/v", u64, &[]);
one_var_key!(LiteralBraces, "cfg/{x}/{{raw}}", u64, &[]);

#[test]
fn an_encoder_that_does_not_escape_the_separator_is_rejected() {
    let err = verify_key::<UnescapedSlashKey>().unwrap_err();
    assert!(err.contains("invariant"), "{err}");
    assert!(verify_key::<UnescapedColonKey>().is_err());
    assert!(verify_segment::<Unescaped>().is_err());
}

#[test]
fn a_non_canonical_or_falsely_ordered_segment_is_rejected() {
    let err = verify_segment::<Loose>().unwrap_err();
    assert!(err.contains("canonical"), "{err}");
    let err = verify_segment_order::<Loose>().unwrap_err();
    assert!(err.contains("order"), "{err}");
}

#[test]
fn braces_without_a_declared_hash_tag_are_rejected() {
    // `{raw}` would become the Redis Cluster hash tag of every key of the template.
    let err = verify_key::<LiteralBraces>().unwrap_err();
    assert!(err.contains("hash tag"), "{err}");
}

#[test]
fn a_clean_key_passes() {
    verify_key::<CleanKey>().unwrap();
}

/// A prefix of `t/{x}/v` that forgets its trailing separator: `t/1` would match `t/10/v`.
#[derive(Debug, Clone, PartialEq)]
struct NoTrailingSeparator {
    x: u64,
}

impl ListPrefix for NoTrailingSeparator {
    type Key = CleanKey;
}

impl Prefix for NoTrailingSeparator {
    const TEMPLATE: &'static str = "t/{x}/";
    fn template() -> &'static Template {
        static T: LazyLock<Template> = LazyLock::new(|| Template::prefix("t/{x}/", None).unwrap());
        &T
    }
    fn write(&self, out: &mut String) {
        out.push_str("t/");
        self.x.encode(Separator::Slash, out);
    }
    fn parse(raw: &str) -> Result<Self, KeyError> {
        let raw = raw.strip_suffix('/').unwrap_or(raw);
        let t = Self::template();
        let with_separator = format!("{raw}/");
        let [x] = t.captures(&with_separator)?;
        Ok(NoTrailingSeparator {
            x: decode_field(t, raw, 1, "x", x)?,
        })
    }
    fn fields(&self) -> Vec<(&'static str, String)> {
        vec![("x", self.x.to_string())]
    }
}

impl PrefixStrategy for NoTrailingSeparator {
    fn strategy() -> BoxedStrategy<Self> {
        segment::<u64>()
            .prop_map(|x| NoTrailingSeparator { x })
            .boxed()
    }
}

#[test]
fn a_prefix_without_its_trailing_separator_is_rejected() {
    let err = verify_prefix::<NoTrailingSeparator>().unwrap_err();
    assert!(err.contains("does not end with"), "{err}");
}

/// A keyspace of two key types, in order.
macro_rules! two_key_space {
    ($name:ident, $a:ident, $b:ident) => {
        #[derive(Debug, Clone, PartialEq)]
        enum $name {
            A($a),
            B($b),
        }
        impl Keyspace for $name {
            fn parse(raw: &str) -> Result<Self, NoMatch> {
                let first = match $a::parse(raw) {
                    Ok(k) => return Ok($name::A(k)),
                    Err(e) => e,
                };
                match $b::parse(raw) {
                    Ok(k) => Ok($name::B(k)),
                    Err(e) => Err(NoMatch::from_attempts(raw, [first, e])),
                }
            }
            fn write(&self, out: &mut String) {
                match self {
                    $name::A(k) => k.write(out),
                    $name::B(k) => k.write(out),
                }
            }
            fn template_source(&self) -> &'static str {
                match self {
                    $name::A(_) => $a::TEMPLATE,
                    $name::B(_) => $b::TEMPLATE,
                }
            }
            fn fields(&self) -> Vec<(&'static str, String)> {
                match self {
                    $name::A(k) => k.fields(),
                    $name::B(k) => k.fields(),
                }
            }
            fn templates() -> Vec<TemplateInfo> {
                vec![$a::info(), $b::info()]
            }
        }
        impl KeyspaceStrategy for $name {
            fn strategy() -> BoxedStrategy<Self> {
                prop_oneof![
                    $a::strategy().prop_map($name::A),
                    $b::strategy().prop_map($name::B),
                ]
                .boxed()
            }
        }
    };
}

/// `a/b`: the literal a `Word` variable can produce.
#[derive(Debug, Clone, PartialEq)]
struct LiteralB;

impl Key for LiteralB {
    const TEMPLATE: &'static str = "a/b";
    type Value = Text;
    fn template() -> &'static Template {
        static T: LazyLock<Template> = LazyLock::new(|| Template::key("a/b", None).unwrap());
        &T
    }
    fn write(&self, out: &mut String) {
        out.push_str("a/b");
    }
    fn parse(raw: &str) -> Result<Self, KeyError> {
        let [] = Self::template().captures(raw)?;
        Ok(LiteralB)
    }
    fn fields(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    fn field_infos() -> Vec<FieldInfo> {
        Vec::new()
    }
}

impl KeyStrategy for LiteralB {
    fn strategy() -> BoxedStrategy<Self> {
        Just(LiteralB).boxed()
    }
}

two_key_space!(Overlapping, WordKey, LiteralB);
two_key_space!(Nested, WordKey, WordChildKey);
two_key_space!(DeclaredNesting, WordDirKey, WordChildKey);

#[test]
fn overlapping_templates_are_rejected() {
    let findings = check_keyspace::<Overlapping>();
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].kind, FindingKind::Overlap);
    assert_eq!(
        (findings[0].template.as_str(), findings[0].other.as_deref()),
        ("a/{x}", Some("a/b"))
    );
    let err = verify_keyspace::<Overlapping>().unwrap_err();
    assert!(err.contains("a/b") && err.contains("a/{x}"), "{err}");
}

#[test]
fn undeclared_nesting_is_rejected_and_declared_nesting_accepted() {
    let findings = check_keyspace::<Nested>();
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].kind, FindingKind::Nesting);
    assert!(verify_keyspace::<Nested>().is_err());
    assert!(check_keyspace::<DeclaredNesting>().is_empty());
    verify_keyspace::<DeclaredNesting>().unwrap();
}
