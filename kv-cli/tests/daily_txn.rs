//! `kvctl txn` on etcd and Redis, as `etcdctl txn`: compares on mod revision, version, value
//! and lease; puts (leased too), deletes and gets, prefixed or not, from stdin or a file;
//! SUCCESS or FAILURE with each request's result, and `-o json`; typed puts checked; and
//! malformed input refused with exit code 2, naming its line, with nothing written.

mod common;

use common::background::{etcd_url, redis_url};
use common::*;
use keyplane_tests::harness::key_root;

/// `kvctl txn` with `input` on stdin (and `args` before it).
fn txn(url: &str, args: &[&str], input: &str) -> Run {
    let mut cmd = kvctl(url);
    cmd.args(args).arg("txn").write_stdin(input.to_owned());
    outcome(&mut cmd)
}

/// A successful `kvctl txn`'s stdout.
fn txn_ok(url: &str, args: &[&str], input: &str) -> String {
    let done = txn(url, args, input);
    assert_eq!(done.code, 0, "{input}: {}", done.stderr);
    done.stdout
}

/// `s` as a double-quoted string of a txn line.
fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn transactions(url: &str) {
    let root = key_root("txn");
    let (a, b, c) = (format!("{root}a"), format!("{root}b"), format!("{root}c"));
    // Create once: the second run takes the failure branch and reads the key.
    let create = format!("mod(\"{a}\") = \"0\"\n\nput {a} \"first value\"\nput {b} 2\n\nget {a}\n");
    assert_eq!(txn_ok(url, &[], &create), "SUCCESS\n\nOK\n\nOK\n");
    assert_eq!(
        txn_ok(url, &[], &create),
        format!("FAILURE\n\n{a}\nfirst value\n")
    );

    // Value and version compares; del, put and get --prefix (read after the writes).
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("txn");
    std::fs::write(
        &file,
        format!(
            "value(\"{a}\") = \"first value\"\nversion(\"{b}\") > \"0\"\n\n\
             del {b}\nput {c} x\nget --prefix {root}\n\n"
        ),
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let doc = json(url, &["txn", "-f", file]);
    assert_eq!(doc["succeeded"], true, "{doc}");
    assert!(doc["revision"].as_i64().is_some_and(|r| r > 0), "{doc}");
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results[0]["op"], "del");
    assert_eq!(results[0]["deleted"], 1);
    assert_eq!(results[1]["op"], "put");
    let kvs: Vec<(&str, &serde_json::Value)> = results[2]["kvs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["key"].as_str().unwrap(), &e["value"]))
        .collect();
    assert_eq!(
        kvs,
        [
            (a.as_str(), &serde_json::json!("first value")),
            (c.as_str(), &serde_json::json!("x"))
        ]
    );
    // The same file again: b is gone (version 0), so the empty failure branch runs.
    assert_eq!(ok(url, &["txn", "--file", file]), "FAILURE\n");

    // A leased put, and a compare on the lease (hex, as `lease grant` prints it).
    let granted = ok(url, &["lease", "grant", "60"]);
    let id = granted.split_whitespace().nth(1).unwrap().to_owned();
    let leased = format!("\nput --lease={id} {root}l v\n\n");
    assert_eq!(txn_ok(url, &[], &leased), "SUCCESS\n\nOK\n");
    let on_lease = format!("lease(\"{root}l\") = \"{id}\"\n\ndel --prefix {root}\n\n");
    assert_eq!(txn_ok(url, &[], &on_lease), "SUCCESS\n\n3\n");
    assert_eq!(ok(url, &["ls", &root, "--count"]).trim(), "0");

    // A typed key: its value is checked, a bad one refused before anything is written.
    let meta = quote(&tenant_meta(7));
    let typed = format!("\nput {root}x 1\nput jxt/tenants/7/meta {meta}\n\n");
    assert_eq!(txn_ok(url, &[], &typed), "SUCCESS\n\nOK\n\nOK\n");
    assert_eq!(
        json(url, &["get", "tenant.meta", "id=7"])["value"]["code"],
        "t7"
    );
    let before = snapshot(url);
    let refused = txn(
        url,
        &[],
        &format!("\nput {root}y 1\nput jxt/tenants/8/meta \"not json\"\n\n"),
    );
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.starts_with("kvctl: line 3: invalid value"),
        "{}",
        refused.stderr
    );
    assert_eq!(snapshot(url), before);
}

/// Malformed input: exit code 2, one line naming the line, nothing printed or written.
fn malformed(url: &str) {
    let root = key_root("txn-bad");
    ok(url, &["put", "--raw", &format!("{root}a"), "1"]);
    let before = snapshot(url);
    let cases = [
        (
            format!("mod(\"{root}a\") >> \"0\"\n\nput {root}a 2\n\n"),
            Some(1),
        ),
        (
            format!("mod(\"{root}a\" = \"0\"\n\nput {root}a 2\n\n"),
            Some(1),
        ),
        (
            format!("version(\"{root}a\") = \"one\"\n\nput {root}a 2\n\n"),
            Some(1),
        ),
        (format!("\nput {root}a 2\nput {root}b\n\n"), Some(3)),
        (format!("\nput {root}a 2\nfrob {root}a\n\n"), Some(3)),
        (format!("\nput {root}a 2\nput \"{root}b 3\n\n"), Some(3)),
        (
            format!("\nput {root}a 2\nput --lease=xyz {root}b 3\n\n"),
            Some(3),
        ),
        (format!("\nget --prefix {root}\nput {root}a 2\n\n"), Some(2)),
        (format!("\nput {root}a 2\n\n\nput {root}b 3\n"), Some(5)),
        (format!("\nput {root}\\q 2\n\n"), Some(2)),
        (String::new(), None),
        ("\n\n\n".to_owned(), None),
    ];
    for (input, line) in cases {
        let done = txn(url, &[], &input);
        assert_eq!(done.code, 2, "{input:?}: {} {}", done.stdout, done.stderr);
        assert_eq!(done.stdout, "", "{input:?}");
        assert_eq!(done.stderr.trim_end().lines().count(), 1, "{}", done.stderr);
        if let Some(line) = line {
            assert!(
                done.stderr.starts_with(&format!("kvctl: line {line}: ")),
                "{input:?}: {}",
                done.stderr
            );
        }
    }
    fails(url, &["txn", "-f", "/nonexistent/txn"], 2);
    assert_eq!(snapshot(url), before);
}

#[tokio::test]
async fn etcd_transactions() {
    let Some(url) = etcd_url("txn").await else {
        return;
    };
    transactions(&url);
    malformed(&url);
}

#[tokio::test]
async fn redis_transactions() {
    let Some(url) = redis_url(2).await else {
        return;
    };
    transactions(&url);
    malformed(&url);
}
