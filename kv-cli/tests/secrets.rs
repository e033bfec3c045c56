//! No password in any output: every path of `kvctl` that shows a store URL (an unreachable
//! store, a bad URL, the demo's summary in both formats, `--help` with `KVCTL_STORE` set,
//! refused credentials, `--trace` and `-vv`, the `kvctl ui` banner and its info) is run
//! with a password in the URL, which must appear in neither stdout nor stderr.

mod common;

use common::{Run, run};
use keyplane_tests::harness::{EtcdServer, RedisServer, http_request};
use serde_json::json;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

/// The password of the URLs: distinctive, so that any trace of it is found.
const PASSWORD: &str = "Sup3rS3cretPw";

/// Requires that neither stream of `run` shows `secret` (nor a large part of it).
fn assert_hidden(run: &Run, secret: &str, what: &str) {
    let half = &secret[..secret.len() / 2];
    for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        assert!(
            !text.contains(secret) && !text.contains(half),
            "{what}: the password is on {stream}:\n{text}"
        );
    }
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A `redis-server` that requires [`PASSWORD`], and the URL that logs in to it.
fn redis_with_password() -> Option<(RedisServer, String)> {
    let server = RedisServer::start()?;
    let client = redis::Client::open(server.url()).expect("a client");
    let mut con = client.get_connection().expect("a connection");
    let () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg(PASSWORD)
        .query(&mut con)
        .expect("CONFIG SET requirepass");
    let url = format!("redis://:{PASSWORD}@127.0.0.1:{}/0", server.port());
    Some((server, url))
}

#[test]
fn unreachable_stores_hide_the_password() {
    let port = closed_port();
    for url in [
        format!("redis://:{PASSWORD}@127.0.0.1:{port}/0"),
        format!("redis://app:{PASSWORD}@127.0.0.1:{port}/0"),
        format!("etcd://root:{PASSWORD}@127.0.0.1:{port}"),
        format!("etcd://root:{PASSWORD}@127.0.0.1:{port},127.0.0.1:{port}?namespace=a/"),
    ] {
        for args in [
            &["--timeout", "1", "get", "jxt/tenants/1/meta"][..],
            &["--timeout", "1", "--trace", "-vv", "ls", "jxt/"],
            &["--timeout", "1", "demo"],
            &["--timeout", "1", "ui"],
        ] {
            let out = run(&url, args);
            assert_eq!(out.code, 3, "{url} {args:?}: {}", out.stderr);
            assert!(out.stderr.contains("unreachable"), "{}", out.stderr);
            assert!(out.stderr.contains(":***@127.0.0.1"), "{}", out.stderr);
            assert_hidden(&out, PASSWORD, &format!("{url} {args:?}"));
        }
    }
}

#[test]
fn bad_urls_hide_the_password() {
    for url in [
        "redis:/:PW@127.0.0.1:6379",
        "redis//:PW@127.0.0.1:6379",
        "redis:PW@127.0.0.1:6379",
        "redis://:PW@127.0.0.1:6379/not-a-database",
        "etcd://root:PW@127.0.0.1:2379?no_such_option=1",
        "etcd://root:PW@127.0.0.1:2379/a/path",
        "ftp://user:PW@127.0.0.1:21",
        "mem://user:PW@x",
    ] {
        let url = url.replace("PW", PASSWORD);
        let out = run(&url, &["get", "jxt/tenants/1/meta"]);
        assert_eq!(out.code, 2, "{url}: {}", out.stderr);
        assert_hidden(&out, PASSWORD, &url);
    }
}

#[test]
fn help_names_kvctl_store_without_its_value() {
    let url = format!("redis://:{PASSWORD}@127.0.0.1:6379/0");
    for args in [&["--help"][..], &["get", "--help"], &["-h"]] {
        let out = Command::new(assert_cmd::cargo::cargo_bin("kvctl"))
            .args(args)
            .env("KVCTL_STORE", &url)
            .env("KVCTL_KEYRING", "/secret/place/keyring.json")
            .output()
            .expect("kvctl runs");
        let out = Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        assert!(out.stdout.contains("KVCTL_STORE"), "{}", out.stdout);
        assert_hidden(&out, PASSWORD, &format!("{args:?}"));
        assert!(!out.stdout.contains("/secret/place"), "{}", out.stdout);
    }
}

