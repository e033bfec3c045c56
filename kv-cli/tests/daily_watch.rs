//! `kvctl elect` (campaigning and `--listen`, held by running processes) and `kvctl watch`'s
//! `--exact` (one exact key) and `--prev-kv` (each event's previous value), on etcd and Redis
//! (`watch` on sled too).

mod common;

use common::background::{Background, etcd_url, redis_url};
use common::*;
use keyplane_tests::harness::key_root;
use serde_json::{Value, json as doc};
use std::time::Duration;

/// Waits until `ls PREFIX --count` says `n`: how a test sees that a candidate has queued.
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

/// Two candidates and a listener: the first prints its key and proposal once elected; the
/// second prints nothing while the first leads, and is elected when the first ends on
/// Ctrl-C (resigning); the listener prints A, then B.
fn elections(url: &str) {
    let name = key_root("elect").trim_end_matches('/').to_owned();
    let dir = format!("{name}/");
    let listener = Background::start(url, &["elect", &name, "--listen"]);
    let mut first = Background::start(url, &["elect", &name, "A", "--ttl", "10s"]);
    let key_a = first.next();
    assert!(key_a.starts_with(&dir), "{key_a}");
    assert_eq!(first.next(), "A");
    assert_eq!(listed_keys(url, &[&dir]), std::slice::from_ref(&key_a));
    assert_eq!(
        (listener.next(), listener.next()),
        (key_a.clone(), "A".into())
    );

    let mut second = Background::start(url, &["elect", &name, "B"]);
    // The second has queued behind the first, and waits.
    wait_for_count(url, &dir, 2);
    assert_eq!(second.printed(), Vec::<String>::new());
    assert_eq!(listener.printed(), Vec::<String>::new());
    assert_eq!(first.interrupt(), 0);
    let key_b = second.next();
    assert!(key_b.starts_with(&dir) && key_b != key_a, "{key_b}");
    assert_eq!(second.next(), "B");
    assert_eq!(
        (listener.next(), listener.next()),
        (key_b.clone(), "B".into())
    );
    assert_eq!(listed_keys(url, &[&dir]), std::slice::from_ref(&key_b));
    assert_eq!(second.interrupt(), 0);
    wait_for_count(url, &dir, 0);

    // JSON: one line per leader.
    let mut third = Background::start(url, &["-o", "json", "elect", &name, "C"]);
    let elected = third.next_json();
    assert_eq!(elected["value"], "C", "{elected}");
    assert!(
        elected["key"].as_str().unwrap().starts_with(&dir),
        "{elected}"
    );
    assert!(
        elected["lease"].is_string() && elected["revision"].is_i64(),
        "{elected}"
    );
    let listened = Background::start(url, &["-o", "json", "elect", &name, "--listen"]);
    assert_eq!(listened.next_json(), elected);
    assert_eq!(third.interrupt(), 0);
    wait_for_count(url, &dir, 0);

    // Bad input: exit 2, nothing written.
    fails(url, &["elect", "", "A"], 2);
    fails(url, &["elect", &name, "A", "--ttl", "0s"], 2);
    fails(url, &["elect", &name, "A", "--ttl", "soon"], 2);
    let neither = run(url, &["elect", &name]);
    assert_eq!((neither.code, neither.stdout.as_str()), (2, ""));
    let both = run(url, &["elect", &name, "A", "--listen"]);
    assert_eq!((both.code, both.stdout.as_str()), (2, ""));
    wait_for_count(url, &dir, 0);
}

#[tokio::test]
async fn etcd_elections() {
    let Some(url) = etcd_url("watch").await else {
        return;
    };
    elections(&url);
}

#[tokio::test]
async fn redis_elections() {
    let Some(url) = redis_url(14).await else {
        return;
    };
    elections(&url);
}

