//! How `kvctl` reaches its store: the connection flags (`--cacert`, `--cert`, `--key`,
//! `--user`, `--connect-timeout`) as the store URL's parameters, named stores and
//! `default_store` in the config file, the notice of writes to the local default store, and
//! a password that never shows.

mod common;

use common::*;
use keyplane_tests::harness::{TestCerts, TlsEtcd, TlsRedis, key_root, shared_etcd, shared_redis};
use std::path::Path;
use std::time::{Duration, Instant};

/// A password no output may hold.
const PASSWORD: &str = "Pw-8c1e0f+s3cr&t";

/// A loopback port that accepts connections (the kernel completes them) and never answers.
fn silent_port() -> std::net::TcpListener {
    std::net::TcpListener::bind("127.0.0.1:0").expect("a listener")
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a listener");
    listener.local_addr().expect("its address").port()
}

/// The config file `text` in `dir`, for `KVCTL_CONFIG`.
fn config(dir: &Path, text: &str) -> std::path::PathBuf {
    let path = dir.join("config.toml");
    std::fs::write(&path, text).expect("the config file is written");
    path
}

#[test]
fn connect_timeout_bounds_a_store_that_never_answers() {
    let listener = silent_port();
    let port = listener.local_addr().unwrap().port();
    let url = format!("redis://127.0.0.1:{port}/0");
    let started = Instant::now();
    let run = outcome(kvctl(&url).args(["--connect-timeout", "500ms", "get", "k"]));
    let took = started.elapsed();
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("unreachable"), "{}", run.stderr);
    // The default (3 s) would take longer than this.
    assert!(took < Duration::from_millis(2500), "took {took:?}");
    drop(listener);

    // A closed port fails at once, flag or not.
    let url = format!("redis://127.0.0.1:{}/0", closed_port());
    let started = Instant::now();
    let run = outcome(kvctl(&url).args(["--connect-timeout", "1s", "get", "k"]));
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(started.elapsed() < Duration::from_secs(5));

    // A duration needs its unit.
    let run = outcome(kvctl(&url).args(["--connect-timeout", "3", "get", "k"]));
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("3s"), "{}", run.stderr);
}

#[test]
fn flags_become_the_urls_parameters() {
    let certs = TestCerts::new();
    let path = |name: &str| certs.path(name).display().to_string();
    let url = format!("rediss://127.0.0.1:{}/0", closed_port());
    let flags = [
        "--cacert",
        &path("ca.pem"),
        "--cert",
        &path("client.pem"),
        "--key",
        &path("client-key.pem"),
        "--user",
        "alice",
        "--connect-timeout",
        "2s",
    ];
    let run = outcome(
        kvctl(&url)
            .env("KVCTL_PASSWORD", PASSWORD)
            .args(flags)
            .args(["-vv", "get", "k"]),
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
    // The store is named with every parameter, the password hidden.
    let ca = path("ca.pem").replace(' ', "%20");
    for shown in [
        format!("?ca={ca}&"),
        "&user=alice&".to_owned(),
        "&connect_timeout=2s".to_owned(),
    ] {
        assert!(run.stderr.contains(&shown), "{shown}: {}", run.stderr);
    }
    assert!(!run.stderr.contains("Pw-8c1e0f"), "{}", run.stderr);
    assert!(!run.stdout.contains("Pw-8c1e0f"), "{}", run.stdout);

    // A parameter the URL has already is refused, not doubled.
    let with_ca = format!("{url}?ca=/etc/ca.pem");
    let stderr = fails(&with_ca, &["--cacert", &path("ca.pem"), "get", "k"], 2);
    assert!(stderr.contains("`ca=` already"), "{stderr}");
    // So is a password in the URL beside --user.
    let with_password = format!("{url}?password={PASSWORD}");
    let stderr = fails(&with_password, &["--user", "alice", "get", "k"], 2);
    assert!(!stderr.contains("Pw-8c1e0f"), "{stderr}");
    // A certificate needs its key; a file must be there.
    let stderr = fails(&url, &["--cert", &path("client.pem"), "get", "k"], 2);
    assert!(stderr.contains("--key"), "{stderr}");
    let stderr = fails(&url, &["--cacert", "/nonexistent/ca.pem", "get", "k"], 2);
    assert!(stderr.contains("/nonexistent/ca.pem"), "{stderr}");
    // A local store takes none of them.
    let stderr = fails("mem://", &["--user", "alice", "get", "k"], 2);
    assert!(
        stderr.contains("--user applies to etcd and Redis"),
        "{stderr}"
    );
}

#[test]
fn etcd_over_tls_with_a_client_certificate() {
    let certs = TestCerts::new();
    let Some(server) = TlsEtcd::start(&certs) else {
        return;
    };
    let url = format!(
        "etcd://{}?namespace={}",
        server.endpoint(),
        key_root("kvctl-tls")
    );
    // etcd's refusal is a connection that never comes up: exit code 3.
    client_certificate_required(&url, &certs, Some(3));
}

#[test]
fn redis_over_tls_with_a_client_certificate() {
    let certs = TestCerts::new();
    let Some(server) = TlsRedis::start(&certs) else {
        return;
    };
    client_certificate_required(&format!("{}/5", server.url()), &certs, None);
}

/// `kvctl --cacert .. --cert .. --key ..` writes and reads on a server that requires the
/// client certificate; without it, or with another CA, it fails (with `refused_code` when
/// given) and reads nothing.
fn client_certificate_required(url: &str, certs: &TestCerts, refused_code: Option<i32>) {
    let path = |name: &str| certs.path(name).display().to_string();
    let tls = [
        "--cacert",
        &path("ca.pem"),
        "--cert",
        &path("client.pem"),
        "--key",
        &path("client-key.pem"),
    ];
    let run = outcome(kvctl(url).args(tls).args(["put", "--raw", "cfg/a", "on"]));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = outcome(kvctl(url).args(tls).args(["-o", "json", "get", "cfg/a"]));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("\"on\""), "{}", run.stdout);
    // The server requires the client certificate, and kvctl checks the server's.
    for refused in [
        vec!["--cacert", &path("ca.pem")],
        vec![
            "--cacert",
            &path("other-ca.pem"),
            "--cert",
            &path("client.pem"),
            "--key",
            &path("client-key.pem"),
        ],
    ] {
        let run =
            outcome(
                kvctl(url)
                    .args(&refused)
                    .args(["--connect-timeout", "2s", "get", "cfg/a"]),
            );
        match refused_code {
            Some(code) => assert_eq!(run.code, code, "{refused:?}: {}", run.stderr),
            None => assert_ne!(run.code, 0, "{refused:?}: {}", run.stdout),
        }
        assert!(
            !run.stdout.contains("\"on\""),
            "{refused:?}: {}",
            run.stdout
        );
    }
}

