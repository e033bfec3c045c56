//! Template parsing: the seed layouts, literal braces, mixed segments, hash tags, and every
//! malformed template refused with a reason.

use keyplane_core::keyspace::{
    EncodeSegment, KeyErrorReason, Part, Separator, Template, TemplateKind,
};

#[test]
fn seed_templates_parse_into_their_parts() {
    let t = Template::key("jxt/tenants/{id}/database/{service}", None).unwrap();
    assert_eq!(t.separator(), Separator::Slash);
    assert!(!t.leading_separator());
    assert_eq!(t.root(), Some("jxt"));
    assert_eq!(t.depth(), 5);
    assert_eq!(t.vars().collect::<Vec<_>>(), ["id", "service"]);
    assert_eq!(t.segments()[3].literal(), Some("database"));
    assert_eq!(t.segments()[4].var(), Some("service"));
    assert_eq!(t.kind(), TemplateKind::Key);
    assert_eq!(t.to_string(), "jxt/tenants/{id}/database/{service}");

    let t = Template::key("/registry/{group}/{service}/{addr}/status", None).unwrap();
    assert!(t.leading_separator());
    assert_eq!(t.root(), Some("registry"));
    assert_eq!(t.depth(), 5);

    let t = Template::key("nxc:map:{realm}:{provider}", Some("realm")).unwrap();
    assert_eq!(t.separator(), Separator::Colon);
    assert_eq!(t.hash_tag(), Some(2));

    let t = Template::prefix("jxt/tenants/{id}/", None).unwrap();
    assert_eq!(t.kind(), TemplateKind::Prefix);
    assert_eq!(t.depth(), 3);
}

#[test]
fn literal_braces_and_mixed_segments() {
    let t = Template::key("cfg/{{raw}}/v{version}.json", None).unwrap();
    assert_eq!(t.segments()[1].literal(), Some("{raw}"));
    assert_eq!(
        t.segments()[2].parts(),
        [
            Part::Literal("v".into()),
            Part::Var("version".into()),
            Part::Literal(".json".into())
        ]
    );
    let [v] = t.captures("cfg/{raw}/v12.json").unwrap();
    assert_eq!(v, "12");

    // `{ip}:{port}` in a `/` template: `:` delimits the two variables.
    let t = Template::key("/registry/{ip}:{port}/status", None).unwrap();
    assert_eq!(t.separator(), Separator::Slash);
    let [ip, port] = t.captures("/registry/10.0.0.1:8080/status").unwrap();
    assert_eq!((ip, port), ("10.0.0.1", "8080"));
    let mut out = String::new();
    t.write(
        &mut out,
        &[&std::net::Ipv4Addr::LOCALHOST as &dyn EncodeSegment, &80u16],
    );
    assert_eq!(out, "/registry/127.0.0.1:80/status");
}

#[test]
fn hash_tags_are_declared_beside_the_template() {
    let t = Template::key("nxc:map:{realm}:{provider}", Some("realm")).unwrap();
    let mut out = String::new();
    t.write(&mut out, &[&7u32, &8u32]);
    assert_eq!(out, "nxc:map:{7}:8");
    assert!(t.captures::<2>("nxc:map:7:8").is_err());
    let lit = Template::key("nxc:map:{realm}", Some("map")).unwrap();
    assert_eq!(lit.hash_tag(), Some(1));
    assert!(Template::key("nxc:map:{realm}", Some("nope")).is_err());
}

#[test]
fn malformed_templates_are_refused() {
    for (bad, why) in [
        ("", "empty"),
        ("a//b", "empty"),
        ("a/b/", "end with"),
        ("/", "at least one segment"),
        ("a/{x", "unclosed"),
        ("a/x}", "stray"),
        ("a/{x}{y}", "delimiter"),
        ("a/{x}-{y}", "could occur"),
        ("a/{x}v2{y}", "could occur"),
        ("a/{x}/{x}", "twice"),
        ("a/{1x}", "variable name"),
        ("a/{}", "variable name"),
        ("a/../b", "`..`"),
        ("a/./b", "`.`"),
    ] {
        let err = Template::key(bad, None).unwrap_err();
        assert!(err.reason().contains(why), "{bad:?}: {err}");
    }
    assert!(
        Template::prefix("a/{x}", None)
            .unwrap_err()
            .reason()
            .contains("end with")
    );
    assert!(Template::prefix("/", None).is_err());
}

#[test]
fn captures_report_where_matching_stops() {
    let t = Template::key("jxt/tenants/{id}/meta", None).unwrap();
    let err = t.captures::<1>("jxt/tenant/1/meta").unwrap_err();
    assert_eq!(err.position(), 1);
    assert!(matches!(err.reason(), KeyErrorReason::Literal { .. }));
    let err = t.captures::<1>("jxt/tenants/1/meta/x").unwrap_err();
    assert!(matches!(
        err.reason(),
        KeyErrorReason::Depth {
            expected: 4,
            found: 5
        }
    ));
    assert!(t.captures::<1>("/jxt/tenants/1/meta").is_err());
    assert!(t.captures::<2>("jxt/tenants/1/meta").is_err());
    assert_eq!(t.captures_vec("jxt/tenants/1/meta").unwrap(), ["1"]);
    let colon =
        Template::with_separator("a/b:{x}", TemplateKind::Key, Separator::Colon, None).unwrap();
    assert_eq!(colon.root(), Some("a/b"));
    assert_eq!(colon.captures::<1>("a/b:x").unwrap(), ["x"]);
}
