//! `kvctl` for an operator's daily work, on etcd, Redis and sled: leases (grant, keep-alive,
//! revoke, ttl, `put --lease`), listings with `--keys-only`, `--limit` and `--count`, `del`,
//! `compact`, `status`, and `lock` and `elect` held by running processes.

mod common;

use common::background::{Background, etcd_url, redb_url, redis_url, sled_url};
use common::*;
use keyplane_tests::harness::key_root;
use std::process::Stdio;
use std::time::Duration;

/// The ID of `lease ID granted with TTL(...)`.
fn granted_id(line: &str) -> String {
    let rest = line
        .strip_prefix("lease ")
        .unwrap_or_else(|| panic!("not a grant: {line}"));
    let (id, tail) = rest.split_once(' ').expect("an ID");
    assert!(tail.starts_with("granted with TTL("), "{line}");
    id.to_owned()
}

/// Grant, put --lease, ttl (--keys), keep-alive (once, and until the lease is revoked by
/// another process, where two processes can share the store: `shared`), revoke (its keys
/// go), and refused input that writes nothing.
fn leases(url: &str, shared: bool) {
    let root = key_root("lease");
    let key = format!("{root}held");
    let granted = ok(url, &["lease", "grant", "30"]);
    let id = granted_id(granted.trim());
    assert_eq!(granted.trim(), format!("lease {id} granted with TTL(30s)"));
    let doc = json(url, &["lease", "grant", "1m"]);
    assert_eq!(doc["ttl"], 60);
    assert!(doc["id"].as_str().is_some_and(|s| !s.is_empty()), "{doc}");
    let minute = doc["id"].as_str().unwrap_or_default().to_owned();
    let listed = listed_leases(url);
    assert!(
        listed.contains(&id) && listed.contains(&minute),
        "{listed:?}"
    );

    let put = json(url, &["put", "--raw", "--lease", &id, &key, "v"]);
    assert_eq!(put["lease"]["id"], id.as_str());
    let ttl = json(url, &["lease", "ttl", &id, "--keys"]);
    assert_eq!(ttl["granted_ttl"], 30);
    let remaining = ttl["ttl"].as_u64().expect("seconds left");
    assert!((1..=30).contains(&remaining), "{ttl}");
    assert_eq!(ttl["keys"], serde_json::json!([key]));
    let line = ok(url, &["lease", "ttl", &id, "--keys"]);
    assert!(
        line.starts_with(&format!("lease {id} granted with TTL(30s), remaining(")),
        "{line}"
    );
    assert!(
        line.trim_end()
            .ends_with(&format!("attached keys([{key}])")),
        "{line}"
    );
    assert_eq!(
        ok(url, &["lease", "keep-alive", "--once", &id]).trim(),
        format!("lease {id} keepalived with TTL(30)")
    );

    if shared {
        keep_alive_until_revoked(url);
    }

    // Revoking deletes the lease's keys.
    ok(url, &["lease", "revoke", &id]);
    fails(url, &["get", &key], 1);
    fails(url, &["lease", "ttl", &id], 1);
    fails(url, &["lease", "revoke", &id], 1);
    fails(url, &["lease", "keep-alive", &id], 1);
    let listed = listed_leases(url);
    assert!(
        !listed.contains(&id) && listed.contains(&minute),
        "{listed:?}"
    );
    ok(url, &["lease", "revoke", &minute]);

    // Bad input: exit 2 (1 for a lease that is gone), one line, nothing written.
    let other = format!("{root}other");
    fails(url, &["put", "--raw", "--lease", &id, &other, "v"], 1);
    fails(url, &["put", "--raw", "--lease", "xyz", &other, "v"], 2);
    let both = [
        "put",
        "--raw",
        "--lease",
        &id,
        "--lease-ttl",
        "5s",
        &other,
        "v",
    ];
    assert_eq!(run(url, &both).code, 2);
    fails(url, &["get", &other], 1);
    fails(url, &["lease", "grant", "0"], 2);
    fails(url, &["lease", "grant", "3d"], 2);
    fails(url, &["lease", "ttl", "not-hex"], 2);
}

