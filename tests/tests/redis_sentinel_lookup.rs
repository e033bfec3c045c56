//! How the store finds its master again when the sentinels do not answer: the master it
//! knows is tried directly (a healthy master is not lost because its sentinels are), and the
//! callers that fail together share one lookup rather than each starting its own.
//!
//! Both tests run the Sentinel deployment behind the proxies of a network of its own, so that
//! the store (the node [`CLIENT`]) can be cut from the sentinels and the master while they
//! keep running.

use keyplane_core::{PutOptions, Store};
use keyplane_redis::{RedisConfig, RedisStore};
use keyplane_tests::harness::{CLIENT, RedisSentinel, SENTINEL_MASTER, key_root};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::net::{TcpListener, TcpStream};

/// Short timeouts: a lookup that no sentinel answers then takes about half a second per
/// sentinel.
fn config(url: String) -> RedisConfig {
    RedisConfig::new(url)
        .connect_timeout(std::time::Duration::from_millis(500))
        .request_timeout(std::time::Duration::from_millis(500))
}

/// The store of `url`, opened with [`config`]'s short timeouts, which a machine busy with
/// other tests can outlast while the store looks up the master and loads its functions: a
/// timed-out open is tried again (the timeouts are for what the test does after it).
async fn open(url: String) -> RedisStore {
    let mut attempts = 0;
    loop {
        match RedisStore::open(config(url.clone())).await {
            Ok(store) => return store,
            Err(e) if e.is_retryable() && attempts < 10 => attempts += 1,
            Err(e) => panic!("open through the sentinel: {}", e.chain()),
        }
    }
}

async fn deployment() -> Option<RedisSentinel> {
    tokio::task::spawn_blocking(RedisSentinel::start_partitionable)
        .await
        .expect("the deployment starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_master_connection_is_retried_directly_when_no_sentinel_answers() {
    let Some(deployment) = deployment().await else {
        return;
    };
    let network = deployment.network().expect("a partitionable deployment");
    let store = open(deployment.url()).await;
    let key = format!("{}k", key_root("sentinel-fallback"));
    store
        .put(key.as_bytes(), b"v", PutOptions::default())
        .await
        .unwrap();
    // The sentinels no longer answer the store; the master is healthy. An operator drops
    // its clients' connections.
    let sentinels = deployment.sentinel_names();
    let sentinels: Vec<&str> = sentinels.iter().map(String::as_str).collect();
    network.cut(&[CLIENT], &sentinels);
    let master = deployment.server_ports()[0];
    let mut con = redis::Client::open(format!("redis://127.0.0.1:{master}"))
        .and_then(|c| c.get_connection())
        .expect("a connection to the master");
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .query(&mut con)
        .expect("CLIENT KILL");
    assert!(killed > 0, "the store's connection was killed");
    // The call that meets the dropped connection may fail; the next ones reach the master
    // the store knows, which says it is still the master.
    let _ = store.get(key.as_bytes()).await;
    for _ in 0..3 {
        let entry = store
            .get(key.as_bytes())
            .await
            .expect("a call after the drop, with no sentinel answering");
        assert_eq!(entry.map(|e| e.value), Some(b"v".to_vec()));
    }
    network.heal();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_failing_together_share_one_lookup() {
    const CALLERS: usize = 10;
    let Some(deployment) = deployment().await else {
        return;
    };
    let network = deployment.network().expect("a partitionable deployment");
    // The store knows one sentinel, through a proxy of the test's that counts the
    // connections made to it: one per lookup.
    let sentinel = deployment
        .url()
        .split(['/', ','])
        .nth(2)
        .expect("the first sentinel of the URL")
        .to_owned();
    let (port, lookups) = counting_proxy(sentinel).await;
    let url = format!("redis+sentinel://127.0.0.1:{port}/{SENTINEL_MASTER}");
    let store = open(url).await;
    let key = format!("{}k", key_root("sentinel-lookups"));
    store
        .put(key.as_bytes(), b"v", PutOptions::default())
        .await
        .unwrap();
    // Neither the sentinels nor the master answer, and the store's connection is dropped.
    let mut unreachable = deployment.sentinel_names();
    unreachable.extend(deployment.server_names());
    let unreachable: Vec<&str> = unreachable.iter().map(String::as_str).collect();
    network.cut(&[CLIENT], &unreachable);
    for node in deployment.server_names() {
        network.drop_connections(&node);
    }
    let before = lookups.load(Ordering::SeqCst);
    let results = futures::future::join_all((0..CALLERS).map(|_| store.get(key.as_bytes()))).await;
    let made = lookups.load(Ordering::SeqCst) - before;
    assert!(
        results.iter().all(Result::is_err),
        "no call succeeds with nothing reachable"
    );
    // All fail at once: the first starts a lookup, and those that failed before it started
    // take its outcome; those that failed while it ran, the next one's.
    assert!(
        made <= 3,
        "{CALLERS} callers failing together made {made} lookups, one after another"
    );
    // Once the network heals, the store finds the master again.
    network.heal();
    let mut recovered = false;
    for _ in 0..10 {
        if store.get(key.as_bytes()).await.is_ok() {
            recovered = true;
            break;
        }
    }
    assert!(recovered, "the store found the master again after the heal");
}

/// A TCP proxy to `target` (`host:port`) on a loopback port; returns the port and how many
/// connections it accepted.
async fn counting_proxy(target: String) -> (u16, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port for the proxy");
    let port = listener.local_addr().expect("the proxy's address").port();
    let accepted = Arc::new(AtomicU64::new(0));
    let count = Arc::clone(&accepted);
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let target = target.clone();
            tokio::spawn(async move {
                if let Ok(mut server) = TcpStream::connect(&target).await {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                }
            });
        }
    });
    (port, accepted)
}
