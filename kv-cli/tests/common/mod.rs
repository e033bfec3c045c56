//! Running `kvctl` against one store in the tests, and snapshots of what the store holds.

#![allow(dead_code)]

pub mod background;
pub mod server;

use assert_cmd::Command;
use serde_json::Value;

/// `kvctl --store URL`, with no store, data directory, schema manifest, config file or
/// password taken from the environment.
pub fn kvctl(url: &str) -> Command {
    let mut cmd = kvctl_without_store();
    cmd.args(["--store", url]);
    cmd
}

/// `kvctl` with no `--store`, and nothing taken from the environment (as [`kvctl`]): the
/// test sets what the store is chosen from.
pub fn kvctl_without_store() -> Command {
    Command::from_std(process_without_store())
}

/// [`kvctl_without_store`] as a plain process, for one that runs in the background.
pub fn process_without_store() -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("kvctl"));
    cmd.env_remove("KVCTL_STORE")
        .env_remove("KVCTL_SCHEMA")
        .env_remove("KVCTL_CONFIG")
        .env_remove("KVCTL_PASSWORD")
        .env("XDG_DATA_HOME", "/nonexistent/kvctl-tests")
        .env("XDG_CONFIG_HOME", "/nonexistent/kvctl-tests");
    cmd
}

/// The outcome of a run: exit code, stdout and stderr.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `kvctl --store URL ARGS...`.
pub fn run(url: &str, args: &[&str]) -> Run {
    outcome(kvctl(url).args(args))
}