/// The IDs `lease list` prints as etcdctl does (`found N leases`, then one hex ID a line),
/// checked against its JSON (`{"count", "leases"}`).
fn listed_leases(url: &str) -> Vec<String> {
    let table = ok(url, &["lease", "list"]);
    let mut lines = table.lines();
    let count: usize = lines
        .next()
        .and_then(|l| l.strip_prefix("found "))
        .and_then(|l| l.strip_suffix(" leases"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no `found N leases` line: {table}"));
    let ids: Vec<String> = lines.map(str::to_owned).collect();
    assert_eq!(ids.len(), count, "{table}");
    assert!(
        ids.iter().all(|id| u64::from_str_radix(id, 16).is_ok()),
        "{table}"
    );
    let doc = json(url, &["lease", "list"]);
    let json_ids: Vec<String> = doc["leases"]
        .as_array()
        .unwrap_or_else(|| panic!("no leases array: {doc}"))
        .iter()
        .filter_map(|id| id.as_str().map(str::to_owned))
        .collect();
    assert_eq!(doc["count"], json_ids.len(), "{doc}");
    // Another test may grant or revoke leases between the two listings: each of this
    // test's leases is in both or in neither, which the callers check on the table's.
    ids
}

/// `lease keep-alive` renews until Ctrl-C, or until another process revokes the lease: then
/// it says so and ends with exit code 0.
fn keep_alive_until_revoked(url: &str) {
    // Ctrl-C ends a keep-alive with exit code 0, the lease left as it is.
    let long = granted_id(ok(url, &["lease", "grant", "60s"]).trim());
    let mut keeper = Background::start(url, &["-o", "json", "lease", "keep-alive", &long]);
    let renewal: serde_json::Value = serde_json::from_str(&keeper.next()).unwrap();
    assert_eq!(renewal, serde_json::json!({ "id": long, "ttl": 60 }));
    assert_eq!(keeper.interrupt(), 0);
    ok(url, &["lease", "ttl", &long]);

    let short = granted_id(ok(url, &["lease", "grant", "3s"]).trim());
    let mut keeper = Background::start(url, &["lease", "keep-alive", &short]);
    assert_eq!(
        keeper.next(),
        format!("lease {short} keepalived with TTL(3)")
    );
    assert_eq!(
        keeper.next(),
        format!("lease {short} keepalived with TTL(3)")
    );
    assert_eq!(
        ok(url, &["lease", "revoke", &short]).trim(),
        format!("lease {short} revoked")
    );
    assert_eq!(keeper.next(), format!("lease {short} expired or revoked."));
    assert_eq!(keeper.wait(), 0);
}

#[tokio::test]
async fn etcd_leases() {
    let Some(url) = etcd_url("ops").await else {
        return;
    };
    leases(&url, true);
}

#[tokio::test]
async fn redis_leases() {
    let Some(url) = redis_url(10).await else {
        return;
    };
    leases(&url, true);
}

#[test]
fn redb_leases() {
    let dir = tempfile::tempdir().unwrap();
    // One process at a time opens a redb file: no keep-alive beside a revoke.
    leases(&redb_url(&dir), false);
}

#[test]
fn sled_leases() {
    let dir = tempfile::tempdir().unwrap();
    // One process at a time opens a sled database: no keep-alive beside a revoke.
    leases(&sled_url(&dir), false);
}

/// `ls --keys-only`, `--limit N` and `--count` over three keys, and `del` as `rm`.
fn listings(url: &str) {
    let root = key_root("ls");
    let keys: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|k| format!("{root}{k}"))
        .collect();
    for key in &keys {
        ok(url, &["put", "--raw", key, "v"]);
    }
    let lines = |out: String| -> Vec<String> { out.lines().map(str::to_owned).collect() };
    assert_eq!(lines(ok(url, &["ls", &root, "--keys-only"])), keys);
    assert_eq!(
        lines(ok(url, &["ls", &root, "--keys-only", "--limit", "2"])),
        keys[..2]
    );
    assert_eq!(listed_keys(url, &[&root, "--limit", "2"]), keys[..2]);
    assert_eq!(listed_keys(url, &[&root, "--keys-only"]), keys);
    assert_eq!(ok(url, &["ls", &root, "--count"]).trim(), "3");
    assert_eq!(
        json(url, &["ls", &root, "--count"]),
        serde_json::json!({ "count": 3 })
    );

    assert_eq!(
        ok(url, &["del", &keys[0]]).trim(),
        format!("deleted {}", keys[0])
    );
    fails(url, &["del", &keys[0]], 1);
    assert_eq!(ok(url, &["ls", &root, "--count"]).trim(), "2");

    // Bad input: exit 2, nothing listed.
    fails(url, &["ls", &root, "--limit", "0"], 2);
    let both = run(url, &["ls", &root, "--count", "-l"]);
    assert_eq!((both.code, both.stdout.as_str()), (2, ""));
}

#[tokio::test]
async fn etcd_listings() {
    let Some(url) = etcd_url("ops").await else {
        return;
    };
    listings(&url);
}

#[tokio::test]
async fn redis_listings() {
    let Some(url) = redis_url(11).await else {
        return;
    };
    listings(&url);
}

#[test]
fn redb_listings() {
    let dir = tempfile::tempdir().unwrap();
    listings(&redb_url(&dir));
}

#[test]
fn sled_listings() {
    let dir = tempfile::tempdir().unwrap();
    listings(&sled_url(&dir));
}

/// `status` names the backend, its hosts and revision; `compact REV` discards the history
/// before REV (a read at an earlier revision then fails), and refuses revisions out of range.
fn status_and_compact(url: &str, backend: &str, hosts: &str, host: Option<&str>) {
    let root = key_root("compact");
    let key = format!("{root}k");
    let first = json(url, &["put", "--raw", &key, "1"])["revision"]
        .as_i64()
        .unwrap();
    let second = json(url, &["put", "--raw", &key, "2"])["revision"]
        .as_i64()
        .unwrap();

    let status = json(url, &["status"]);
    assert_eq!(status["backend"], backend, "{status}");
    assert!(status["revision"].as_i64().unwrap() >= second, "{status}");
    assert!(
        status["read_latency_ms"].as_f64().unwrap() >= 0.0,
        "{status}"
    );
    assert!(status["history_retention"].is_object() || status["history_retention"].is_string());
    if let Some(host) = host {
        assert_eq!(status[hosts], serde_json::json!([host]), "{status}");
    }
    let members = status["members"].as_array().expect("members");
    if backend == "sled" || backend == "redb" {
        assert!(status["version"].is_null(), "{status}");
        assert!(members.is_empty(), "{status}");
    } else {
        let version = status["version"].as_str().expect("the server's version");
        assert!(version.contains('.'), "{status}");
        let leaders = members.iter().filter(|m| m["leader"] == true).count();
        assert_eq!(leaders, 1, "{status}");
        if let Some(host) = host {
            let reached = |m: &serde_json::Value| {
                m["client_urls"].as_array().is_some_and(|urls| {
                    urls.iter()
                        .any(|u| u.as_str().is_some_and(|u| u.contains(host)))
                })
            };
            assert!(members.iter().any(reached), "{status}");
        }
    }
    let table = ok(url, &["status"]);
    assert!(table.contains(&format!("backend:   {backend}")), "{table}");
    match status["version"].as_str() {
        Some(version) => {
            assert!(table.contains(&format!("version:   {version}")), "{table}");
            assert!(table.contains("members:\n  "), "{table}");
        }
        None => assert!(table.contains("version:   none"), "{table}"),
    }
    assert!(table.contains("read latency: "), "{table}");

    let before = ok(url, &["get", &key, "--rev", &first.to_string()]);
    assert!(before.contains('1'), "{before}");
    fails(url, &["compact", "0"], 2);
    fails(url, &["compact", &(second + 1000).to_string()], 2);
    let done = ok(url, &["compact", &second.to_string()]);
    assert!(
        done.starts_with(&format!("compacted revision {second} ({backend}: ")),
        "{done}"
    );
    let gone = run(url, &["get", &key, "--rev", &first.to_string()]);
    assert_ne!(gone.code, 0, "{}", gone.stdout);
    ok(url, &["get", &key, "--rev", &second.to_string()]);
}

/// The host and port of a store URL.
fn host_of(url: &str) -> String {
    let rest = url.split_once("://").unwrap().1;
    rest.split(['/', '?']).next().unwrap().to_owned()
}

#[tokio::test]
async fn etcd_status_and_compact() {
    let Some(url) = etcd_url("ops").await else {
        return;
    };
    status_and_compact(&url, "etcd", "endpoints", Some(&host_of(&url)));
}

#[tokio::test]
async fn redis_status_and_compact() {
    let Some(url) = redis_url(12).await else {
        return;
    };
    status_and_compact(&url, "redis", "master", Some(&host_of(&url)));
}

#[test]
fn redb_status_and_compact() {
    let dir = tempfile::tempdir().unwrap();
    status_and_compact(&redb_url(&dir), "redb", "path", None);
}

#[test]
fn sled_status_and_compact() {
    let dir = tempfile::tempdir().unwrap();
    status_and_compact(&sled_url(&dir), "sled", "path", None);
}

/// Waits until `ls PREFIX --count` says `n`: how a test sees that a contender has queued.
fn wait_for_count(url: &str, prefix: &str, n: u64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while json(url, &["ls", prefix, "--count"])["count"] != n {
        assert!(
            std::time::Instant::now() < deadline,
            "{prefix}: never {n} keys"
        );
        std::thread::park_timeout(Duration::from_millis(20));
    }
}

/// Two `kvctl lock NAME -- CMD` processes: the second's command starts only once the first's
/// has ended (both append to one file), the first exits with its command's exit code; a lock
/// without a command prints its key and holds it until Ctrl-C.
fn locks(url: &str) {
    use std::io::Write;
    let name = key_root("lock");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let log = log.to_str().unwrap();
    // The first command ends when the test writes a line to its stdin.
    let first_cmd =
        format!("echo first-start >> {log}; read line; echo first-end >> {log}; exit 3");
    let mut first = Background::start_with(
        url,
        &["lock", &name, "--ttl", "10s", "--", "sh", "-c", &first_cmd],
        Stdio::piped(),
    );
    wait_for_count(url, &name, 1);
    let second_cmd = format!("echo second-start >> {log}");
    let mut second = Background::start(url, &["lock", &name, "--", "sh", "-c", &second_cmd]);
    // The second has queued behind the first.
    wait_for_count(url, &name, 2);
    assert_eq!(std::fs::read_to_string(log).unwrap(), "first-start\n");
    let mut stdin = first.take_stdin();
    writeln!(stdin, "go").unwrap();
    drop(stdin);
    assert_eq!(first.wait(), 3);
    assert_eq!(second.wait(), 0);
    assert_eq!(
        std::fs::read_to_string(log).unwrap(),
        "first-start\nfirst-end\nsecond-start\n"
    );
    wait_for_count(url, &name, 0);

    // Without a command: the key, held until Ctrl-C, then released.
    let mut holder = Background::start(url, &["lock", &name]);
    let key = holder.next();
    assert!(key.starts_with(&name), "{key}");
    assert_eq!(listed_keys(url, &[&name]), [key]);
    assert_eq!(holder.interrupt(), 0);
    wait_for_count(url, &name, 0);

    // Bad input: exit 2, nothing written.
    fails(url, &["lock", &name, "--ttl", "0s", "--", "true"], 2);
    fails(url, &["lock", "", "--", "true"], 2);
    fails(url, &["lock", &name, "--", "/nonexistent/program"], 2);
    wait_for_count(url, &name, 0);
}

#[tokio::test]
async fn etcd_locks() {
    let Some(url) = etcd_url("ops").await else {
        return;
    };
    locks(&url);
}

#[tokio::test]
async fn redis_locks() {
    let Some(url) = redis_url(13).await else {
        return;
    };
    locks(&url);
}