#[test]
fn redis_with_a_password_hides_it_everywhere() {
    let Some((server, url)) = redis_with_password() else {
        return;
    };
    // The demo's summary, in both formats, once writing and once finding the data there.
    let table = run(&url, &["demo"]);
    assert_eq!(table.code, 0, "{}", table.stderr);
    assert!(
        table
            .stdout
            .contains(&format!("store redis://:***@127.0.0.1:{}/0", server.port())),
        "{}",
        table.stdout
    );
    assert_hidden(&table, PASSWORD, "demo");
    let json = run(&url, &["-o", "json", "demo"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let summary: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    assert_eq!(
        summary["store"],
        format!("redis://:***@127.0.0.1:{}/0", server.port())
    );
    assert_hidden(&json, PASSWORD, "demo -o json");
    // Every operation traced, with debug logging on.
    for args in [
        &["--trace", "-vv", "get", "jxt/tenants/1/meta"][..],
        &["--trace", "ls", "-l", "key:"],
        &["--trace", "-o", "json", "demo"],
        &["--trace", "get", "jxt/no/such/key"],
    ] {
        let out = run(&url, args);
        assert!(out.code == 0 || out.code == 1, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("keyplane"), "traced: {}", out.stderr);
        assert_hidden(&out, PASSWORD, &format!("{args:?}"));
    }
    // Refused credentials: a wrong password, and none.
    let wrong = "Wr0ngS3cretPw";
    let out = run(
        &format!("redis://:{wrong}@127.0.0.1:{}/0", server.port()),
        &["--trace", "-vv", "get", "jxt/tenants/1/meta"],
    );
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert_hidden(&out, wrong, "wrong password");
    assert_hidden(&out, PASSWORD, "wrong password");
    let out = run(
        &format!("redis://default:{wrong}@127.0.0.1:{}/0", server.port()),
        &["demo"],
    );
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert_hidden(&out, wrong, "wrong user password");
    ui_hides_the_password(&url);
}

/// `kvctl ui`'s banner and log, and the store it names in `/api/info`.
fn ui_hides_the_password(url: &str) {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("kvctl"))
        .args(["--store", url, "ui"])
        .env_remove("KVCTL_STORE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kvctl ui starts");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut banner = String::new();
    stdout.read_line(&mut banner).expect("the banner");
    let page = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {banner:?}"));
    let (addr, token) = page
        .strip_prefix("http://")
        .and_then(|rest| rest.split_once("/?token="))
        .expect("http://ADDR/?token=TOKEN");
    let port = addr.rsplit(':').next().unwrap().parse().unwrap();
    let (status, body) = http_request(port, "GET", "/api/info", &[("X-Kvctl-Token", token)], None)
        .expect("GET /api/info");
    let body = String::from_utf8(body).unwrap();
    assert_eq!(status, 200, "{body}");
    let info: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(
        info["store"].as_str().unwrap().starts_with("redis://:***@"),
        "{info}"
    );
    let (_, tree) = http_request(
        port,
        "GET",
        "/api/tree?prefix=",
        &[("X-Kvctl-Token", token)],
        None,
    )
    .expect("GET /api/tree");
    child.kill().expect("kvctl ui stops");
    child.wait().expect("kvctl ui ends");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let out = Run {
        code: 0,
        stdout: format!("{banner}{rest}{body}{}", String::from_utf8_lossy(&tree)),
        stderr,
    };
    assert_hidden(&out, PASSWORD, "kvctl ui");
}

/// Enables etcd's authentication with user `root` and `password`, through its JSON gateway.
fn enable_etcd_auth(server: &EtcdServer, password: &str) {
    let port = server
        .endpoint()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("http://127.0.0.1:PORT");
    for (path, body) in [
        ("/v3/auth/role/add", json!({ "name": "root" })),
        (
            "/v3/auth/user/add",
            json!({ "name": "root", "password": password }),
        ),
        (
            "/v3/auth/user/grant",
            json!({ "user": "root", "role": "root" }),
        ),
        ("/v3/auth/enable", json!({})),
    ] {
        let (status, answer) =
            http_request(port, "POST", path, &[], Some(&body)).expect("etcd's gateway answers");
        assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&answer));
    }
}

#[test]
fn etcd_with_a_password_hides_it_everywhere() {
    let Some(server) = EtcdServer::start() else {
        return;
    };
    enable_etcd_auth(&server, PASSWORD);
    let host = server.endpoint().replace("http://", "");
    let url = format!("etcd://root:{PASSWORD}@{host}");
    for args in [
        &["demo"][..],
        &["-o", "json", "demo"],
        &["--trace", "-vv", "ls", "jxt/"],
    ] {
        let out = run(&url, args);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        assert_hidden(&out, PASSWORD, &format!("{args:?}"));
    }
    let demo = run(&url, &["-o", "json", "demo"]);
    let summary: serde_json::Value = serde_json::from_str(&demo.stdout).expect("JSON");
    assert_eq!(summary["store"], format!("etcd://root:***@{host}"));
    let wrong = "Wr0ngS3cretPw";
    let out = run(
        &format!("etcd://root:{wrong}@{host}"),
        &["--trace", "-vv", "get", "jxt/tenants/1/meta"],
    );
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert_hidden(&out, wrong, "wrong etcd password");
    assert_hidden(&out, PASSWORD, "wrong etcd password");
}