/// Runs `cmd` (a [`kvctl`] with its arguments and environment set).
pub fn outcome(cmd: &mut Command) -> Run {
    let out = cmd.output().expect("kvctl runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs and requires success, returning stdout.
pub fn ok(url: &str, args: &[&str]) -> String {
    let run = run(url, args);
    assert_eq!(run.code, 0, "kvctl {args:?} failed: {}", run.stderr);
    run.stdout
}

/// Runs with `-o json` and requires success, returning the document.
pub fn json(url: &str, args: &[&str]) -> Value {
    let mut all = vec!["-o", "json"];
    all.extend_from_slice(args);
    serde_json::from_str(&ok(url, &all)).expect("kvctl prints JSON")
}

/// The keys `ls ARGS -o json` lists, in its order.
pub fn listed_keys(url: &str, args: &[&str]) -> Vec<String> {
    let mut all = vec!["ls"];
    all.extend_from_slice(args);
    json(url, &all)
        .as_array()
        .expect("ls prints an array")
        .iter()
        .map(|e| e["key"].as_str().expect("a key").to_owned())
        .collect()
}

/// Every key of the store with its revisions and value (`ls -l -o json`).
pub fn snapshot(url: &str) -> Value {
    json(url, &["ls", "-l"])
}

/// Requires a failure with `code` and a one-line error on stderr, and returns stderr.
pub fn fails(url: &str, args: &[&str], code: i32) -> String {
    let run = run(url, args);
    assert_eq!(
        run.code, code,
        "kvctl {args:?}: stdout {} stderr {}",
        run.stdout, run.stderr
    );
    assert_eq!(
        run.stderr.trim_end().lines().count(),
        1,
        "one line: {}",
        run.stderr
    );
    assert!(run.stderr.starts_with("kvctl: "), "{}", run.stderr);
    run.stderr
}

/// A valid `TenantMeta` document for tenant `id`.
pub fn tenant_meta(id: u64) -> String {
    format!(
        r#"{{"id":{id},"code":"t{id}","name":"Tenant {id}","status":"active","billingPlan":"basic"}}"#
    )
}

/// Runs the demo twice: the first run writes, the second changes nothing (same keys,
/// revisions and values; and the same store revision when the test owns the whole store,
/// `own_revision`: a namespace of a shared etcd shares its revision counter).
pub fn demo_twice(url: &str, own_revision: bool) {
    let first = json(url, &["demo"]);
    assert!(
        first["revision"].as_i64() > first["revision_before"].as_i64(),
        "{first}"
    );
    let steps = first["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 5, "{first}");
    let before = snapshot(url);
    let second = json(url, &["demo"]);
    if own_revision {
        assert_eq!(second["revision"], second["revision_before"], "{second}");
        assert_eq!(second["revision"], first["revision"], "{second}");
    }
    assert_nothing_written(&second);
    assert_eq!(snapshot(url), before);
    // Tenant 1 is the fifteen keys of the tenant document's §6.1.
    let keys: Vec<String> = second["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["key"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        keys.iter().filter(|k| k.starts_with("jxt/")).count(),
        15,
        "{keys:?}"
    );
    assert!(keys.contains(&"jxt/tenants/_index/host/api.example.com".to_owned()));
    assert_eq!(
        keys.iter()
            .filter(|k| k.starts_with("/registry/Common/VerifyCodeService/192.168.0."))
            .count(),
        6
    );
    assert_eq!(
        keys.iter()
            .filter(|k| k.starts_with("/Cronix/lock/"))
            .count(),
        1
    );
    assert_eq!(keys.iter().filter(|k| k.starts_with("group:")).count(), 3);
}

/// Checks that a `demo -o json` run wrote none of its steps.
pub fn assert_nothing_written(run: &Value) {
    assert!(
        run["steps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["written"] == false),
        "{run}"
    );
}

/// Typed put, get, ls and rm, with tenant 1 and tenant 10 side by side.
pub fn typed_round_trip(url: &str) {
    ok(url, &["put", "tenant.meta", "id=1", &tenant_meta(1)]);
    ok(url, &["put", "tenant.meta", "id=10", &tenant_meta(10)]);
    ok(
        url,
        &[
            "put",
            "tenant.storage-config",
            "id=10",
            r#"{"tenantId":10,"uploadQuotaGb":5,"maxFileSizeMb":10,"maxConcurrentUploads":2}"#,
        ],
    );
    let got = json(url, &["get", "tenant.meta", "id=10"]);
    assert_eq!(got["key"], "jxt/tenants/10/meta");
    assert_eq!(got["type"], "tenant.meta");
    assert_eq!(got["value"]["code"], "t10");
    // Pretty JSON in the table form.
    let text = ok(url, &["get", "jxt/tenants/10/meta"]);
    assert!(text.contains("\n  \"code\": \"t10\""), "{text}");
    // The directory of tenant 1 never holds tenant 10.
    assert_eq!(
        listed_keys(url, &["tenant.meta", "id=1"]),
        ["jxt/tenants/1/meta"]
    );
    let listed = json(url, &["ls", "tenant.meta", "id=10"]);
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
    ok(url, &["rm", "tenant.meta", "id=10"]);
    fails(url, &["get", "tenant.meta", "id=10"], 1);
    fails(url, &["rm", "tenant.meta", "id=10"], 1);
    assert_eq!(
        json(url, &["get", "tenant.meta", "id=1"])["value"]["code"],
        "t1"
    );
    // A typed directory delete takes tenant 10's remaining keys and nothing of tenant 1.
    let removed = json(url, &["rm", "--prefix", "tenant.meta", "id=10"]);
    assert_eq!(removed["prefix"], "jxt/tenants/10/");
    assert_eq!(removed["deleted"], 1);
    assert_eq!(
        json(url, &["ls", "tenant.meta", "id=10"]),
        serde_json::json!([])
    );
    assert_eq!(
        json(url, &["get", "tenant.meta", "id=1"])["value"]["code"],
        "t1"
    );
}

/// Bad keys, segments and values are refused with exit code 2 and nothing written.
pub fn bad_input_writes_nothing(url: &str) {
    ok(url, &["put", "tenant.meta", "id=3", &tenant_meta(3)]);
    let before = snapshot(url);
    let cases: &[&[&str]] = &[
        &["put", "tenant.meta", "id=01", "{}"],
        &["put", "tenant.meta", "id=x", &tenant_meta(1)],
        &["put", "tenant.meta", "id=4", "not json"],
        &["put", "tenant.meta", "id=4", r#"{"id":"four"}"#],
        &["put", "tenant.meta", &tenant_meta(4)],
        &["put", "tenant.ftp-config", "id=4", "username=a/b", "{}"],
        &["put", "tenant.no-such-template", "id=4", "{}"],
        &["put", "tenant.meta", "tenant=4", "{}"],
        &["put", "jxt/tenants/04/meta", &tenant_meta(4)],
        &["put", "no/schema/key", "value"],
        &["put", "nxc.profile-map", "realm=r", "provider=p", "x"],
    ];
    for args in cases {
        fails(url, args, 2);
    }
    assert_eq!(snapshot(url), before);
}

/// Two typed events replayed from revision 1, then Ctrl-C (SIGINT) ends the watch with
/// exit code 0.
pub fn watch_until_interrupted(url: &str) {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    ok(url, &["put", "tenant.meta", "id=5", &tenant_meta(5)]);
    ok(url, &["rm", "tenant.meta", "id=5"]);
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("kvctl"))
        .args([
            "--store",
            url,
            "-o",
            "json",
            "watch",
            "tenant.meta",
            "id=5",
            "--from-revision",
            "1",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kvctl starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut events = Vec::new();
    while events.len() < 2 {
        let line = lines
            .next()
            .expect("an event line")
            .expect("readable stdout");
        events.push(
            serde_json::from_str::<serde_json::Value>(&line).expect("one JSON event per line"),
        );
    }
    assert_eq!(events[0]["event"], "PUT");
    assert_eq!(events[0]["type"], "tenant.meta");
    assert_eq!(events[0]["fields"]["id"], "5");
    assert_eq!(events[1]["event"], "DELETE");
    // Ctrl-C ends the watch cleanly.
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let status = child.wait().expect("kvctl ends");
    assert_eq!(status.code(), Some(0));
}

/// `kvctl watch nxc: --rev 1` after the demo replays the demo's set and map writes as
/// collection events, typed like plain ones.
pub fn watch_replays_collection_events(url: &str) {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    ok(url, &["demo"]);
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("kvctl"))
        .args(["--store", url, "-o", "json", "watch", "nxc:", "--rev", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kvctl starts");
    let pid = child.id().to_string();
    // A watch that never prints what is expected fails the test instead of hanging it.
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let guard = std::thread::spawn({
        let pid = pid.clone();
        move || {
            if wait
                .recv_timeout(std::time::Duration::from_secs(60))
                .is_err()
            {
                let _ = Command::new("kill").args(["-KILL", &pid]).status();
            }
        }
    });
    let mut seen = std::collections::BTreeSet::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.expect("readable stdout");
        let event: serde_json::Value =
            serde_json::from_str(&line).expect("one JSON event per line");
        let kind = event["event"].as_str().expect("an event name").to_owned();
        if kind == "SADD" {
            assert!(event["member"].is_string(), "{event}");
            assert!(
                event["key"].as_str().unwrap().starts_with("nxc:"),
                "{event}"
            );
        }
        if kind == "HSET" {
            assert!(
                event["member"].is_string() && !event["value"].is_null(),
                "{event}"
            );
        }
        seen.insert(kind);
        if seen.contains("SADD") && seen.contains("HSET") {
            break;
        }
    }
    assert!(
        seen.contains("SADD") && seen.contains("HSET"),
        "the demo's set and map writes are replayed: {seen:?}"
    );
    let killed = Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    assert_eq!(child.wait().expect("kvctl ends").code(), Some(0));
    let _ = done.send(());
    guard.join().expect("the guard thread");
}
