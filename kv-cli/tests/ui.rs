//! `kvctl ui` over HTTP: every endpoint needs the token, a read-only server refuses writes
//! with nothing written, writes are checked exactly as `kvctl put` checks them (the same
//! error text), and the event stream delivers a change another kvctl process made. On a
//! temporary embedded store (redb, and sled for the live changes), which the server opens per
//! request so that other processes write in between, and on the harness's Redis and etcd.

mod common;

use common::server::Server;
use common::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

fn enc(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The names of the children of a level of the tree.
fn child_names(level: &Value) -> Vec<String> {
    level["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn every_request_needs_the_token() {
    let (_dir, url) = common::server::local_store();
    ok(&url, &["demo"]);
    let server = Server::start(&url, true);
    for (method, path) in [
        ("GET", "/"),
        ("GET", "/api/info"),
        ("GET", "/api/tree?prefix="),
        ("GET", "/api/key?key=jxt/tenants/1/meta"),
        ("GET", "/api/search?q=x"),
        ("GET", "/api/schema"),
        ("GET", "/api/events?prefix="),
        ("PUT", "/api/key"),
        ("POST", "/api/key"),
        ("DELETE", "/api/key?key=jxt/tenants/1/meta"),
    ] {
        let (status, body) = server.call(method, path, None, false);
        assert_eq!(status, 401, "{method} {path}: {body}");
        let wrong = format!(
            "{path}{}token=0000",
            if path.contains('?') { "&" } else { "?" }
        );
        let (status, _) = server.call(method, &wrong, None, false);
        assert_eq!(status, 401, "{method} {wrong}");
    }
    // Nothing was deleted.
    assert!(ok(&url, &["get", "tenant.meta", "id=1"]).contains("默认租户"));
    // With the token in the query, as the page's URL carries it.
    let (status, page) = server.call("GET", &format!("/?token={}", server.token), None, false);
    assert_eq!(status, 200);
    assert!(page.contains("<title>kvctl ui</title>"));
}

#[test]
fn reads_show_the_tree_a_key_search_and_the_schemas() {
    let (_dir, url) = common::server::local_store();
    ok(&url, &["demo"]);
    let server = Server::start(&url, false);
    let info = server.get("/api/info");
    assert_eq!(
        (info["backend"].as_str(), info["write"].as_bool()),
        (Some("redb"), Some(false))
    );

    let root = server.get("/api/tree?prefix=");
    assert_eq!(child_names(&root), ["/", "group:", "jxt/", "key:", "nxc:"]);
    let tenant = server.get("/api/tree?prefix=jxt/tenants/1/");
    let meta = tenant["children"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "meta")
        .unwrap();
    assert_eq!(meta["type"], "tenant.meta");
    assert_eq!(meta["path"], "jxt/tenants/1/meta");
    // Paged: one child per page, each page's `next` leading to the following one.
    let mut seen = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let path = match &next {
            Some(after) => format!(
                "/api/tree?prefix=jxt/tenants/1/&limit=1&after={}",
                enc(after)
            ),
            None => "/api/tree?prefix=jxt/tenants/1/&limit=1".to_owned(),
        };
        let page = server.get(&path);
        assert!(page["children"].as_array().unwrap().len() <= 1);
        seen.extend(
            page["children"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["name"].clone()),
        );
        match page["next"].as_str() {
            Some(n) => next = Some(n.to_owned()),
            None => break,
        }
    }
    let all: Vec<Value> = tenant["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].clone())
        .collect();
    assert_eq!(seen, all);

    let key = server.get("/api/key?key=jxt/tenants/1/meta");
    assert_eq!(key["type"], "tenant.meta");
    assert_eq!(key["template"], "jxt/tenants/{id}/meta");
    assert_eq!(key["fields"]["id"], "1");
    assert_eq!(key["value"]["name"], "默认租户");
    assert!(key["mod_revision"].as_i64().unwrap() >= 1);
    // The same document `kvctl get -o json` prints, plus the template.
    let got = json(&url, &["get", "tenant.meta", "id=1"]);
    assert_eq!(key["value"], got["value"]);
    assert_eq!(key["mod_revision"], got["mod_revision"]);

    // A collection: members as a table's rows.
    let set = server.get("/api/key?key=nxc:map:test_realm:Alipay");
    assert_eq!(set["collection"], "SET");
    assert_eq!(set["value"], json!(["app_001", "app_002"]));
    // An encrypted value without a keyring: shown as encrypted, never as bytes.
    let pool = server.get("/api/key?key=nxc:pool:Alipay:app_001");
    assert_eq!(pool["value"], Value::Null);
    assert_eq!(pool["encrypted"]["key_id"], "demo-1");

    let found = server.get(&format!("/api/search?q={}", enc("tenant.meta id=1")));
    assert_eq!(found["key"], "jxt/tenants/1/meta");
    assert_eq!(found["dir"], "jxt/tenants/1/");
    let found = server.get(&format!("/api/search?q={}", enc("jxt/tenants/")));
    assert_eq!(
        (found["key"].clone(), found["dir"].as_str()),
        (Value::Null, Some("jxt/tenants/"))
    );
    let (status, error) = server.fails(
        "GET",
        &format!("/api/search?q={}", enc("tenant.nope id=1")),
        None,
    );
    assert_eq!(status, 400);
    assert!(error.contains("unknown template"), "{error}");
    let (status, _) = server.fails("GET", "/api/key?key=jxt/tenants/9/meta", None);
    assert_eq!(status, 404);

    let schemas = server.get("/api/schema");
    let names: Vec<&str> = schemas
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(
        names.starts_with(&["tenant", "registry", "cronix", "nxc", "balancer"]),
        "{names:?}"
    );
}

/// A team's own schema, loaded from a manifest with `--schema`: listed beside the bundled
/// schemas as `kvctl schema` lists it, and its keys typed in the tree, in a key's detail and
/// in search, while a key none of its templates holds stays untyped.
#[test]
fn a_schema_from_a_manifest_types_its_keys() {
    let (dir, url) = common::server::local_store();
    let manifest = common::server::acme_manifest(dir.path());
    let schema = manifest.to_str().unwrap();
    ok(&url, &["demo"]);
    ok(
        &url,
        &[
            "--schema",
            schema,
            "put",
            "acme.meta",
            "id=7",
            &tenant_meta(7),
        ],
    );
    ok(
        &url,
        &[
            "--schema",
            schema,
            "put",
            "--raw",
            "acme/tenants/7/oops",
            "x",
        ],
    );
    let server = Server::start_with(&url, &["--schema", schema]);

    // Listed first (a team's own schemas parse first), then the bundled ones, each as
    // `kvctl schema NAME -o json` prints it.
    let schemas = server.get("/api/schema");
    let names: Vec<&str> = schemas
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(
        names.starts_with(&["acme", "tenant", "registry", "cronix", "nxc", "balancer"]),
        "{names:?}"
    );
    let printed = json(&url, &["--schema", schema, "schema", "acme"]);
    assert_eq!(schemas[0], printed);
    let meta = schemas[0]["templates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "meta")
        .expect("acme.meta is listed");
    assert_eq!(meta["address"], "acme.meta");
    assert_eq!(meta["template"], "acme/tenants/{id}/meta");

    // The tree types the key by the loaded schema, and leaves the unknown one untyped.
    let level = server.get("/api/tree?prefix=acme/tenants/7/");
    assert_eq!(child_names(&level), ["meta", "oops"]);
    assert_eq!(level["children"][0]["type"], "acme.meta");
    assert_eq!(level["children"][1]["type"], Value::Null);
    // The bundled schemas still type their own keys.
    let tenant = server.get("/api/tree?prefix=jxt/tenants/1/");
    let bundled = tenant["children"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "meta")
        .unwrap();
    assert_eq!(bundled["type"], "tenant.meta");

    let key = server.get("/api/key?key=acme/tenants/7/meta");
    assert_eq!(key["type"], "acme.meta");
    assert_eq!(key["schema"], "acme");
    assert_eq!(key["template"], "acme/tenants/{id}/meta");
    assert_eq!(key["fields"]["id"], "7");
    assert_eq!(key["value"]["name"], "Tenant 7");
    let got = json(&url, &["--schema", schema, "get", "acme.meta", "id=7"]);
    assert_eq!(key["value"], got["value"]);
    let unknown = server.get("/api/key?key=acme/tenants/7/oops");
    assert_eq!(
        (&unknown["type"], &unknown["template"], &unknown["schema"]),
        (&Value::Null, &Value::Null, &Value::Null),
        "{unknown}"
    );
    assert_eq!(unknown["value_text"], "x");

    let found = server.get(&format!("/api/search?q={}", enc("acme.meta id=7")));
    assert_eq!(found["key"], "acme/tenants/7/meta");
    assert_eq!(found["dir"], "acme/tenants/7/");
}

#[test]
fn a_read_only_server_refuses_every_write_and_writes_nothing() {
    let (_dir, url) = common::server::local_store();
    ok(&url, &["demo"]);
    let before = snapshot(&url);
    let server = Server::start(&url, false);
    let meta = json!({ "key": "jxt/tenants/1/meta", "value": tenant_meta(1) });
    let create =
        json!({ "template": "tenant.meta", "fields": { "id": "7" }, "value": tenant_meta(7) });
    for (method, path, body) in [
        ("PUT", "/api/key", Some(&meta)),
        ("POST", "/api/key", Some(&create)),
        ("DELETE", "/api/key?key=jxt/tenants/1/meta", None),
    ] {
        let (status, error) = server.fails(method, path, body);
        assert_eq!(status, 403, "{method}");
        assert!(error.contains("read-only"), "{error}");
    }
    assert_eq!(snapshot(&url), before);
}

#[test]
fn writes_are_checked_as_kvctl_put_checks_them() {
    let (_dir, url) = common::server::local_store();
    ok(&url, &["demo"]);
    let server = Server::start(&url, true);

    // An invalid value: the error `kvctl put` prints, and nothing written.
    let before = snapshot(&url);
    let bad = "{\"id\":1,\"code\":";
    let (status, error) = server.fails(
        "PUT",
        "/api/key",
        Some(&json!({ "key": "jxt/tenants/1/meta", "value": bad })),
    );
    assert_eq!(status, 400);
    let cli = run(&url, &["put", "tenant.meta", "id=1", bad]);
    assert_eq!(cli.code, 2);
    assert_eq!(format!("kvctl: {error}"), cli.stderr.trim_end());
    // A key that belongs to no schema.
    let (status, error) = server.fails(
        "PUT",
        "/api/key",
        Some(&json!({ "key": "no/schema", "value": "x" })),
    );
    assert_eq!(status, 400);
    let cli = run(&url, &["put", "no/schema", "x"]);
    assert_eq!(format!("kvctl: {error}"), cli.stderr.trim_end());
    // A bad field in the create form, as `kvctl put` says it of a typed address.
    let (status, error) = server.fails(
        "POST",
        "/api/key",
        Some(
            &json!({ "template": "tenant.meta", "fields": { "id": "x" }, "value": tenant_meta(7) }),
        ),
    );
    assert_eq!(status, 400);
    let cli = run(&url, &["put", "tenant.meta", "id=x", &tenant_meta(7)]);
    assert_eq!(format!("kvctl: {error}"), cli.stderr.trim_end());
    assert_eq!(snapshot(&url), before);

    // An edit at the revision the page showed; a second one at that stale revision is a
    // conflict with nothing written.
    let shown = server.get("/api/key?key=jxt/tenants/1/meta");
    let rev = shown["mod_revision"].as_i64().unwrap();
    let edit = |name: &str| {
        json!({
            "key": "jxt/tenants/1/meta",
            "value": tenant_meta(1).replace("Tenant 1", name),
            "mod_revision": rev,
        })
    };
    let (status, body) = server.call("PUT", "/api/key", Some(&edit("Edited")), true);
    assert_eq!(status, 200, "{body}");
    let (status, error) = server.fails("PUT", "/api/key", Some(&edit("Stale")));
    assert_eq!(status, 409, "{error}");
    assert!(ok(&url, &["get", "tenant.meta", "id=1"]).contains("Edited"));

    // Create from a template's fields; creating it again is a conflict.
    let create =
        json!({ "template": "tenant.meta", "fields": { "id": "7" }, "value": tenant_meta(7) });
    let (status, body) = server.call("POST", "/api/key", Some(&create), true);
    assert_eq!(status, 200, "{body}");
    let created: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(created["key"], "jxt/tenants/7/meta");
    let (status, _) = server.fails("POST", "/api/key", Some(&create));
    assert_eq!(status, 409);

    // Delete, then it is gone.
    let (status, body) = server.call("DELETE", "/api/key?key=jxt/tenants/7/meta", None, true);
    assert_eq!(status, 200, "{body}");
    let (status, _) = server.fails("DELETE", "/api/key?key=jxt/tenants/7/meta", None);
    assert_eq!(status, 404);
    fails(&url, &["get", "tenant.meta", "id=7"], 1);
}

/// Reads server-sent events until one `change` message arrives; returns its data.
fn next_change(reader: &mut impl BufRead) -> Value {
    next_event(reader, "change").0
}

/// Reads server-sent events until one named `name` arrives; returns its data and its event
/// id, if it has one.
fn next_event(reader: &mut impl BufRead, name: &str) -> (Value, Option<String>) {
    let (mut event, mut id, mut data) = (String::new(), None, None);
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the stream ended");
        let line = line.trim_end();
        if line.is_empty() {
            // The end of a message.
            if event == name
                && let Some(data) = data.take()
            {
                return (data, id);
            }
            (event, id, data) = (String::new(), None, None);
        } else if let Some(value) = line.strip_prefix("event: ") {
            event = value.to_owned();
        } else if let Some(value) = line.strip_prefix("id: ") {
            id = Some(value.to_owned());
        } else if let Some(value) = line.strip_prefix("data: ") {
            data = Some(serde_json::from_str(value).unwrap());
        }
    }
}

/// Opens the event stream (from `last_id` when given, as a reconnecting browser does);
/// returns the reader once the headers are read.
fn events_from(server: &Server, prefix: &str, last_id: Option<&str>) -> BufReader<TcpStream> {
    let mut stream = TcpStream::connect(&server.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let resume = last_id
        .map(|id| format!("Last-Event-ID: {id}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET /api/events?prefix={prefix}&token={} HTTP/1.1\r\nHost: {}\r\n{resume}\r\n",
        server.token, server.addr
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    assert!(status.contains(" 200 "), "{status}");
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            return reader;
        }
    }
}

fn events(server: &Server, prefix: &str) -> BufReader<TcpStream> {
    events_from(server, prefix, None)
}

fn live_changes_reach_the_page(url: &str) {
    ok(url, &["demo"]);
    let server = Server::start(url, false);
    let mut reader = events(&server, "jxt/");
    // Every change from here on reaches the stream.
    let (_, start) = next_event(&mut reader, "ready");
    assert!(
        start.is_some(),
        "the ready message carries the starting position"
    );
    ok(url, &["put", "tenant.meta", "id=101", &tenant_meta(101)]);
    let change = next_change(&mut reader);
    assert_eq!(change["event"], "PUT", "{change}");
    assert_eq!(change["type"], "tenant.meta");
    assert_eq!(change["key"], "jxt/tenants/101/meta");
    assert_eq!(change["value"]["id"], 101);
    ok(url, &["rm", "tenant.meta", "id=101"]);
    let (gone, position) = next_event(&mut reader, "change");
    assert_eq!(gone["event"], "DELETE", "{gone}");
    assert_eq!(gone["key"], "jxt/tenants/101/meta");
    // The stream is lost; a change happens meanwhile; the page reconnects from the last
    // position it had: it gets that change, and nothing it already had.
    let position = position.expect("a batch's last message carries the position");
    drop(reader);
    ok(url, &["put", "tenant.meta", "id=102", &tenant_meta(102)]);
    let mut resumed = events_from(&server, "jxt/", Some(&position));
    let (ready, at) = next_event(&mut resumed, "ready");
    assert_eq!(
        (ready["ready"].as_bool(), at.as_deref()),
        (Some(true), Some(position.as_str()))
    );
    let missed = next_change(&mut resumed);
    assert_eq!(
        (missed["event"].as_str(), missed["key"].as_str()),
        (Some("PUT"), Some("jxt/tenants/102/meta"))
    );
}

#[test]
fn live_changes_of_another_process_on_redb() {
    let (_dir, url) = common::server::local_store();
    live_changes_reach_the_page(&url);
}

#[test]
fn live_changes_of_another_process_on_sled() {
    let (_dir, url) = common::server::sled_store();
    live_changes_reach_the_page(&url);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_changes_of_another_process_on_redis() {
    let Some(server) = keyplane_tests::harness::shared_redis().await else {
        return;
    };
    let url = format!("{}/5", server.url());
    tokio::task::spawn_blocking(move || live_changes_reach_the_page(&url))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_changes_of_another_process_on_etcd() {
    let Some(server) = keyplane_tests::harness::shared_etcd().await else {
        return;
    };
    let endpoint = server.endpoint();
    let host = endpoint
        .strip_prefix("http://")
        .unwrap_or(&endpoint)
        .to_owned();
    let url = format!(
        "etcd://{host}?namespace={}",
        keyplane_tests::harness::key_root("ui")
    );
    tokio::task::spawn_blocking(move || live_changes_reach_the_page(&url))
        .await
        .unwrap();
}

/// With `--keyring`, an encrypted value shows decrypted; the key never appears.
#[test]
fn a_keyring_opens_encrypted_values() {
    use base64::Engine;
    let (dir, url) = common::server::local_store();
    ok(&url, &["demo"]);
    let demo_key =
        base64::engine::general_purpose::STANDARD.encode(b"kvctl-demo-key-not-for-real-use!");
    let file = dir.path().join("keyring.json");
    std::fs::write(&file, format!(r#"{{"keys": {{"demo-1": "{demo_key}"}}}}"#)).unwrap();
    let server = Server::start_with(&url, &["--keyring", file.to_str().unwrap()]);
    assert_eq!(server.get("/api/info")["keyring"], true);
    let pool = server.get("/api/key?key=nxc:pool:Alipay:app_001");
    assert_eq!(pool["decrypted"], true);
    assert!(
        pool["value"]
            .as_str()
            .unwrap()
            .contains("BEGIN PRIVATE KEY"),
        "{pool}"
    );
    assert!(!pool.to_string().contains(&demo_key));
}

/// On Redis Cluster: the tree is read across co-location groups, a key of the cluster
/// variant shows its typed address, and a change in a group reaches the page with its group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_reads_a_redis_cluster_across_groups() {
    let Some(cluster) = keyplane_tests::harness::shared_redis_cluster().await else {
        return;
    };
    let url = cluster.url();
    tokio::task::spawn_blocking(move || {
        ok(&url, &["demo"]);
        let server = Server::start(&url, false);
        assert_eq!(server.get("/api/info")["sharded"], true);
        let root = server.get("/api/tree?prefix=");
        let names: Vec<&str> = root["children"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"nxc:") && names.contains(&"{demo}:"),
            "{names:?}"
        );
        let marker = server.get("/api/key?key=nxc:map:%7Btest_realm%7D:Alipay:default");
        assert_eq!(marker["type"], "nxc-cluster.default-profile");
        assert_eq!(marker["value"], "app_001");

        let mut reader = events(&server, "");
        next_event(&mut reader, "ready");
        let key = format!("ui:{{{}}}:k", uuid::Uuid::new_v4().simple());
        ok(&url, &["put", "--raw", &key, "v"]);
        let change = next_change(&mut reader);
        assert_eq!(change["key"], key.as_str(), "{change}");
        assert!(change["group"].is_string(), "{change}");
    })
    .await
    .unwrap();
}
