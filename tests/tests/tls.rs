//! TLS for real: an etcd member that requires client certificates and a Redis server with
//! `tls-port` and `tls-auth-clients yes`, with certificates made in the test. The stores
//! connect with the CA and a client certificate; a wrong CA (named in the error) or a
//! missing client certificate is refused with `Unavailable`, and never reaches the data.

use futures::StreamExt;
use keyplane_core::tls::TlsConfig;
use keyplane_core::{Error, ErrorKind, PutOptions, Store, WatchOptions};
use keyplane_etcd::{EtcdConfig, EtcdStore};
use keyplane_redis::{RedisConfig, RedisStore};
use keyplane_tests::harness::{TestCerts, TlsEtcd, TlsRedis, key_root};
use tokio::task::block_in_place;

/// Writes, reads and watches one key over the TLS connection.
async fn round_trip(store: &dyn Store) {
    let root = key_root("tls");
    let key = format!("{root}k");
    let mut watch = store.watch(WatchOptions::prefix(&root)).await.unwrap();
    store
        .put(key.as_bytes(), b"secret", PutOptions::default())
        .await
        .unwrap();
    assert_eq!(
        store.get(key.as_bytes()).await.unwrap().unwrap().value,
        b"secret"
    );
    let batch = watch.next().await.unwrap().unwrap();
    assert_eq!(batch.events[0].key(), key.as_bytes());
}

/// The error, with its sources, as one line.
fn chain(err: &Error) -> String {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

/// A refused TLS connection: `Unavailable` (or `PermissionDenied`); with `says_why`, its
/// sources name the TLS failure. A server that refuses a connection without a client
/// certificate does so after the client's side of a TLS 1.3 handshake is done, so the client
/// may see only a closed connection: that case checks the kind alone.
fn refused(err: Error, says_why: bool) {
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Unavailable | ErrorKind::PermissionDenied
        ),
        "{}",
        chain(&err)
    );
    if !says_why {
        return;
    }
    let text = chain(&err).to_lowercase();
    assert!(
        ["certificate", "tls", "handshake", "unknownca", "alert"]
            .iter()
            .any(|w| text.contains(w)),
        "the error says it is about TLS: {text}"
    );
}

fn etcd_tls(certs: &TestCerts, ca: &str, client: bool) -> TlsConfig {
    TlsConfig {
        ca_file: Some(certs.path(ca)),
        cert_file: client.then(|| certs.path("client.pem")),
        key_file: client.then(|| certs.path("client-key.pem")),
        domain: Some("localhost".to_owned()),
    }
}

fn etcd_config(server: &TlsEtcd, tls: TlsConfig) -> EtcdConfig {
    let mut config = EtcdConfig::new([server.endpoint()]);
    config.tls = Some(tls);
    config.retries = 0;
    config.connect_timeout = std::time::Duration::from_millis(2_000);
    config.request_timeout = std::time::Duration::from_millis(2_000);
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_with_client_certificates() {
    let certs = TestCerts::new();
    let Some(server) = block_in_place(|| TlsEtcd::start(&certs)) else {
        return;
    };
    let store = EtcdStore::open(etcd_config(&server, etcd_tls(&certs, "ca.pem", true)))
        .await
        .unwrap();
    round_trip(&store).await;

    for (tls, says_why) in [
        (etcd_tls(&certs, "other-ca.pem", true), true),
        (etcd_tls(&certs, "ca.pem", false), false),
    ] {
        let answer = match EtcdStore::open(etcd_config(&server, tls)).await {
            Ok(store) => store.get(b"any").await.map(|_| ()),
            Err(e) => Err(e),
        };
        refused(answer.unwrap_err(), says_why);
    }
}

fn redis_config(server: &TlsRedis, certs: &TestCerts, ca: &str, client: bool) -> RedisConfig {
    RedisConfig::new(server.url())
        .tls(TlsConfig {
            ca_file: Some(certs.path(ca)),
            cert_file: client.then(|| certs.path("client.pem")),
            key_file: client.then(|| certs.path("client-key.pem")),
            domain: None,
        })
        .connect_timeout(std::time::Duration::from_millis(2_000))
        .request_timeout(std::time::Duration::from_millis(2_000))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_with_client_certificates() {
    let certs = TestCerts::new();
    let Some(server) = block_in_place(|| TlsRedis::start(&certs)) else {
        return;
    };
    let store = RedisStore::open(redis_config(&server, &certs, "ca.pem", true))
        .await
        .unwrap();
    round_trip(&store).await;

    for (ca, client) in [("other-ca.pem", true), ("ca.pem", false)] {
        let answer = match RedisStore::open(redis_config(&server, &certs, ca, client)).await {
            Ok(store) => store.get(b"any").await.map(|_| ()),
            Err(e) => Err(e),
        };
        refused(answer.unwrap_err(), client);
    }
    // A plain connection to the TLS port gets nowhere either.
    let plain = server.url().replace("rediss://", "redis://");
    let answer = match RedisStore::open(
        RedisConfig::new(plain)
            .connect_timeout(std::time::Duration::from_millis(2_000))
            .request_timeout(std::time::Duration::from_millis(2_000)),
    )
    .await
    {
        Ok(store) => store.get(b"any").await.map(|_| ()),
        Err(e) => Err(e),
    };
    let err = answer.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Unavailable | ErrorKind::Timeout),
        "{}",
        chain(&err)
    );
}

