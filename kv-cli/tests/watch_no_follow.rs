//! `kvctl watch --no-follow` on Redis: another program's write under the watched directory
//! is not reported, the server's `notify-keyspace-events` is left as it was, and the writes
//! made through kvctl are; without the flag the same foreign write is reported.

mod common;

use common::background::{Background, raw};
use common::*;
use keyplane_tests::harness::{RedisServer, key_root, redis_connection};
use redis::aio::MultiplexedConnection;
use std::time::{Duration, Instant};

/// Longer than the follower's full scan of the directory (2 s) with room to spare: a
/// follower, had one been started, would have reported the foreign write by then.
const QUIET: Duration = Duration::from_secs(6);

/// The server's `notify-keyspace-events` classes.
async fn notify_classes(con: &MultiplexedConnection) -> String {
    let value = raw(
        con,
        redis::cmd("CONFIG")
            .arg("GET")
            .arg("notify-keyspace-events"),
    )
    .await;
    let pair: Vec<String> = redis::from_redis_value(value).expect("a name and a value");
    pair.get(1).cloned().unwrap_or_default()
}

/// The key of a JSON event line.
fn key_of(line: &str) -> String {
    let event: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}"));
    event["key"].as_str().expect("a key").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_watch_no_follow_reports_only_library_writes() {
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
            .arg(""),
    )
    .await;
    let root = key_root("nofollow");
    let mine = format!("{root}mine");
    let foreign = format!("{root}foreign");
    let after = format!("{root}after");

    // A write through kvctl, replayed from its revision: the watch is running.
    let put = json(&url, &["put", "--raw", &mine, "1"]);
    let from = put["revision"].as_i64().expect("a revision").to_string();
    let mut watch = Background::start(
        &url,
        &["-o", "json", "watch", "--no-follow", &root, "--rev", &from],
    );
    assert_eq!(key_of(&watch.next()), mine);
    raw(&con, redis::cmd("SET").arg(&foreign).arg("f")).await;
    let deadline = Instant::now() + QUIET;
    while Instant::now() < deadline {
        let printed = watch.printed();
        assert!(printed.is_empty(), "reported with --no-follow: {printed:?}");
        std::thread::park_timeout(Duration::from_millis(100));
    }
    ok(&url, &["put", "--raw", &after, "2"]);
    assert_eq!(key_of(&watch.next()), after, "the next event is kvctl's");
    assert_eq!(watch.interrupt(), 0);
    assert_eq!(
        notify_classes(&con).await,
        "",
        "the server's config is unchanged"
    );

    // Without --no-follow, another program's write is reported.
    let mut followed = Background::start(&url, &["-o", "json", "watch", &root]);
    let second = format!("{root}foreign2");
    raw(&con, redis::cmd("SET").arg(&second).arg("g")).await;
    let mut seen = Vec::new();
    while !seen.contains(&second) {
        seen.push(key_of(&followed.next()));
    }
    assert_eq!(followed.interrupt(), 0);
}
