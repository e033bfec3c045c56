//! `kvctl` on a temporary embedded store (redb, the default; sled, the earlier default):
//! demo, schema, parse, typed get/ls/put/rm, watch, bad input refused with nothing written,
//! and the default store in the data directory, with the way from an old sled one.

mod common;

use common::*;

/// A redb store in a new directory.
fn store() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let url = format!("redb://{}", dir.path().join("store.redb").display());
    (dir, url)
}

/// A sled store in a new directory.
fn sled_store() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let url = format!("sled://{}", dir.path().join("db").display());
    (dir, url)
}

/// The typed round trip, refused input and a replayed watch on sled, which kvctl still
/// opens (`--store sled://PATH`).
#[test]
fn sled_stores_still_work() {
    let (_dir, url) = sled_store();
    typed_round_trip(&url);
    bad_input_writes_nothing(&url);
    watch_replays_collection_events(&url);
}

#[test]
fn demo_twice_changes_nothing() {
    let (_dir, url) = store();
    demo_twice(&url, true);
    let tree = ok(&url, &["demo"]);
    assert!(tree.contains("nothing changed"), "{tree}");
    assert!(
        tree.lines()
            .any(|l| l.contains("meta") && l.trim_end().ends_with("tenant.meta")),
        "{tree}"
    );
}

#[test]
fn typed_get_ls_put_rm() {
    let (_dir, url) = store();
    typed_round_trip(&url);
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let (_dir, url) = store();
    bad_input_writes_nothing(&url);
}

#[test]
fn schema_lists_five_and_draws_one() {
    let listed = json("mem://", &["schema"]);
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["tenant", "registry", "cronix", "nxc", "balancer"]);
    let everything = json("mem://", &["schema", "--all"]);
    let old: Vec<&str> = everything
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["read_only"] == true)
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(old, ["tenant-legacy", "nxc-legacy"]);
    let tree = ok("mem://", &["schema", "tenant"]);
    assert!(tree.contains("{id}/"), "{tree}");
    assert!(
        tree.lines().any(|l| l.contains("meta")
            && l.contains("tenant.meta")
            && l.contains("Json<TenantMeta>")),
        "{tree}"
    );
    assert!(tree.contains("{id}  u64"), "{tree}");
    // The schema says which values are sealed: nxc's pool secrets, and nothing of tenant's.
    let nxc = json("mem://", &["schema", "nxc"]);
    let sealed: Vec<&str> = nxc["templates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["encrypted"] == true)
        .map(|t| t["template"].as_str().unwrap())
        .collect();
    assert_eq!(sealed, ["nxc:pool:{provider}:{profile}"]);
    let tenant = json("mem://", &["schema", "tenant"]);
    assert!(
        tenant["templates"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["encrypted"] == false),
        "{tenant}"
    );
    fails("mem://", &["schema", "nope"], 2);
}

#[test]
fn parse_valid_and_invalid_keys() {
    let parsed = json(
        "mem://",
        &[
            "parse",
            "jxt/tenants/_index/by-name/%E9%BB%98%E8%AE%A4%E7%A7%9F%E6%88%B7",
        ],
    );
    assert_eq!(parsed["schema"], "tenant");
    assert_eq!(parsed["template"], "jxt/tenants/_index/by-name/{name}");
    assert_eq!(parsed["address"], "tenant.name-index");
    let parsed = json(
        "mem://",
        &[
            "parse",
            "/registry/Common/VerifyCodeService/192.168.0.1:11080/data",
        ],
    );
    assert_eq!(parsed["fields"]["addr"], "192.168.0.1:11080");
    let parsed = json(
        "mem://",
        &[
            "parse",
            "/registry/Common/VerifyCodeService/[2001:db8::1]:11080/data",
        ],
    );
    assert_eq!(parsed["fields"]["addr"], "[2001:db8::1]:11080");
    let why = fails("mem://", &["parse", "jxt/tenants/01/meta"], 2);
    assert!(why.contains("leading zeros"), "{why}");
}

#[test]
fn typed_names_with_escaped_segments() {
    let (_dir, url) = store();
    ok(&url, &["demo"]);
    let got = json(&url, &["get", "tenant.name-index", "name=默认租户"]);
    assert_eq!(
        got["key"],
        "jxt/tenants/_index/by-name/%E9%BB%98%E8%AE%A4%E7%A7%9F%E6%88%B7"
    );
    assert_eq!(got["value"]["id"], 1);
}

