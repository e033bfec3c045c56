//! `kvctl` on the harness etcd and Redis: demo twice, typed get/ls/put/rm, bad input. Each
//! test has its own etcd namespace or Redis database, so they share a server safely.

mod common;

use common::*;
use keyplane_tests::harness::{
    key_root, redis_commands, redis_connection, shared_etcd, shared_redis,
};

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
    let mut con = redis_connection(url.as_str()).await;
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
    let mut con = redis_connection(url.as_str()).await;
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
    let mut con = redis_connection(url.as_str()).await;
    redis_commands(
        &mut con,
        &[
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
        ],
    )
    .await;
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
    let mut con = redis_connection(url.as_str()).await;
    redis_commands(
        &mut con,
        &[
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
        ],
    )
    .await;
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

/// `kvctl demo` on the harness's Redis Cluster (3 masters, 3 replicas), twice: the Redis
/// systems in their grouped layout (nxc by realm and profile, the balancer as one group
/// under `{demo}:`), the etcd systems skipped, the tree read across groups; the second run
/// writes nothing. A `SCAN` of each master (what `redis-cli -c --scan` shows) finds every
/// key of a group in its tag's slot, on the master serving it, beside the group's own
/// `__kv:{tag}:` keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_demo_shows_the_grouped_layout() {
    use keyplane::raw::{redis_hash_tag, redis_key_slot};
    let Some(cluster) = keyplane_tests::harness::shared_redis_cluster().await else {
        return;
    };
    let url = cluster.url();
    let first = json(&url, &["demo"]);
    let steps = first["steps"].as_array().expect("steps");
    let written: Vec<(&str, bool)> = steps
        .iter()
        .map(|s| (s["schema"].as_str().unwrap(), s["written"] == true))
        .collect();
    assert_eq!(
        written,
        [
            ("tenant", false),
            ("registry", false),
            ("cronix", false),
            ("nxc", true),
            ("balancer", true)
        ],
        "{first}"
    );
    assert!(
        first["revision"].as_i64() > first["revision_before"].as_i64(),
        "{first}"
    );
    let keys: Vec<(String, String)> = first["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["key"].as_str().unwrap().to_owned(),
                k["type"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    for (key, ty) in [
        (
            "nxc:map:{test_realm}:Alipay:default",
            "nxc-cluster.default-profile",
        ),
        ("nxc:pool:Alipay:{app_001}", "nxc-cluster.pool"),
        ("nxc:pool:Alipay:{app_002}", "nxc-cluster.pool"),
    ] {
        assert!(
            keys.contains(&(key.to_owned(), ty.to_owned())),
            "{key} {ty} in {keys:?}"
        );
    }
    assert_eq!(
        keys.iter()
            .filter(|(k, _)| k.starts_with("{demo}:"))
            .count(),
        25,
        "{keys:?}"
    );

    let second = json(&url, &["demo"]);
    assert_eq!(second["revision"], second["revision_before"], "{second}");
    assert_eq!(second["revision"], first["revision"], "{second}");
    assert_nothing_written(&second);
    // The typed tree lists across groups, and typed reads name the cluster variant.
    let text = ok(&url, &["demo"]);
    assert!(text.contains("nothing changed"), "{text}");
    let marker = ok(
        &url,
        &[
            "get",
            "nxc-cluster.default-profile",
            "realm=test_realm",
            "provider=Alipay",
        ],
    );
    assert!(marker.contains("app_001"), "{marker}");

    // Each master holds whole groups: every key in its tag's slot, beside its group's keys.
    let mut seen = Vec::new();
    for node in &cluster.node_urls()[..3] {
        let mut con = redis_connection(node).await;
        seen.extend(keyplane_tests::harness::redis_scan(&mut con, "*").await);
    }
    for expected in [
        "nxc:map:{test_realm}:Alipay",
        "nxc:map:{test_realm}:Alipay:default",
        "nxc:inst:{test_realm}:Alipay:app_001",
        "nxc:inst:{test_realm}:Alipay:app_002",
        "nxc:pool:Alipay:{app_001}",
        "{demo}:key:4",
        "{demo}:key:4:groups",
        "{demo}:group:2:keys:active",
        "__kv:{test_realm}:rev",
        "__kv:{test_realm}:log",
        "__kv:{app_001}:ixd",
        "__kv:{demo}:cidx",
        "__kv:groups",
    ] {
        assert!(seen.iter().any(|k| k == expected), "{expected} in {seen:?}");
    }
    for key in seen
        .iter()
        .filter(|k| k.contains("test_realm") || k.contains("{demo}"))
    {
        let tag = redis_hash_tag(key.as_bytes()).expect("a tagged key");
        assert!(tag == b"test_realm" || tag == b"demo", "{key}");
        assert_eq!(redis_key_slot(key.as_bytes()), redis_key_slot(tag), "{key}");
    }
}

/// `kvctl watch` across co-location groups on Redis Cluster: groups that appear while it
/// runs are followed, and each event names its group and the group's revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_watch_follows_new_groups() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::sync::atomic::{AtomicBool, Ordering};
    let Some(cluster) = keyplane_tests::harness::shared_redis_cluster().await else {
        return;
    };
    let url = cluster.url();
    let run = uuid::Uuid::new_v4().simple().to_string();
    let prefix = format!("cw{run}/");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("kvctl"))
        .args(["--store", &url, "-o", "json", "watch", &prefix])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kvctl starts");
    // Until the watch shows one: a put in a new group each time (the watch may not be open
    // for the first ones).
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, url, prefix, run) = (stop.clone(), url.clone(), prefix.clone(), run.clone());
        std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let key = format!("{prefix}{{{run}-{i}}}/k");
                ok(&url, &["put", "--raw", &key, "v"]);
                i += 1;
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        })
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let line = rx.recv_timeout(std::time::Duration::from_secs(60));
    stop.store(true, Ordering::Relaxed);
    let wrote = writer.join();
    let line = match line {
        Ok(line) => line.expect("readable stdout"),
        Err(e) => {
            let _ = child.kill();
            panic!("no event within a minute ({e}); the writer: {wrote:?}");
        }
    };
    wrote.unwrap();
    let event: serde_json::Value = serde_json::from_str(&line).expect("one JSON event per line");
    assert_eq!(event["event"], "PUT", "{event}");
    let group = event["group"].as_str().expect("the event names its group");
    assert!(group.starts_with(&format!("{run}-")), "{event}");
    assert_eq!(
        event["revision"], 1,
        "a new group's first revision: {event}"
    );
    assert_eq!(event["key"], format!("{prefix}{{{group}}}/k"), "{event}");
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    assert_eq!(child.wait().expect("kvctl ends").code(), Some(0));
}

/// `kvctl` through `redis+sentinel://`: it writes to the master the sentinels name, and
/// after a failover it reads what was written and writes to the promoted replica.
#[test]
fn redis_sentinel_url_before_and_after_a_failover() {
    let Some(deployment) = keyplane_tests::harness::RedisSentinel::start() else {
        return;
    };
    let url = deployment.url();
    typed_round_trip(&url);
    ok(&url, &["put", "tenant.meta", "id=2", &tenant_meta(2)]);
    let old = deployment.master_port();
    let new = deployment.fail_over();
    assert_ne!(old, new);
    deployment.wait_for_replicas_of(new);
    assert_eq!(
        json(&url, &["get", "tenant.meta", "id=2"])["value"]["code"],
        "t2"
    );
    assert_eq!(
        json(&url, &["get", "tenant.meta", "id=1"])["value"]["code"],
        "t1"
    );
    ok(&url, &["put", "tenant.meta", "id=3", &tenant_meta(3)]);
    assert_eq!(
        listed_keys(&url, &["tenant.meta", "id=3"]),
        ["jxt/tenants/3/meta"]
    );
}