#[tokio::test]
async fn the_password_never_shows() {
    let Some(etcd) = shared_etcd().await else {
        return;
    };
    let Some(redis) = shared_redis().await else {
        return;
    };
    let endpoint = etcd.endpoint();
    let host = endpoint.strip_prefix("http://").unwrap_or(&endpoint);
    let root = key_root("kvctl-password");
    for url in [
        format!("etcd://{host}?namespace={root}"),
        format!("{}/3", redis.url()),
    ] {
        for args in [
            &["-vv", "--trace", "put", "--raw", "a", "1"][..],
            &["-vv", "--trace", "-o", "json", "get", "a"],
            &["-vv", "demo"],
        ] {
            let run = outcome(
                kvctl(&url)
                    .env("KVCTL_PASSWORD", PASSWORD)
                    .args(["--user", "alice"])
                    .args(args),
            );
            // Whether the server takes the user or refuses it, the password stays unsaid.
            for output in [&run.stdout, &run.stderr] {
                assert!(!output.contains("Pw-8c1e0f"), "{url} {args:?}: {output}");
                assert!(!output.contains("Pw-8c1e0f%2B"), "{url} {args:?}: {output}");
            }
            if run.code != 0 {
                // A refusal names the user it refused.
                assert!(
                    run.stderr.contains("alice"),
                    "{url} {args:?}: {}",
                    run.stderr
                );
            }
        }
    }
}

