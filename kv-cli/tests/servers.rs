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
        scanned.extend(keyplane_tests::harness::redis_scan(&mut con, pattern).await);
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

/// `kvctl migrate` on data the legacy service wrote with raw Redis commands: plan, apply,
/// apply again (nothing to do, nothing written), verify, finalize.
#[tokio::test]
async fn redis_migrate_nxc_legacy_from_raw_data() {
    let Some(url) = redis_url(6).await else {
        return;
    };
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    for args in [
        &[
            "HSET",
            "nexus:config:group:WeChat:r1",
            "p_1",
            "1",
            "default",
            "p_1",
        ][..],
        &["SADD", "nexus:config:index:WeChat:r1", "p_2"],
        &[
            "SET",
            "nexus:config:WeChat:r1:p_1",
            r#"{"sub_mchid":"1900"}"#,
        ],
        &["SET", "nexus:config:WeChat:r1:p_2", "ciphertext"],
    ] {
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        let _: redis::Value = cmd.query_async(&mut con).await.unwrap();
    }
    let listed = json(&url, &["migrate", "list"]);
    assert_eq!(listed[1]["name"], "nxc-legacy");
    assert_eq!(listed[1]["phase"], "new");
    let plan = json(&url, &["migrate", "plan", "nxc-legacy"]);
    assert_eq!(
        (plan["old"].as_u64(), plan["created"].as_u64()),
        (Some(4), Some(3)),
        "{plan}"
    );
    assert_eq!(plan["unmappable"][0]["key"], "nexus:config:WeChat:r1:p_2");
    fails(&url, &["migrate", "verify", "nxc-legacy"], 6);

    let applied = json(&url, &["migrate", "apply", "nxc-legacy"]);
    assert_eq!(applied["created"].as_u64(), Some(3), "{applied}");
    let members: Vec<String> = redis::cmd("SMEMBERS")
        .arg("nxc:map:r1:WeChat")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(members.len(), 2);
    let before = snapshot(&url);
    let again = ok(&url, &["migrate", "apply", "nxc-legacy"]);
    assert!(again.contains("nothing to do"), "{again}");
    assert_eq!(snapshot(&url), before, "a second apply writes nothing");

    // The ciphertext cannot be mapped: verify says so, and finalize keeps it.
    fails(&url, &["migrate", "verify", "nxc-legacy"], 6);
    let finalized = json(&url, &["migrate", "finalize", "nxc-legacy"]);
    assert_eq!(finalized["deleted"].as_u64(), Some(3), "{finalized}");
    assert_eq!(finalized["kept"][0], "nexus:config:WeChat:r1:p_2");
    let left: i64 = redis::cmd("EXISTS")
        .arg("nexus:config:group:WeChat:r1")
        .arg("nexus:config:WeChat:r1:p_2")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(left, 1, "only the unmappable config stays");
    fails(&url, &["migrate", "rollback", "nxc-legacy"], 2);
    fails(&url, &["migrate", "plan", "no-such"], 2);
}

/// `kvctl lint` on Redis: `demo`'s data is clean (exit 0); defects planted with raw
/// commands, as other programs leave them, are each found once (exit 6), and `--fix`
/// repairs the safe ones.
#[tokio::test]
async fn redis_lint_finds_planted_defects() {
    let Some(url) = redis_url(7).await else {
        return;
    };
    ok(&url, &["demo"]);
    ok(&url, &["lint"]);
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    for args in [
        &["SET", "jxt/tenants/1/stray", "x"][..],
        &[
            "SET",
            "jxt/tenants/_index/by-code/ghost",
            r#"{"id":999,"code":"ghost","name":"g"}"#,
        ],
        &[
            "SET",
            "jxt/tenants/77/meta",
            r#"{"id":1,"code":"c77","name":"n","status":"active","billingPlan":"x"}"#,
        ],
        &["SET", "jxt/tenants/1/storage", "not json"],
        &["SET", "nxc:inst:shop9:Alipay:p9", "plain"],
        &["SADD", "nxc:map:shop9:Alipay", "p1"],
        &["SET", "nxc:map:shop9:Alipay:default", "p2"],
        &["RPUSH", "group:1:keys:active", "99"],
        &["SREM", "key:2:groups", "1"],
        // The old layouts: still there, waiting for their migrations.
        &["SET", "jxt//tenants/1/meta", r#"{"id":1}"#],
        &["HSET", "nexus:config:group:WeChat:r1", "p_1", "1"],
    ] {
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        let _: redis::Value = cmd.query_async(&mut con).await.unwrap();
    }
    let run = run(&url, &["-o", "json", "lint"]);
    assert_eq!(run.code, 6, "{}", run.stderr);
    let findings: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let mut rules: Vec<(String, String)> = findings
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_owned(),
                f["key"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    rules.sort();
    let expected = [
        ("dangling-index", "jxt/tenants/_index/by-code/ghost"),
        ("default-not-member", "nxc:map:shop9:Alipay:default"),
        ("key-value-mismatch", "jxt/tenants/77/meta"),
        ("legacy-layout", "jxt//tenants/1/meta"),
        ("legacy-layout", "nexus:config:group:WeChat:r1"),
        ("list-entry-without-object", "group:1:keys:active"),
        ("member-without-instance", "nxc:map:shop9:Alipay"),
        ("reverse-index-disagrees", "key:2:groups"),
        ("undecodable-value", "jxt/tenants/1/storage"),
        ("unknown-key", "jxt/tenants/1/stray"),
        ("wrong-kind", "nxc:inst:shop9:Alipay:p9"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(r, k)| (r.to_string(), k.to_string()))
        .collect();
    assert_eq!(rules, expected);

    let fixed = run_fix(&url);
    assert_eq!(
        fixed, 2,
        "the dangling entry and the missing reverse-index member"
    );
    let ghost: bool = redis::cmd("EXISTS")
        .arg("jxt/tenants/_index/by-code/ghost")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(!ghost);
    let member: bool = redis::cmd("SISMEMBER")
        .arg("key:2:groups")
        .arg("1")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(member);
}

/// Runs `lint --fix` (exit 6: unsafe findings remain) and returns how many it fixed.
fn run_fix(url: &str) -> usize {
    let run = run(url, &["-o", "json", "lint", "--fix"]);
    assert_eq!(run.code, 6, "{}", run.stderr);
    let findings: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    findings
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["fixed"] == true)
        .count()
}
