//! `kvctl` on a Redis that other programs write too: `ls` and `export` list exactly what
//! Redis holds after another program deletes or retypes keys the store tracks, and `watch`
//! follows another program's writes, through keyspace notifications where the server sends
//! them and through the periodic scan where it does not. Each test runs its own server.

mod common;

use common::background::raw;
use common::*;
use keyplane_tests::harness::{RedisServer, redis_connection};
use redis::aio::MultiplexedConnection;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Bounds every wait for kvctl's output against a hang; no assertion is on timing.
const HANG: Duration = Duration::from_secs(60);

/// The raw key of tenant `id`'s meta, as `kvctl ls` names it.
fn meta_key(url: &str, id: u64) -> String {
    let suffix = format!("/{id}/meta");
    listed_keys(url, &["jxt/"])
        .into_iter()
        .find(|k| k.ends_with(&suffix))
        .unwrap_or_else(|| panic!("no key ends with {suffix}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ls_and_export_list_what_redis_holds_after_foreign_deletes() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let url = server.url();
    for id in 1..=4 {
        ok(
            &url,
            &["put", "tenant.meta", &format!("id={id}"), &tenant_meta(id)],
        );
    }
    let [k1, k2, k3, k4] = [1, 2, 3, 4].map(|id| meta_key(&url, id));
    let con = redis_connection(&url).await;
    raw(&con, redis::cmd("DEL").arg(&k2)).await;
    raw(&con, redis::cmd("DEL").arg(&k3)).await;
    raw(&con, redis::cmd("SADD").arg(&k3).arg("a").arg("b")).await;

    let listed = json(&url, &["ls", "-l", "jxt/"]);
    let rows: Vec<(String, String)> = listed
        .as_array()
        .expect("ls prints an array")
        .iter()
        .map(|row| {
            let key = row["key"].as_str().unwrap().to_owned();
            let what = match row["kind"].as_str() {
                Some(kind) => format!("{kind} of {}", row["size"]),
                None => {
                    assert!(
                        !row["value"].is_null() && row["value"] != "",
                        "{key} listed without its value: {row}"
                    );
                    "value".to_owned()
                }
            };
            (key, what)
        })
        .collect();
    assert_eq!(
        rows,
        [
            (k1.clone(), "value".to_owned()),
            (k3.clone(), "set of 2".to_owned()),
            (k4.clone(), "value".to_owned()),
        ]
    );

    let exported = ok(&url, &["export", "jxt/"]);
    let lines: Vec<serde_json::Value> = exported
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    let keys: Vec<&str> = lines.iter().map(|l| l["key"].as_str().unwrap()).collect();
    assert_eq!(keys, [k1.as_str(), k3.as_str(), k4.as_str()]);
    assert_eq!(lines[1]["kind"], "set");
    assert_eq!(lines[1]["members"], serde_json::json!(["a", "b"]));
    for line in [&lines[0], &lines[2]] {
        assert_eq!(line["kind"], "value");
        let value = line["value"].as_str().expect("a text value");
        assert!(
            value.contains("\"status\""),
            "a tenant meta document: {value}"
        );
    }
    assert!(!exported.contains(&k2), "the deleted key is not exported");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_follows_foreign_writes_with_keyspace_notifications() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let url = server.url();
    let con = redis_connection(&url).await;
    raw(
        &con,
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("notify-keyspace-events")
            .arg("KA"),
    )
    .await;
    let delay = foreign_write_delay(&url, &con, &["tenant.meta", "id=11"], 11).await;
    println!("kvctl watch: another program's SET shown after {delay:?} (keyspace notifications)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_follows_foreign_writes_by_scanning_without_notifications() {
    // Notifications off, and a user that may not turn them on: only the scan remains.
    let Some(server) = RedisServer::start() else {
        return;
    };
    let url = server.user_without_notifications().await;
    let admin = redis_connection(&server.url()).await;
    let delay = foreign_write_delay(&url, &admin, &["jxt/"], 12).await;
    println!("kvctl watch: another program's SET shown after {delay:?} (periodic scan)");
    let flags = raw(
        &admin,
        redis::cmd("CONFIG")
            .arg("GET")
            .arg("notify-keyspace-events"),
    )
    .await;
    assert_eq!(
        redis::from_redis_value::<Vec<String>>(flags).unwrap()[1],
        "",
        "kvctl could not and did not turn notifications on"
    );
}

/// Starts `kvctl -o json watch ADDRESS`, writes tenant `id`'s meta with a raw `SET` until
/// the watch shows one (the watch and its reconciler are then running), then writes it once
/// more with a new value and returns how long that value took to appear.
async fn foreign_write_delay(
    url: &str,
    con: &MultiplexedConnection,
    address: &[&str],
    id: u64,
) -> Duration {
    ok(
        url,
        &["put", "tenant.meta", &format!("id={id}"), &tenant_meta(id)],
    );
    let key = meta_key(url, id);
    let mut watch = Watch::start(url, address);
    let value = |name: &str| {
        format!(
            r#"{{"id":{id},"code":"t{id}","name":"{name}","status":"active","billingPlan":"basic"}}"#
        )
    };
    let started = Instant::now();
    let mut round = 0;
    loop {
        round += 1;
        raw(
            con,
            redis::cmd("SET")
                .arg(&key)
                .arg(value(&format!("warm-up {round}"))),
        )
        .await;
        if watch.line_within(Duration::from_millis(500)).is_some() {
            break;
        }
        assert!(
            started.elapsed() < HANG,
            "kvctl watch never showed a foreign write"
        );
    }
    // Whatever else the warm-up produced arrives before the measured write's event.
    let written = Instant::now();
    raw(con, redis::cmd("SET").arg(&key).arg(value("measured"))).await;
    loop {
        let line = watch
            .line_within(HANG.saturating_sub(written.elapsed()))
            .unwrap_or_else(|| panic!("the measured write never appeared within {HANG:?}"));
        if line.contains("measured") {
            let delay = written.elapsed();
            let event: serde_json::Value = serde_json::from_str(&line).unwrap();
            assert_eq!(event["event"], "PUT", "{line}");
            assert_eq!(event["key"], key.as_str());
            assert_eq!(event["type"], "tenant.meta");
            assert_eq!(event["fields"]["id"], id.to_string());
            return delay;
        }
    }
}

/// A running `kvctl watch`, its stdout read line by line on a thread of its own.
struct Watch {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Watch {
    fn start(url: &str, address: &[&str]) -> Self {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("kvctl"))
            .env_remove("KVCTL_STORE")
            .args(["--store", url, "-o", "json", "watch"])
            .args(address)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("kvctl starts");
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        Watch { child, lines }
    }

    /// The next line of output, waiting at most `wait`.
    fn line_within(&mut self, wait: Duration) -> Option<String> {
        match self.lines.recv_timeout(wait) {
            Ok(line) => Some(line),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                panic!("kvctl watch ended: {:?}", self.child.try_wait())
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
