//! The team's kvctl, built as its crate builds it and driven as an operator drives it, on a
//! redb store (the default embedded one) in a fresh directory: the schema `acme` types the
//! keys, `put` checks values against `Service` and its JSON Schema, `lint` reports the keys no template holds, and
//! `schema` prints the manifest other tools read.

use serde_json::Value;
use std::process::Command;

/// The outcome of one run: exit code, stdout and stderr.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// A redb store in a fresh temporary directory, removed when dropped.
struct Store {
    dir: tempfile::TempDir,
    url: String,
}

impl Store {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        let url = format!("redb://{}", dir.path().join("store.redb").display());
        Store { dir, url }
    }

    /// `kvctl --store URL ARGS`, with nothing taken from the environment or a config file
    /// of the machine: what it knows comes from the binary alone.
    fn run(&self, args: &[&str]) -> Run {
        let out = Command::new(env!("CARGO_BIN_EXE_outside-own-kvctl"))
            .env_remove("KVCTL_STORE")
            .env_remove("KVCTL_SCHEMA")
            .env_remove("KVCTL_CONFIG")
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .args(["--store", &self.url])
            .args(args)
            .output()
            .expect("the team's kvctl runs");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs and requires success; stdout.
    fn ok(&self, args: &[&str]) -> String {
        let run = self.run(args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        run.stdout
    }

    /// Runs with `-o json` and requires success; the document.
    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["-o", "json"];
        all.extend_from_slice(args);
        let out = self.ok(&all);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {out}"))
    }

    /// Runs and requires exit code `code`; stderr.
    fn fails(&self, args: &[&str], code: i32) -> String {
        let run = self.run(args);
        assert_eq!(run.code, code, "{args:?}: {} {}", run.stdout, run.stderr);
        run.stderr
    }
}

const API: [&str; 3] = ["acme.service", "app=1", "name=api"];
const VALUE: &str = r#"{"image":"nginx","replicas":2}"#;

/// `put` of the typed address `acme.service app=1 name=api` with `value`.
fn put(value: &str) -> Vec<&str> {
    let mut args = vec!["put"];
    args.extend(API);
    args.push(value);
    args
}

/// `verb` of the typed address `acme.service app=1 name=api`.
fn at(verb: &str) -> Vec<&str> {
    let mut args = vec![verb];
    args.extend(API);
    args
}

#[test]
fn a_typed_put_is_read_back_and_listed_with_its_type() {
    let store = Store::new();
    let put = store.ok(&put(VALUE));
    assert!(put.contains("acme/apps/1/services/api"), "{put}");

    let got = store.ok(&at("get"));
    assert!(
        got.lines()
            .any(|l| l.starts_with("type:") && l.contains("acme.service app=1 name=api")),
        "{got}"
    );
    assert!(got.contains("nginx"), "{got}");
    let got = store.json(&at("get"));
    assert_eq!(got["key"], "acme/apps/1/services/api", "{got}");
    assert_eq!(got["type"], "acme.service", "{got}");
    assert_eq!(got["fields"]["name"], "api", "{got}");
    assert_eq!(got["value"]["replicas"], 2, "{got}");

    let table = store.ok(&["ls", "-l", "acme/"]);
    assert!(
        table
            .lines()
            .any(|l| l.contains("acme/apps/1/services/api") && l.contains("acme.service")),
        "{table}"
    );
    let listed = store.json(&["ls", "-l", "acme/"]);
    let listed = listed.as_array().expect("ls prints an array");
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["key"], "acme/apps/1/services/api", "{listed:?}");
    assert_eq!(listed[0]["type"], "acme.service", "{listed:?}");
}

#[test]
fn a_value_that_is_not_a_service_is_refused_and_nothing_is_written() {
    let store = Store::new();
    // Checked by decoding with `Service` itself, as the team's programs read it.
    for bad in [r#"{"image":1}"#, r#"{"image":1,"replicas":2}"#, "not json"] {
        let why = store.fails(&put(bad), 2);
        assert!(why.contains("Json<Service>"), "{bad}: {why}");
    }

    store.fails(&at("get"), 1);
    assert_eq!(store.json(&["ls", "acme/"]), Value::Array(Vec::new()));
}