#[test]
fn no_password_and_no_terminal_is_an_error() {
    // `setsid`: no controlling terminal to ask on, even when the tests run in one.
    let bin = assert_cmd::cargo::cargo_bin("kvctl");
    let url = format!("etcd://127.0.0.1:{}", closed_port());
    let out = std::process::Command::new("setsid")
        .arg(bin)
        .args(["--store", &url, "--user", "alice", "get", "k"])
        .env_remove("KVCTL_PASSWORD")
        .env_remove("KVCTL_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/kvctl-tests")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("setsid kvctl runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("KVCTL_PASSWORD"), "{stderr}");
    // Commands that open no store ask for nothing.
    let out = std::process::Command::new("setsid")
        .arg(assert_cmd::cargo::cargo_bin("kvctl"))
        .args([
            "--store",
            &url,
            "--user",
            "alice",
            "parse",
            "jxt/tenants/1/meta",
        ])
        .env_remove("KVCTL_PASSWORD")
        .env_remove("KVCTL_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/kvctl-tests")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("setsid kvctl runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn named_stores_from_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let prod = dir.path().join("prod");
    let listener = silent_port();
    let silent = listener.local_addr().unwrap().port();
    let file = config(
        dir.path(),
        &format!(
            "default_store = \"prod\"\n\
             [stores.prod]\nurl = \"sled://{}\"\n\
             [stores.slow]\nurl = \"redis://127.0.0.1:{silent}/0\"\nconnect_timeout = \"500ms\"\n\
             [stores.tls]\nurl = \"rediss://127.0.0.1:{}/0\"\ncacert = \"ca.pem\"\nuser = \"bob\"\n",
            prod.display(),
            closed_port()
        ),
    );
    let named = |args: &[&str]| {
        outcome(
            kvctl_without_store()
                .env("KVCTL_CONFIG", &file)
                .env("KVCTL_PASSWORD", PASSWORD)
                .env("XDG_DATA_HOME", dir.path().join("data"))
                .args(args),
        )
    };
    // --store NAME.
    let run = named(&["--store", "prod", "put", "--raw", "cfg/a", "1"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "", "a named store is no surprise");
    let url = format!("sled://{}", prod.display());
    assert_eq!(
        ok(&url, &["get", "cfg/a"]).trim_end().lines().last(),
        Some("1")
    );
    // KVCTL_STORE=NAME, and default_store when neither is given.
    let run = outcome(
        kvctl_without_store()
            .env("KVCTL_CONFIG", &file)
            .env("KVCTL_STORE", "prod")
            .args(["put", "--raw", "cfg/b", "2"]),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = named(&["put", "--raw", "cfg/c", "3"]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{}", run.stderr);
    assert_eq!(listed_keys(&url, &[]), ["cfg/a", "cfg/b", "cfg/c"]);
    assert!(
        !dir.path().join("data").exists(),
        "the local store is untouched"
    );

    // A store's connect_timeout applies.
    let started = Instant::now();
    let run = named(&["--store", "slow", "get", "k"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(started.elapsed() < Duration::from_millis(2500));
    drop(listener);

    // Its paths are taken from the config file's folder, its user asks for a password.
    std::fs::write(dir.path().join("ca.pem"), "PEM").unwrap();
    let run = outcome(
        kvctl_without_store()
            .env("KVCTL_CONFIG", &file)
            .env("KVCTL_PASSWORD", PASSWORD)
            .args(["--store", "tls", "get", "k"]),
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
    let ca = format!("?ca={}/ca.pem&user=bob", dir.path().display());
    assert!(run.stderr.contains(&ca), "{ca}: {}", run.stderr);
    // A flag wins over the store's value.
    let run = named(&["--store", "tls", "--user", "carol", "get", "k"]);
    assert!(run.stderr.contains("&user=carol"), "{}", run.stderr);

    // An unknown name names the file and its stores.
    let run = named(&["--store", "staging", "get", "k"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    for part in [
        "\"staging\"",
        &file.display().to_string(),
        "prod, slow, tls",
    ] {
        assert!(run.stderr.contains(part), "{part}: {}", run.stderr);
    }
    // An unknown key in the file is an error naming it, and nothing is written.
    for text in [
        "[stores.prod]\nurl = \"mem://\"\npassword = \"x\"\n",
        "default_stor = \"prod\"\n",
        "[stores.prod]\ncacert = \"ca.pem\"\n",
        "[stores.prod]\nurl = \"etcd://h:2379\"\nconnect_timeout = \"3\"\n",
    ] {
        let file = config(dir.path(), text);
        let run = outcome(
            kvctl_without_store()
                .env("KVCTL_CONFIG", &file)
                .args(["--store", "prod", "put", "--raw", "cfg/d", "4"]),
        );
        assert_eq!(run.code, 2, "{text}: {}", run.stderr);
        assert!(
            run.stderr.contains(&file.display().to_string()),
            "{text}: {}",
            run.stderr
        );
    }
    assert_eq!(listed_keys(&url, &[]), ["cfg/a", "cfg/b", "cfg/c"]);
}

#[test]
fn writes_to_the_local_default_store_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let local = format!("redb://{}", data.join("kvctl").join("store.redb").display());
    let notice = format!("kvctl: wrote to the local store {local} (no --store given)\n");
    let bare =
        |args: &[&str]| outcome(kvctl_without_store().env("XDG_DATA_HOME", &data).args(args));
    let dump = dir.path().join("dump.jsonl");
    std::fs::write(
        &dump,
        "{\"key\":\"x/b\",\"kind\":\"value\",\"value\":\"2\"}\n",
    )
    .unwrap();
    for args in [
        &["put", "--raw", "x/a", "1"][..],
        &["rm", "x/a"][..],
        &["import", dump.to_str().unwrap()],
        &["demo"],
    ] {
        let run = bare(args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        assert!(run.stderr.ends_with(&notice), "{args:?}: {}", run.stderr);
        assert!(!run.stdout.contains("wrote to the local"), "{}", run.stdout);
    }
    // Reads, and writes refused before they reach the store, say nothing.
    for (args, code) in [
        (&["get", "x/b"][..], 0),
        (&["ls"][..], 0),
        (&["put", "tenant.meta", "id=1", "{}"][..], 2),
    ] {
        let run = bare(args);
        assert_eq!(run.code, code, "{args:?}: {}", run.stderr);
        assert!(!run.stderr.contains("wrote to"), "{args:?}: {}", run.stderr);
    }
    // The same store named: no notice.
    let run = outcome(kvctl(&local).args(["put", "--raw", "x/c", "3"]));
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
}
