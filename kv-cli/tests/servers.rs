//! `kvctl` on the harness etcd and Redis: demo twice, typed get/ls/put/rm, bad input. Each
//! test has its own etcd namespace or Redis database, so they share a server safely.

mod common;

use common::*;
use keyplane_tests::harness::{key_root, shared_etcd, shared_redis};

async fn etcd_url() -> Option<String> {
    let server = shared_etcd().await?;
    let endpoint = server.endpoint();
    let host = endpoint.strip_prefix("http://").unwrap_or(&endpoint);
    Some(format!("etcd://{host}?namespace={}", key_root("kvctl")))
}

async fn redis_url(database: u8) -> Option<String> {
    let server = shared_redis().await?;
    Some(format!("{}/{database}", server.url()))
}

#[tokio::test]
async fn etcd_demo_twice_changes_nothing() {
    let Some(url) = etcd_url().await else { return };
    demo_twice(&url, false);
}

#[tokio::test]
async fn etcd_typed_get_ls_put_rm() {
    let Some(url) = etcd_url().await else { return };
    typed_round_trip(&url);
}

#[tokio::test]
async fn etcd_bad_input_writes_nothing() {
    let Some(url) = etcd_url().await else { return };
    bad_input_writes_nothing(&url);
}

#[tokio::test]
async fn redis_demo_twice_changes_nothing() {
    let Some(url) = redis_url(1).await else {
        return;
    };
    demo_twice(&url, true);
    // What `redis-cli --scan` shows of the balancer: exactly the document's keys, with
    // nothing in front of them.
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let mut scanned = Vec::new();
    for pattern in ["key:*", "group:*"] {
        let mut cursor = 0u64;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(pattern)
                .query_async(&mut con)
                .await
                .unwrap();
            scanned.extend(keys);
            if next == 0 {
                break;
            }
            cursor = next;
        }
    }
    scanned.sort();
    let mut documented: Vec<String> = (1..=11)
        .flat_map(|id| [format!("key:{id}"), format!("key:{id}:groups")])
        .chain((1..=3).map(|g| format!("group:{g}:keys:active")))
        .collect();
    documented.sort();
    assert_eq!(scanned, documented);
}

#[tokio::test]
async fn redis_typed_get_ls_put_rm() {
    let Some(url) = redis_url(2).await else {
        return;
    };
    typed_round_trip(&url);
}

#[tokio::test]
async fn redis_bad_input_writes_nothing() {
    let Some(url) = redis_url(3).await else {
        return;
    };
    bad_input_writes_nothing(&url);
}

#[tokio::test]
async fn etcd_watch_until_interrupted() {
    let Some(url) = etcd_url().await else { return };
    watch_until_interrupted(&url);
}

#[tokio::test]
async fn redis_watch_until_interrupted() {
    let Some(url) = redis_url(4).await else {
        return;
    };
    watch_until_interrupted(&url);
}

#[tokio::test]
async fn redis_ls_shows_what_other_programs_wrote() {
    let Some(url) = redis_url(5).await else {
        return;
    };
    let root = key_root("raw");
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let (plain, set) = (format!("{root}plain"), format!("{root}set"));
    let _: () = redis::cmd("SET")
        .arg(&plain)
        .arg("v")
        .query_async(&mut con)
        .await
        .unwrap();
    let _: i64 = redis::cmd("SADD")
        .arg(&set)
        .arg("a")
        .arg("b")
        .query_async(&mut con)
        .await
        .unwrap();
    let listed = json(&url, &["ls", &root]);
    let rows: Vec<(String, Option<u64>)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["key"].as_str().unwrap().to_owned(), e["size"].as_u64()))
        .collect();
    assert_eq!(rows, [(plain, None), (set, Some(2))]);
}