#[test]
fn lint_reports_a_raw_key_no_template_holds() {
    let store = Store::new();
    store.ok(&put(VALUE));
    // Without --raw, a key outside every template is refused.
    store.fails(&["put", "acme/apps/1/oops", "x"], 2);
    store.ok(&["put", "--raw", "acme/apps/1/oops", "x"]);

    let linted = store.run(&["lint", "acme/"]);
    assert_eq!(linted.code, 6, "{} {}", linted.stdout, linted.stderr);
    // The key, then its findings below it.
    let report = linted.stdout.split_once("acme/apps/1/oops").map(|(_, r)| r);
    assert!(
        report.is_some_and(|r| r.trim_start().starts_with("unknown-key")),
        "{}",
        linted.stdout
    );
    assert!(
        !linted.stdout.contains("acme/apps/1/services/api"),
        "{}",
        linted.stdout
    );

    let linted = store.run(&["-o", "json", "lint", "acme/"]);
    assert_eq!(linted.code, 6, "{}", linted.stderr);
    let findings: Value = serde_json::from_str(&linted.stdout).expect("JSON");
    let findings = findings.as_array().expect("an array of findings");
    let rules = |key: &str| -> Vec<&str> {
        findings
            .iter()
            .filter(|f| f["key"] == key)
            .filter_map(|f| f["rule"].as_str())
            .collect()
    };
    assert_eq!(rules("acme/apps/1/oops"), ["unknown-key"], "{findings:?}");
    assert!(rules("acme/apps/1/services/api").is_empty(), "{findings:?}");
}

#[test]
fn the_schema_prints_its_manifest_with_the_value_json_schema() {
    let store = Store::new();
    // Beside the bundled schemas.
    let listed = store.ok(&["schema"]);
    for name in ["acme", "tenant"] {
        assert!(
            listed
                .lines()
                .any(|l| l.split_whitespace().next() == Some(name)),
            "{name}: {listed}"
        );
    }

    let manifest: Value = serde_json::from_str(&store.ok(&["schema", "acme", "-o", "json"]))
        .expect("the manifest is JSON");
    assert_eq!(manifest["format"], "keyplane-schema/1", "{manifest}");
    assert_eq!(manifest["name"], "acme", "{manifest}");
    let templates = manifest["templates"].as_array().expect("templates");
    assert_eq!(templates.len(), 1, "{manifest}");
    let service = &templates[0];
    assert_eq!(
        service["template"], "acme/apps/{app}/services/{name}",
        "{service}"
    );
    assert_eq!(service["address"], "acme.service", "{service}");
    let value = &service["value"];
    assert_eq!(value["format"], "json", "{value}");
    let schema = &value["schema"];
    assert_eq!(schema["properties"]["image"]["type"], "string", "{schema}");
    assert_eq!(
        schema["properties"]["replicas"]["type"], "integer",
        "{schema}"
    );
    let required = schema["required"].as_array().expect("required fields");
    for field in ["image", "replicas"] {
        assert!(required.iter().any(|r| r == field), "{field}: {schema}");
    }

    // A tool without the Rust type checks values by the manifest's JSON Schema: loaded under
    // another name (two schemas of one name are refused), it refuses what `Service` refuses.
    let moved = manifest.to_string().replace("acme/", "fleet/");
    let mut moved: Value = serde_json::from_str(&moved).expect("JSON");
    moved["name"] = Value::from("fleet");
    let file = store.dir.path().join("fleet.json");
    std::fs::write(&file, moved.to_string()).expect("the manifest is written");
    let file = file.to_str().expect("a UTF-8 path");
    let put = |value: &str| {
        let args = [
            "--schema",
            file,
            "put",
            "fleet.service",
            "app=1",
            "name=api",
        ];
        store.run(&[&args[..], &[value]].concat())
    };
    let written = put(VALUE);
    assert_eq!(written.code, 0, "{}", written.stderr);
    let refused = put(r#"{"image":1,"replicas":2}"#);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("JSON Schema"), "{}", refused.stderr);
}
