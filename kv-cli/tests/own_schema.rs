//! A team's own schema in the stock `kvctl`, loaded from a manifest: the manifest that
//! `kvctl schema tenant -o json` prints, renamed to `acme` with every `jxt/` moved to `acme/`,
//! is a schema of its own; every command works on it as on the bundled ones. Manifests come
//! from `--schema`, `KVCTL_SCHEMA` and the config file; bad ones are refused with a reason and
//! nothing runs.

mod common;

use common::server::{acme_manifest, sled_store as store};
use common::*;
use serde_json::Value;
use std::path::Path;

/// `kvctl --schema FILE --store URL ARGS`.
fn with_schema(url: &str, manifest: &Path, args: &[&str]) -> Run {
    let mut all = vec!["--schema", manifest.to_str().expect("a UTF-8 path")];
    all.extend_from_slice(args);
    run(url, &all)
}

fn meta(id: u64) -> String {
    tenant_meta(id)
}

#[test]
fn a_renamed_tenant_manifest_is_a_schema_of_its_own() {
    let (dir, url) = store();
    let manifest = acme_manifest(dir.path());
    let go = |args: &[&str]| {
        let run = with_schema(&url, &manifest, args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        run.stdout
    };

    // Listed, and drawn as a tree with its typed names.
    assert!(go(&["schema"]).lines().any(|l| l.starts_with("acme ")));
    let tree = go(&["schema", "acme"]);
    assert!(tree.contains("acme.meta"), "{tree}");

    // A typed write and read.
    assert!(go(&["put", "acme.meta", "id=7", &meta(7)]).contains("acme/tenants/7/meta"));
    let got = go(&["get", "acme.meta", "id=7"]);
    assert!(
        got.contains("acme.meta id=7") && got.contains("Tenant 7"),
        "{got}"
    );
    let typed = go(&["-o", "json", "get", "acme/tenants/7/meta"]);
    let typed: Value = serde_json::from_str(&typed).expect("JSON");
    assert_eq!(typed["type"], "acme.meta", "{typed}");
    assert_eq!(typed["fields"]["id"], "7", "{typed}");

    // Annotated in `ls -l`.
    let listed = go(&["-o", "json", "ls", "-l", "acme/"]);
    let listed: Value = serde_json::from_str(&listed).expect("JSON");
    assert_eq!(listed[0]["key"], "acme/tenants/7/meta", "{listed}");
    assert_eq!(listed[0]["type"], "acme.meta", "{listed}");
    let table = go(&["ls", "-l", "acme.meta", "id=7"]);
    assert!(table.contains("acme.meta"), "{table}");

    // A value that does not match is refused, and nothing is written.
    for bad in [r#"{"id":"seven"}"#, "not json", r#"{"id":8}"#] {
        let refused = with_schema(&url, &manifest, &["put", "acme.meta", "id=8", bad]);
        assert_eq!(refused.code, 2, "{bad}: {}", refused.stderr);
    }
    assert_eq!(
        with_schema(&url, &manifest, &["get", "acme.meta", "id=8"]).code,
        1
    );
    // A key no template of acme holds is refused without --raw.
    let refused = with_schema(&url, &manifest, &["put", "acme/tenants/7/oops", "x"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);

    // Lint: an unknown key, and a stored value that does not match.
    go(&["put", "--raw", "acme/tenants/7/oops", "x"]);
    go(&["put", "--raw", "acme/tenants/9/meta", r#"{"id":9}"#]);
    let linted = with_schema(&url, &manifest, &["-o", "json", "lint", "acme/"]);
    assert_eq!(linted.code, 6, "{}", linted.stderr);
    let findings: Value = serde_json::from_str(&linted.stdout).expect("JSON");
    let rule_of = |key: &str| {
        findings
            .as_array()
            .expect("findings")
            .iter()
            .find(|f| f["key"] == key)
            .map(|f| f["rule"].as_str().unwrap_or_default().to_owned())
    };
    assert_eq!(
        rule_of("acme/tenants/7/oops").as_deref(),
        Some("unknown-key")
    );
    assert_eq!(
        rule_of("acme/tenants/9/meta").as_deref(),
        Some("undecodable-value")
    );
    assert_eq!(rule_of("acme/tenants/7/meta"), None, "{findings}");

    // Export names the typed address; import into another store writes it back, checked.
    let exported = go(&["export", "acme/tenants/7/meta"]);
    assert!(exported.contains("\"acme.meta\""), "{exported}");
    let file = dir.path().join("export.jsonl");
    std::fs::write(&file, &exported).expect("written");
    let (_other_dir, other) = store();
    let imported = with_schema(&other, &manifest, &["import", file.to_str().expect("path")]);
    assert_eq!(imported.code, 0, "{}", imported.stderr);
    assert!(ok(&other, &["get", "acme/tenants/7/meta"]).contains("Tenant 7"));

    // The bundled tenant schema is still there, beside it.
    go(&["put", "tenant.meta", "id=7", &meta(7)]);
    assert!(go(&["get", "tenant.meta", "id=7"]).contains("tenant.meta id=7"));

    // Without the manifest, acme's keys are not typed.
    let untyped = fails(&url, &["put", "acme.meta", "id=7", &meta(7)], 2);
    assert!(untyped.contains("acme"), "{untyped}");
}

#[test]
fn a_loaded_schema_is_watched_typed() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let (dir, url) = store();
    let manifest = acme_manifest(dir.path());
    assert_eq!(
        with_schema(&url, &manifest, &["put", "acme.meta", "id=5", &meta(5)]).code,
        0
    );
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("kvctl"))
        .env_remove("KVCTL_SCHEMA")
        .env_remove("KVCTL_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/kvctl-tests")
        .arg("--schema")
        .arg(&manifest)
        .args(["--store", &url, "-o", "json", "watch", "acme.meta", "id=5"])
        .args(["--from-revision", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kvctl starts");
    let line = BufReader::new(child.stdout.take().expect("stdout"))
        .lines()
        .next()
        .expect("an event line")
        .expect("readable");
    let _ = child.kill();
    let _ = child.wait();
    let event: Value = serde_json::from_str(&line).expect("one JSON event per line");
    assert_eq!(event["event"], "PUT", "{event}");
    assert_eq!(event["type"], "acme.meta", "{event}");
    assert_eq!(event["fields"]["id"], "5", "{event}");
}

#[test]
fn manifests_come_from_the_environment_and_the_config_file() {
    let (dir, url) = store();
    let manifest = acme_manifest(dir.path());
    let put = ["put", "acme.meta", "id=1", &meta(1)];

    // KVCTL_SCHEMA, files separated as in PATH.
    let extra = dir.path().join("empty.json");
    std::fs::write(
        &extra,
        r#"{"format": "keyplane-schema/1", "name": "other", "templates": []}"#,
    )
    .expect("written");
    let joined = std::env::join_paths([&manifest, &extra]).expect("joined");
    let run = outcome(kvctl(&url).env("KVCTL_SCHEMA", &joined).args(put));
    assert_eq!(run.code, 0, "{}", run.stderr);

    // KVCTL_CONFIG, with a path relative to the config file.
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "schemas = [\"acme.json\"]\n").expect("written");
    let run = outcome(
        kvctl(&url)
            .env("KVCTL_CONFIG", &config)
            .args(["get", "acme.meta", "id=1"]),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);

    // The default config file, under XDG_CONFIG_HOME; the same file given twice loads once.
    let home = dir.path().join("config-home");
    std::fs::create_dir_all(home.join("kvctl")).expect("made");
    let absolute = manifest.to_str().expect("path");
    std::fs::write(
        home.join("kvctl").join("config.toml"),
        format!("schemas = [{absolute:?}]\n"),
    )
    .expect("written");
    let run = outcome(kvctl(&url).env("XDG_CONFIG_HOME", &home).args([
        "--schema",
        absolute,
        "get",
        "acme.meta",
        "id=1",
    ]));
    assert_eq!(run.code, 0, "{}", run.stderr);

    // A config file that is not one stops kvctl with a reason.
    std::fs::write(&config, "schemes = []\n").expect("written");
    let run = outcome(
        kvctl(&url)
            .env("KVCTL_CONFIG", &config)
            .args(["get", "acme.meta", "id=1"]),
    );
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("config file"), "{}", run.stderr);
}

#[test]
fn bad_manifests_stop_kvctl_before_anything_is_written() {
    let (dir, url) = store();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("written");
        path
    };
    let manifest = acme_manifest(dir.path());
    let cases = [
        (write("missing.json", "{}"), "not a schema manifest"),
        (write("garbage.json", "garbage"), "not a schema manifest"),
        (dir.path().join("absent.json"), "cannot read it"),
        (
            write(
                "future.json",
                r#"{"format": "keyplane-schema/9", "name": "x", "templates": []}"#,
            ),
            "keyplane-schema/9",
        ),
        (
            write(
                "tenant.json",
                &ok("mem://", &["schema", "tenant", "-o", "json"]),
            ),
            "two schemas are named \"tenant\"",
        ),
    ];
    for (path, expected) in cases {
        let run = with_schema(&url, &path, &["put", "--raw", "cfg/written", "x"]);
        assert_eq!(run.code, 2, "{}: {}", path.display(), run.stderr);
        assert!(run.stderr.contains(expected), "{expected}: {}", run.stderr);
    }
    // Nothing ran: the store holds nothing.
    assert_eq!(
        with_schema(&url, &manifest, &["get", "cfg/written"]).code,
        1
    );
}

#[test]
fn a_hand_written_manifest_with_colons_and_padded_numbers() {
    let (dir, url) = store();
    let manifest = dir.path().join("shop.json");
    std::fs::write(
        &manifest,
        r#"{
          "format": "keyplane-schema/1",
          "name": "shop",
          "store": "redis",
          "templates": [
            {"name": "price", "template": "shop:price:{sku}",
             "fields": [{"name": "sku", "segment": {"kind": "padded", "width": 6, "signed": false, "bits": 32}}],
             "value": {"format": "text"}},
            {"name": "owner", "template": "shop:owner:{name}",
             "fields": [{"name": "name", "segment": {"kind": "text", "max_len": 64, "policy": "escape"}}],
             "value": {"format": "json", "schema": {"type": "object", "required": ["email"]}}}
          ]
        }"#,
    )
    .expect("written");
    let go = |args: &[&str]| {
        let run = with_schema(&url, &manifest, args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        run.stdout
    };
    // The number is padded; the text escaped, as the rules say.
    assert!(go(&["put", "shop.price", "sku=42", "9.99"]).contains("shop:price:000042"));
    assert!(
        go(&["put", "shop.owner", "name=a:b c", r#"{"email":"x@y"}"#])
            .contains("shop:owner:a%3Ab%20c")
    );
    let parsed = go(&["-o", "json", "parse", "shop:owner:a%3Ab%20c"]);
    assert!(parsed.contains("shop.owner"), "{parsed}");
    // Not canonical, out of range, or a value that does not match: refused.
    for (args, why) in [
        (vec!["put", "--raw", "shop:price:42", "1"], ""),
        (
            vec!["put", "shop:price:0000042", "1"],
            "belongs to no schema",
        ),
        (vec!["put", "shop.price", "sku=4294967296", "1"], "sku"),
        (
            vec!["put", "shop.owner", "name=x", r#"{"mail":"x@y"}"#],
            "JSON Schema",
        ),
    ] {
        let run = with_schema(&url, &manifest, &args);
        if why.is_empty() {
            // `--raw` writes a key of no template; lint then reports it.
            assert_eq!(run.code, 0, "{}", run.stderr);
            continue;
        }
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(why), "{why}: {}", run.stderr);
    }
    let linted = with_schema(&url, &manifest, &["lint", "shop:"]);
    assert_eq!(linted.code, 6, "{}", linted.stderr);
    assert!(linted.stdout.contains("shop:price:42"), "{}", linted.stdout);
    assert!(
        !linted.stdout.contains("shop:price:000042"),
        "{}",
        linted.stdout
    );
    // The schema is drawn with its rules, and prints itself back.
    let tree = go(&["schema", "shop"]);
    assert!(tree.contains("Padded<6, u32>"), "{tree}");
    let printed: Value =
        serde_json::from_str(&go(&["schema", "shop", "-o", "json"])).expect("JSON");
    assert_eq!(printed["templates"][0]["fields"][0]["segment"]["width"], 6);
    assert_eq!(
        printed["templates"][1]["value"]["schema"]["required"][0],
        "email"
    );
}