/// A store's configuration for `url` (a cluster's or a Sentinel deployment's) with the CA
/// `ca` and the test's client certificate.
fn client_certificate_config(url: String, certs: &TestCerts, ca: &str) -> RedisConfig {
    RedisConfig::new(url)
        .tls(TlsConfig {
            ca_file: Some(certs.path(ca)),
            cert_file: Some(certs.path("client.pem")),
            key_file: Some(certs.path("client-key.pem")),
            domain: None,
        })
        .connect_timeout(std::time::Duration::from_millis(2_000))
        .request_timeout(std::time::Duration::from_millis(2_000))
}

/// A Redis Cluster whose nodes speak only TLS (to clients, replicas and each other) and
/// require client certificates: `rediss+cluster://` with the CA and a client certificate
/// serves keys, transactions, a watch spanning groups and a range spanning them; a wrong CA
/// is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_over_tls() {
    use keyplane_core::RangeOptions;
    let certs = TestCerts::new();
    let Some(cluster) = block_in_place(|| keyplane_tests::harness::RedisCluster::start_tls(&certs))
    else {
        return;
    };
    let url = cluster.url();
    assert!(url.starts_with("rediss+cluster://"), "{url}");
    let store = RedisStore::open(client_certificate_config(url.clone(), &certs, "ca.pem"))
        .await
        .unwrap();
    let mut watch = store.watch(WatchOptions::prefix("tls/")).await.unwrap();
    for group in ["a", "b", "c"] {
        let key = format!("tls/{{{group}}}/k");
        store
            .put(key.as_bytes(), group.as_bytes(), PutOptions::default())
            .await
            .unwrap();
        assert_eq!(
            store.get(key.as_bytes()).await.unwrap().unwrap().value,
            group.as_bytes()
        );
    }
    let listed = store.range(RangeOptions::prefix("tls/")).await.unwrap();
    assert_eq!(listed.entries.len(), 3);
    let mut groups = Vec::new();
    while groups.len() < 3 {
        let batch = watch.next().await.unwrap().unwrap();
        groups.push(batch.group.unwrap());
    }
    groups.sort();
    assert_eq!(groups, [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);

    let answer =
        match RedisStore::open(client_certificate_config(url, &certs, "other-ca.pem")).await {
            Ok(store) => store.get(b"{a}any").await.map(|_| ()),
            Err(e) => Err(e),
        };
    refused(answer.unwrap_err(), true);
}

/// `rediss+sentinel://`: the sentinels and every data server speak TLS only to clients with
/// a certificate of the test CA. The store asks the sentinels over TLS, writes to the
/// master over TLS, follows a failover, and a wrong CA is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_sentinel_over_tls() {
    use keyplane_tests::harness::RedisSentinel;
    let certs = TestCerts::new();
    let Some(deployment) = block_in_place(|| RedisSentinel::start_tls(&certs)) else {
        return;
    };
    let url = deployment.url();
    assert!(url.starts_with("rediss+sentinel://"), "{url}");
    let config = |ca: &str| client_certificate_config(url.clone(), &certs, ca);
    let store = RedisStore::open(config("ca.pem")).await.unwrap();
    round_trip(&store).await;

    let old = deployment.master_port();
    let new = block_in_place(|| deployment.fail_over());
    assert_ne!(old, new);
    let key = key_root("tls-sentinel");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match store.put(key.as_bytes(), b"v", PutOptions::default()).await {
            Ok(_) => break,
            Err(e) => {
                assert!(e.is_retryable(), "{}", chain(&e));
                assert!(std::time::Instant::now() < deadline, "{}", chain(&e));
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
    round_trip(&store).await;

    let err = RedisStore::open(config("other-ca.pem"))
        .await
        .err()
        .expect("a sentinel with a certificate of another CA was trusted");
    refused(err, false);
    // Without the TLS URL, the sentinels' TLS ports get nowhere.
    let plain = RedisConfig::new(url.replace("rediss+", "redis+"))
        .connect_timeout(std::time::Duration::from_millis(2_000))
        .request_timeout(std::time::Duration::from_millis(2_000));
    let err = RedisStore::open(plain)
        .await
        .err()
        .expect("plain text reached a TLS sentinel");
    assert!(
        matches!(err.kind(), ErrorKind::Unavailable | ErrorKind::Timeout),
        "{}",
        chain(&err)
    );
}