#[test]
fn rm_deletes_collections() {
    let (_dir, url) = store();
    ok(&url, &["demo"]);
    let listed = json(
        &url,
        &["ls", "nxc.instance", "realm=test_realm", "provider=Alipay"],
    );
    let hashes: Vec<(&str, &str)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["key"].as_str().unwrap(), e["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        hashes,
        [
            ("nxc:inst:test_realm:Alipay:app_001", "hash"),
            ("nxc:inst:test_realm:Alipay:app_002", "hash"),
        ]
    );
    let table = ok(&url, &["ls", "nxc:"]);
    assert!(
        table.contains("nxc.profile-map") && table.contains("SET (2 members)"),
        "{table}"
    );
    let map = ["nxc.profile-map", "realm=test_realm", "provider=Alipay"];
    let removed = json(&url, &[&["rm"][..], &map[..]].concat());
    assert_eq!(removed["deleted"], 1);
    fails(&url, &[&["rm"][..], &map[..]].concat(), 1);
    let instance = [
        "nxc.instance",
        "realm=test_realm",
        "provider=Alipay",
        "profile=app_002",
    ];
    ok(&url, &[&["rm"][..], &instance[..]].concat());
    fails(&url, &[&["rm"][..], &instance[..]].concat(), 1);
}

#[test]
fn invalid_and_unreachable_stores() {
    fails("foo://bar", &["ls"], 2);
    fails("etcd://", &["ls"], 2);
    fails("sled://", &["ls"], 2);
    fails("redb://", &["ls"], 2);
    fails("redb:///tmp/x.redb?durable=yes", &["ls"], 2);
    fails("mem://x", &["ls"], 2);
    // Port 1 on loopback refuses connections.
    fails("etcd://127.0.0.1:1", &["ls"], 3);
    fails("redis://127.0.0.1:1/0", &["ls"], 3);
}

#[test]
fn watch_replays_typed_events_and_ends_on_interrupt() {
    let (_dir, url) = store();
    watch_until_interrupted(&url);
}

#[test]
fn watch_replays_collection_events_from_a_revision() {
    let (_dir, url) = store();
    watch_replays_collection_events(&url);
}

