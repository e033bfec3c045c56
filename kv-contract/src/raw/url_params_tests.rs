use super::*;
use crate::tls::TlsConfig;
use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Demo {
    name: String,
    retries: u32,
    fast: bool,
    roots: Vec<String>,
    database: Option<i64>,
    namespace: Option<String>,
    username: Option<String>,
    #[serde(with = "crate::raw::duration_text")]
    connect_timeout: Duration,
    tls: Option<TlsConfig>,
}

impl Default for Demo {
    fn default() -> Self {
        Demo {
            name: "n".into(),
            retries: 8,
            fast: false,
            roots: Vec::new(),
            database: None,
            namespace: None,
            username: None,
            connect_timeout: Duration::from_secs(5),
            tls: None,
        }
    }
}

const SPEC: UrlSpec = UrlSpec::new("demo")
    .fixed(&["name"])
    .aliases(&[("user", "username")])
    .foreign(&["protocol"]);

fn apply(query: &str) -> Result<Demo> {
    apply_url_params(&Demo::default(), &url_query_pairs(query)?, &SPEC)
}

#[test]
fn every_type_of_field_is_set_from_text() {
    let demo = apply(
        "retries=3&fast=yes&roots=a/,b/&database=2&namespace=7&user=ad%40min\
         &connect_timeout=1.5s&ca=/c%20a.pem&cert=/c.pem&key=/k.pem&domain=kv&protocol=resp3",
    )
    .unwrap();
    assert_eq!(demo.retries, 3);
    assert!(demo.fast);
    assert_eq!(demo.roots, ["a/", "b/"]);
    assert_eq!(demo.database, Some(2));
    assert_eq!(demo.namespace.as_deref(), Some("7"));
    assert_eq!(demo.username.as_deref(), Some("ad@min"));
    assert_eq!(demo.connect_timeout, Duration::from_millis(1500));
    let tls = demo.tls.unwrap();
    assert_eq!(tls.ca_file.unwrap().to_str(), Some("/c a.pem"));
    assert_eq!(tls.cert_file.unwrap().to_str(), Some("/c.pem"));
    assert_eq!(tls.key_file.unwrap().to_str(), Some("/k.pem"));
    assert_eq!(tls.domain.as_deref(), Some("kv"));
    // One form for a duration: the milliseconds alone are no parameter.
    assert!(apply("connect_timeout_ms=2000").is_err());
    for (text, millis) in [
        ("500ms", 500),
        ("2s", 2000),
        ("1m", 60_000),
        ("1h", 3_600_000),
    ] {
        let demo = apply(&format!("connect_timeout={text}")).unwrap();
        assert_eq!(
            demo.connect_timeout,
            Duration::from_millis(millis),
            "{text}"
        );
    }
    assert_eq!(apply("fast=0&roots=").unwrap(), Demo::default());
}

#[test]
fn bad_parameters_are_config_errors_naming_them() {
    for (query, says) in [
        ("retry=3", "`retry`"),
        ("retries=x", "`retries` expects a whole number"),
        ("retries=-1", "`retries`"),
        ("fast=maybe", "`fast` expects true or false"),
        ("connect_timeout=2", "not a bare number"),
        ("connect_timeout=2d", "unit is ms, s, m or h"),
        ("database=x", "`database`"),
        ("retries=1&retries=2", "given twice"),
        ("name=other", "unknown"),
        ("tls=x", "unknown"),
        ("namespace=%zz", "percent-encoding"),
    ] {
        let err = apply(query).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config, "{query}");
        assert!(err.to_string().contains(says), "{query}: {err}");
    }
    let err = apply("retry=3").unwrap_err().to_string();
    for known in [
        "retries",
        "connect_timeout",
        "ca",
        "cert",
        "key",
        "user",
        "protocol",
    ] {
        assert!(err.contains(known), "{err}");
    }
}

#[test]
fn tls_parameters_need_a_tls_field() {
    #[derive(Default, Serialize, Deserialize)]
    struct Plain {
        retries: u32,
    }
    let pairs = url_query_pairs("ca=/ca.pem").unwrap();
    let err = apply_url_params(&Plain::default(), &pairs, &UrlSpec::new("demo"))
        .err()
        .unwrap();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(err.to_string().contains("takes none"), "{err}");
}

#[test]
fn examples_reach_every_field() {
    let examples = url_param_examples(&Demo::default(), &SPEC).unwrap();
    let fields: Vec<&str> = examples.iter().map(|(f, _)| f.as_str()).collect();
    assert!(fields.contains(&"tls.ca_file") && fields.contains(&"name"));
    for (field, example) in examples {
        if field == "name" {
            assert_eq!(example, None);
            continue;
        }
        let example = example.unwrap_or_else(|| panic!("no example for {field}"));
        let set = apply(&example).unwrap_or_else(|e| panic!("{example}: {e}"));
        assert_ne!(set, Demo::default(), "{example}");
    }
}
