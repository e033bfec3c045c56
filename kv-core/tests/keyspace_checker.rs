//! The schema checker finds overlapping and nesting templates and bad literals, and names
//! both templates; a clean schema passes.

use keyplane_core::keyspace::{
    FieldInfo, FindingKind, HostPort, NamingRule, Template, TemplateInfo, check,
};
use uuid::Uuid;

keyplane_core::text_segment!(Word, charset = "[a-z]", max_len = 16, policy = Reject);
keyplane_core::text_segment!(Upper, charset = "[A-Z]", max_len = 16, policy = Reject);
keyplane_core::text_segment!(Anything, max_len = 64, policy = Escape);

fn info(template: &str, fields: Vec<FieldInfo>) -> TemplateInfo {
    info_with(template, None, fields, &[])
}

fn info_with(
    template: &str,
    tag: Option<&str>,
    fields: Vec<FieldInfo>,
    directory_of: &'static [&'static str],
) -> TemplateInfo {
    let template: &'static Template =
        Box::leak(Box::new(Template::key(template.to_owned(), tag).unwrap()));
    TemplateInfo {
        type_name: "test key",
        template,
        fields,
        value_type: "()",
        encrypted: false,
        value: keyplane_core::keyspace::ValueInfo::of_format(
            keyplane_core::keyspace::ValueFormat::Bytes,
        ),
        kind: None,
        directory_of,
    }
}

#[test]
fn variable_that_can_produce_a_sibling_literal_overlaps() {
    let findings = check(
        &[
            info("a/{x}", vec![FieldInfo::of::<Word>("x")]),
            info("a/b", vec![]),
        ],
        None,
    );
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].kind, FindingKind::Overlap);
    assert_eq!(findings[0].template, "a/{x}");
    assert_eq!(findings[0].other.as_deref(), Some("a/b"));
    assert!(findings[0].message.contains("a/b"), "{}", findings[0]);
}

#[test]
fn variable_that_cannot_produce_the_literal_does_not_overlap() {
    for fields in [
        vec![FieldInfo::of::<u64>("x")],
        vec![FieldInfo::of::<Upper>("x")],
        vec![FieldInfo::of::<Uuid>("x")],
    ] {
        let findings = check(&[info("a/{x}", fields), info("a/b", vec![])], None);
        assert!(findings.is_empty(), "{findings:?}");
    }
    // A number can be `10`.
    let findings = check(
        &[
            info("a/{x}", vec![FieldInfo::of::<u64>("x")]),
            info("a/10", vec![]),
        ],
        None,
    );
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].kind, FindingKind::Overlap);
}

#[test]
fn two_variables_overlap_when_their_types_share_values() {
    let overlapping = check(
        &[
            info("t/{id}/meta", vec![FieldInfo::of::<u64>("id")]),
            info("t/{name}/meta", vec![FieldInfo::of::<Anything>("name")]),
        ],
        None,
    );
    assert_eq!(overlapping.len(), 1, "{overlapping:?}");
    assert_eq!(overlapping[0].kind, FindingKind::Overlap);
    let disjoint = check(
        &[
            info("t/{id}/meta", vec![FieldInfo::of::<u64>("id")]),
            info("t/{name}/meta", vec![FieldInfo::of::<Word>("name")]),
        ],
        None,
    );
    assert!(disjoint.is_empty(), "{disjoint:?}");
}

#[test]
fn undeclared_nesting_is_found_and_declared_nesting_is_not() {
    let x = || vec![FieldInfo::of::<Word>("x")];
    let findings = check(&[info("a/{x}", x()), info("a/{x}/c", x())], None);
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].kind, FindingKind::Nesting);
    assert_eq!(findings[0].template, "a/{x}");
    assert_eq!(findings[0].other.as_deref(), Some("a/{x}/c"));

    let declared = check(
        &[
            info_with("a/{x}", None, x(), &["a/{x}/c"]),
            info("a/{x}/c", x()),
        ],
        None,
    );
    assert!(declared.is_empty(), "{declared:?}");

    // `a/b` is a file and `a/{x}/c` lives under `a/b/` when x = b.
    let literal = check(&[info("a/b", vec![]), info("a/{x}/c", x())], None);
    assert_eq!(literal.len(), 1);
    assert_eq!(literal[0].kind, FindingKind::Nesting);
}

#[test]
fn different_depths_literals_and_separators_are_disjoint() {
    let findings = check(
        &[
            info("jxt/tenants/{id}/meta", vec![FieldInfo::of::<u64>("id")]),
            info(
                "jxt/tenants/{id}/database/{service}",
                vec![
                    FieldInfo::of::<u64>("id"),
                    FieldInfo::of::<Anything>("service"),
                ],
            ),
            info(
                "/registry/{group}/{service}/{addr}/status",
                vec![
                    FieldInfo::of::<Word>("group"),
                    FieldInfo::of::<Anything>("service"),
                    FieldInfo::of::<HostPort>("addr"),
                ],
            ),
            info_with(
                "nxc:map:{realm}:{provider}",
                Some("realm"),
                vec![
                    FieldInfo::of::<Word>("realm"),
                    FieldInfo::of::<Word>("provider"),
                ],
                &[],
            ),
        ],
        NamingRule::charset("[a-z]").ok().as_ref(),
    );
    assert!(findings.is_empty(), "{findings:?}");
}

#[test]
fn hash_tag_makes_otherwise_equal_templates_disjoint() {
    let w = || vec![FieldInfo::of::<Word>("realm"), FieldInfo::of::<Word>("p")];
    let tagged = info_with("m:{realm}:{p}", Some("realm"), w(), &[]);
    let plain = info_with("m:{realm}:{p}x", None, w(), &[]);
    assert!(check(&[tagged, plain], None).is_empty());
}

#[test]
fn literals_breaking_the_naming_rule_or_holding_braces_are_found() {
    let rule = NamingRule::charset("[a-z0-9_]").unwrap();
    let findings = check(
        &[
            info("jxt/Tenants/{id}", vec![FieldInfo::of::<u64>("id")]),
            info("jxt/{{raw}}/{id}/x", vec![FieldInfo::of::<u64>("id")]),
        ],
        Some(&rule),
    );
    let kinds: Vec<_> = findings
        .iter()
        .map(|f| (f.kind, f.template.as_str()))
        .collect();
    assert!(
        kinds.contains(&(FindingKind::Naming, "jxt/Tenants/{id}")),
        "{findings:?}"
    );
    assert!(
        kinds.contains(&(FindingKind::UnsafeLiteral, "jxt/{{raw}}/{id}/x")),
        "{findings:?}"
    );
    assert!(
        kinds.contains(&(FindingKind::Naming, "jxt/{{raw}}/{id}/x")),
        "{findings:?}"
    );
}

#[test]
fn missing_field_information_is_reported() {
    let findings = check(&[info("a/{x}/y", vec![])], None);
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].kind, FindingKind::Malformed);
}