/// Writes `a/b` (twice), its neighbours `a/bc` and `a/b/c` in between, deletes `a/b`, then
/// writes it a last time; `watch --exact a/b --rev FIRST` replays `a/b`'s four events alone,
/// and with `--prev-kv` each shows the value it replaced or removed.
fn watches(url: &str) {
    let root = key_root("watch");
    let key = format!("{root}a/b");
    let longer = format!("{root}a/bc");
    let child = format!("{root}a/b/c");
    let put = |k: &str, v: &str| -> i64 {
        json(url, &["put", "--raw", k, v])["revision"]
            .as_i64()
            .unwrap()
    };
    let first = put(&key, "one");
    put(&longer, "x");
    put(&child, "y");
    put(&key, "two");
    put(&longer, "z");
    ok(url, &["rm", &key]);
    put(&child, "w");
    put(&key, "three");
    let from = first.to_string();

    let events = |extra: &[&str]| -> Vec<Value> {
        let mut args = vec!["-o", "json", "watch", "--exact", &key, "--rev", &from];
        args.extend_from_slice(extra);
        let mut watch = Background::start(url, &args);
        let events: Vec<Value> = (0..4).map(|_| watch.next_json()).collect();
        assert_eq!(watch.interrupt(), 0);
        events
    };
    let plain = events(&[]);
    let shape: Vec<(Value, Value)> = plain
        .iter()
        .map(|e| (e["event"].clone(), e["value"].clone()))
        .collect();
    assert_eq!(
        shape,
        [
            (doc!("PUT"), doc!("one")),
            (doc!("PUT"), doc!("two")),
            (doc!("DELETE"), Value::Null),
            (doc!("PUT"), doc!("three")),
        ]
    );
    for event in &plain {
        assert_eq!(event["key"], key.as_str(), "{event}");
        assert!(event.get("prev_value").is_none(), "{event}");
    }

    // `watch --key KEY` with no address is the same exact watch, as other tools spell it.
    let mut keyed = Background::start(url, &["-o", "json", "watch", "--key", &key, "--rev", &from]);
    let keyed_events: Vec<Value> = (0..4).map(|_| keyed.next_json()).collect();
    assert_eq!(keyed.interrupt(), 0);
    assert_eq!(keyed_events, plain);

    let prev: Vec<Value> = events(&["--prev-kv"])
        .iter()
        .map(|e| e["prev_value"].clone())
        .collect();
    assert_eq!(prev, [Value::Null, doc!("one"), doc!("two"), Value::Null]);

    // The table says it too.
    let mut table = Background::start(
        url,
        &["watch", "--exact", &key, "--rev", &from, "--prev-kv"],
    );
    let lines: Vec<String> = (0..4).map(|_| table.next()).collect();
    assert_eq!(table.interrupt(), 0);
    assert!(
        lines[1].contains("PUT") && lines[1].ends_with(r#"(prev "one")"#),
        "{lines:?}"
    );
    assert!(
        lines[2].contains("DELETE") && lines[2].ends_with(r#"(prev "two")"#),
        "{lines:?}"
    );
    assert!(lines[3].ends_with("(prev none)"), "{lines:?}");

    // Without --exact, the directory: every event under a/b, a/b/c's included.
    let mut dir = Background::start(url, &["-o", "json", "watch", &key, "--rev", &from]);
    let keys: Vec<Value> = (0..6).map(|_| dir.next_json()["key"].clone()).collect();
    assert_eq!(dir.interrupt(), 0);
    assert!(keys.contains(&doc!(child)), "{keys:?}");

    // Bad input: exit 2, nothing printed.
    fails(url, &["watch", "--exact", ""], 2);
    fails(url, &["watch"], 2);
    fails(url, &["watch", "--exact", &key, "--rev", "0"], 2);
}

#[tokio::test]
async fn etcd_watches() {
    let Some(url) = etcd_url("watch").await else {
        return;
    };
    watches(&url);
}

#[tokio::test]
async fn redis_watches() {
    let Some(url) = redis_url(15).await else {
        return;
    };
    watches(&url);
}

#[test]
fn redb_watches() {
    let dir = tempfile::tempdir().unwrap();
    watches(&format!(
        "redb://{}",
        dir.path().join("store.redb").display()
    ));
}

#[test]
fn sled_watches() {
    let dir = tempfile::tempdir().unwrap();
    watches(&format!("sled://{}", dir.path().join("db").display()));
}
