//! Every option from a store URL: `keyplane::open` reaches an etcd member and a Redis server
//! that require client certificates with `?ca=...&cert=...&key=...`, is refused without the
//! certificate (an error, not a hang), and refuses a bad parameter before it opens anything.

use keyplane::{ErrorKind, PutOptions, Store};
use keyplane_tests::harness::{TestCerts, TlsEtcd, TlsRedis, key_root};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::block_in_place;

/// `path` as a URL parameter's value: `%`, `&`, `#`, `+`, `=` and spaces escaped.
fn param(path: &Path) -> String {
    let mut out = String::new();
    for c in path.display().to_string().chars() {
        match c {
            '%' | '&' | '#' | '+' | '=' | ' ' | '?' => out.push_str(&format!("%{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// The TLS parameters with the test CA, and the client certificate when `client`.
fn tls_params(certs: &TestCerts, client: bool) -> String {
    let mut params = format!("ca={}", param(&certs.path("ca.pem")));
    if client {
        params.push_str(&format!(
            "&cert={}&key={}",
            param(&certs.path("client.pem")),
            param(&certs.path("client-key.pem"))
        ));
    }
    params
}

/// Puts and reads back one key under a root of its own.
async fn put_and_get(store: &Arc<dyn Store>) {
    let key = format!("{}k", key_root("url-tls"));
    store
        .put(key.as_bytes(), b"over tls", PutOptions::default())
        .await
        .unwrap();
    let read = store.get(key.as_bytes()).await.unwrap().unwrap();
    assert_eq!(read.value, b"over tls");
}

/// Opens `url` and reads a key: the error of whichever fails, within a bound that shows
/// the refusal does not hang.
async fn open_and_read(url: &str) -> keyplane::Result<()> {
    let attempt = async {
        let store = keyplane::open(url).await?;
        store.get(b"any").await.map(|_| ())
    };
    tokio::time::timeout(Duration::from_secs(30), attempt)
        .await
        .unwrap_or_else(|_| panic!("{url} hangs instead of failing"))
}

/// A refusal of a connection without a client certificate.
fn refused(err: &keyplane::Error) {
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Unavailable | ErrorKind::PermissionDenied | ErrorKind::Timeout
        ),
        "{}",
        err.chain()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_over_tls_from_a_url() {
    let certs = TestCerts::new();
    let Some(server) = block_in_place(|| TlsEtcd::start(&certs)) else {
        return;
    };
    let base = format!(
        "etcd://{}?connect_timeout=2s&request_timeout=2s&retries=0&domain=localhost",
        server.endpoint()
    );
    let url = format!("{base}&{}", tls_params(&certs, true));
    let store = keyplane::open(&url).await.unwrap();
    put_and_get(&store).await;

    let without_certificate = format!("{base}&{}", tls_params(&certs, false));
    refused(&open_and_read(&without_certificate).await.unwrap_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_over_tls_from_a_url() {
    let certs = TestCerts::new();
    let Some(server) = block_in_place(|| TlsRedis::start(&certs)) else {
        return;
    };
    let base = format!("{}?connect_timeout=2s&request_timeout=2s", server.url());
    let url = format!("{base}&{}", tls_params(&certs, true));
    let store = keyplane::open(&url).await.unwrap();
    put_and_get(&store).await;

    let without_certificate = format!("{base}&{}", tls_params(&certs, false));
    refused(&open_and_read(&without_certificate).await.unwrap_err());
}

/// A bad parameter is a `Config` error naming it, and nothing is opened: no sled directory
/// is created, no server is contacted (the ports here have none).
#[tokio::test]
async fn bad_parameters_open_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let file = dir.path().join("redb").join("store.redb");
    for (url, says) in [
        (
            format!("redb://{}?durable=yes", file.display()),
            "`durable`",
        ),
        (
            format!("redb://{}?cache_size=-1", file.display()),
            "`cache_size`",
        ),
        (format!("sled://{}?durable=yes", db.display()), "`durable`"),
        (
            format!("sled://{}?history_retention=x", db.display()),
            "`history_retention`",
        ),
        (
            "mem://?history_retention=-1".to_owned(),
            "`history_retention`",
        ),
        ("etcd://127.0.0.1:9?bogus=1".to_owned(), "connect_timeout"),
        ("etcd://127.0.0.1:9?connect_timeout=2".to_owned(), "unit"),
        (
            "redis://127.0.0.1:9?wait_replicas=x".to_owned(),
            "`wait_replicas`",
        ),
        (
            "redis://127.0.0.1:9?reconcile_root=app/".to_owned(),
            "reconcile_roots",
        ),
        (
            "rediss://127.0.0.1:9?ca=/nonexistent/ca.pem".to_owned(),
            "/nonexistent/ca.pem",
        ),
    ] {
        let err = keyplane::open(&url)
            .await
            .err()
            .unwrap_or_else(|| panic!("{url} opens"));
        assert_eq!(err.kind(), ErrorKind::Config, "{url}: {}", err.chain());
        assert!(err.chain().contains(says), "{url}: {}", err.chain());
    }
    assert!(!db.exists(), "a refused URL created the database");
    assert!(
        !dir.path().join("redb").exists(),
        "a refused URL created the redb directory"
    );
    let store = keyplane::open(&format!("sled://{}?history_retention=5", db.display()))
        .await
        .unwrap();
    assert_eq!(
        store.capabilities().history_retention,
        keyplane::Retention::Revisions(5)
    );
}
