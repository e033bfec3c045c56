//! `kvctl` over balancer key objects another program wrote on Redis with raw commands, with
//! statuses beyond the document's examples: reads show them as written, and `kvctl lint`
//! reports them (exit 6) as findings, next to a listed key that is not active and an object
//! missing its status, while a clean key yields nothing.

mod common;

use common::*;
use keyplane_tests::harness::{redis_commands, redis_connection, shared_redis};

#[tokio::test]
async fn lint_reports_statuses_the_balancer_does_not_know() {
    let Some(server) = shared_redis().await else {
        return;
    };
    let url = format!("{}/4", server.url());
    let mut con = redis_connection(url.as_str()).await;
    redis_commands(
        &mut con,
        &[
            &["HSET", "key:50", "api_key", "sk-50", "status", "suspended"][..],
            &["SADD", "key:50:groups", "1"],
            &["HSET", "key:51", "api_key", "sk-51", "status", "paused"],
            &["SADD", "key:51:groups", "2"],
            &["RPUSH", "group:2:keys:active", "51"],
            &["HSET", "key:52", "api_key", "sk-52"],
            &["HSET", "key:53", "api_key", "sk-53", "status", "active"],
            &["SADD", "key:53:groups", "3"],
            &["RPUSH", "group:3:keys:active", "53"],
        ],
    )
    .await;

    // Read as written.
    let got = json(&url, &["get", "key:50"]);
    assert_eq!(got["type"], "balancer.key-object", "{got}");
    assert!(got.to_string().contains("suspended"), "{got}");

    let run = run(&url, &["-o", "json", "lint"]);
    assert_eq!(run.code, 6, "{}", run.stderr);
    let findings: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let mut rules: Vec<(String, String)> = findings
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            assert_eq!(f["fixable"], false, "{f}");
            (
                f["rule"].as_str().unwrap().to_owned(),
                f["key"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    rules.sort();
    let expected: Vec<(String, String)> = [
        ("incomplete-key-object", "key:52"),
        ("list-entry-not-active", "group:2:keys:active"),
        ("unknown-key-status", "key:50"),
        ("unknown-key-status", "key:51"),
    ]
    .iter()
    .map(|(r, k)| (r.to_string(), k.to_string()))
    .collect();
    assert_eq!(rules, expected, "{findings}");
    let text = run_table(&url);
    assert!(
        text.contains(
            "unknown-key-status: status \"suspended\" is neither `active` nor `disabled`"
        ),
        "{text}"
    );
    assert!(text.contains("4 findings, 0 fixed, 4 left"), "{text}");
    // Nothing was changed: the raw object keeps its bytes.
    let fields: std::collections::BTreeMap<String, String> = redis::cmd("HGETALL")
        .arg("key:50")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(fields["status"], "suspended");
}

/// `kvctl lint` in the table format (exit 6), returning stdout.
fn run_table(url: &str) -> String {
    let run = run(url, &["lint"]);
    assert_eq!(run.code, 6, "{}", run.stderr);
    run.stdout
}