#[test]
fn the_store_comes_from_kvctl_store_or_the_data_directory() {
    let data = tempfile::tempdir().expect("a temp dir");
    let mut default = assert_cmd::Command::cargo_bin("kvctl").unwrap();
    default
        .env_remove("KVCTL_STORE")
        .env("XDG_DATA_HOME", data.path())
        .args(["put", "tenant.meta", "id=7", &tenant_meta(7)])
        .assert()
        .success();
    let file = data.path().join("kvctl").join("store.redb");
    assert!(
        file.is_file(),
        "the default redb store lives in the data directory"
    );
    let url = format!("redb://{}", file.display());
    assert_eq!(
        json(&url, &["get", "tenant.meta", "id=7"])["value"]["id"],
        7
    );
    let out = assert_cmd::Command::cargo_bin("kvctl")
        .unwrap()
        .env("KVCTL_STORE", &url)
        .args(["-o", "json", "get", "tenant.meta", "id=7"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The sled store of earlier versions at the default place, and no redb file yet: a command
/// on the default store refuses (creating an empty store would hide the keys), says how to
/// move them, and after that `kvctl copy` the default store holds them; the sled store is
/// untouched.
#[test]
fn an_old_default_sled_store_is_pointed_to_kvctl_copy() {
    let data = tempfile::tempdir().expect("a temp dir");
    let dir = data.path().join("kvctl");
    let sled = format!("sled://{}", dir.display());
    ok(&sled, &["put", "tenant.meta", "id=3", &tenant_meta(3)]);
    ok(&sled, &["put", "--raw", "own/key", "kept"]);
    let default = |args: &[&str]| {
        assert_cmd::Command::cargo_bin("kvctl")
            .unwrap()
            .env_remove("KVCTL_STORE")
            .env("XDG_DATA_HOME", data.path())
            .args(args)
            .output()
            .unwrap()
    };
    let file = dir.join("store.redb");
    for args in [
        &["get", "tenant.meta", "id=3"][..],
        &["put", "--raw", "x", "1"],
        &["ls"],
    ] {
        let out = default(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("kvctl copy"), "{err}");
        assert!(err.contains(&sled), "{err}");
        assert!(!file.exists(), "{args:?} created the redb store");
    }
    let redb = format!("redb://{}", file.display());
    // The command the message gives, in the same environment: copy names its stores.
    let out = default(&["copy", "--leases", "--from", &sled, "--to", &redb]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = default(&["-o", "json", "get", "tenant.meta", "id=3"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["value"]["id"], 3);
    let out = default(&["get", "own/key"]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("kept"), "{shown}");
    // The sled store still holds its keys.
    assert_eq!(
        json(&sled, &["get", "tenant.meta", "id=3"])["value"]["id"],
        3
    );
}

/// `kvctl migrate` of the tenant document's old layout on sled: interrupted after one batch,
/// resumed, verified, finalized; `list` shows where each migration stands.
#[test]
fn migrate_tenant_legacy_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sled://{}", dir.path().join("db").display());
    for (key, value) in [
        (
            "jxt//tenants/1/meta",
            r#"{"id":1,"code":"default","name":"默认租户","status":"active","billingPlan":"enterprise"}"#,
        ),
        ("jxt//tenants/1/domain/primary", "example.com"),
        (
            "jxt//hosts/api.example.com",
            r#"{"tenantId":1,"code":"default","hostType":"frontend"}"#,
        ),
        (
            "jxt//tenants/by-code/default",
            r#"{"id":1,"code":"default","name":"默认租户"}"#,
        ),
    ] {
        ok(&url, &["put", "--raw", key, value]);
    }
    // The old layout is read-only: a typed put is refused and writes nothing; it reads typed.
    let before = snapshot(&url);
    let refused = fails(
        &url,
        &["put", "jxt//tenants/1/domain/primary", "b.example.com"],
        2,
    );
    assert!(refused.contains("read-only"), "{refused}");
    assert!(
        refused.contains("kvctl migrate plan tenant-legacy"),
        "{refused}"
    );
    assert_eq!(snapshot(&url), before);
    let old = json(&url, &["get", "tenant-legacy.meta", "id=1"]);
    assert_eq!(old["key"], "jxt//tenants/1/meta", "{old}");
    let parsed = json(&url, &["parse", "jxt//hosts/api.example.com"]);
    assert_eq!(parsed["schema"], "tenant-legacy", "{parsed}");
    let schemas = json(&url, &["schema", "--all"]);
    assert!(
        schemas
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == "tenant-legacy" && s["read_only"] == true),
        "{schemas}"
    );
    let first = json(
        &url,
        &["migrate", "apply", "tenant-legacy", "--batches", "0"],
    );
    assert_eq!(first["batches"].as_u64(), Some(0), "{first}");
    let listed = json(&url, &["migrate", "list"]);
    assert_eq!(listed[0]["name"], "tenant-legacy");
    assert_eq!(listed[0]["phase"], "new");
    // The declaration: fifteen rows, old template to new.
    let rows = listed[0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 15, "{listed}");
    assert!(
        rows.iter().any(|r| r["old"] == "jxt//tenants/{id}/ftp"
            && r["new"] == "jxt/tenants/{id}/ftp/{username}")
    );
    let applied = json(&url, &["migrate", "apply", "tenant-legacy"]);
    assert_eq!(applied["created"].as_u64(), Some(4), "{applied}");
    assert_eq!(json(&url, &["migrate", "list"])[0]["phase"], "applied");
    ok(&url, &["migrate", "verify", "tenant-legacy"]);
    let got = json(&url, &["get", "tenant.meta", "id=1"]);
    assert_eq!(got["value"]["code"], "default", "{got}");
    let finalized = json(&url, &["migrate", "finalize", "tenant-legacy"]);
    assert_eq!(finalized["deleted"].as_u64(), Some(4), "{finalized}");
    assert_eq!(json(&url, &["migrate", "list"])[0]["phase"], "finalized");
}

/// `kvctl balancer load FILE`: the tables become the cache; duplicated API keys merge (the
/// map printed); a second load of the same file writes nothing; a bad file writes nothing.
#[test]
fn balancer_load_from_the_tables() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sled://{}", dir.path().join("db").display());
    let file = dir.path().join("tables.json");
    std::fs::write(
        &file,
        r#"{"apikeys": [{"id": 1, "api_key": "sk-a"}, {"id": 2, "api_key": "sk-a", "group_id": 10},
            {"id": 3, "api_key": "sk-b", "status": "disabled"}],
           "key_groups": [{"id": 10, "name": "default"}],
           "keygroup_apikey_mappings": [{"key_group_id": 10, "api_key_id": 3}]}"#,
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let first = json(&url, &["balancer", "load", path]);
    assert_eq!(first["keys"].as_u64(), Some(2), "{first}");
    assert_eq!(first["merged"][0]["old"].as_u64(), Some(2));
    assert_eq!(first["merged"][0]["new"].as_u64(), Some(1));
    let list = json(&url, &["get", "balancer.active-keys", "id=10"]);
    assert_eq!(list["value"], serde_json::json!(["1"]), "{list}");
    let before = snapshot(&url);
    let again = ok(&url, &["balancer", "load", path]);
    assert!(again.contains("nothing to do"), "{again}");
    assert_eq!(snapshot(&url), before);
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"apikeys": [{"id": 1, "api_key": ""}]}"#).unwrap();
    fails(&url, &["balancer", "load", bad.to_str().unwrap()], 2);
    assert_eq!(snapshot(&url), before);
}
