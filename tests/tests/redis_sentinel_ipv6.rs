//! A master on IPv6 under Sentinel: the sentinels name it without brackets (`::1`), and the
//! store reaches it. One master on the IPv6 loopback and one sentinel (quorum 1) watching it
//! there, each a `redis-server` process of this test, killed when it ends.

use keyplane_core::{PutOptions, Store};
use keyplane_redis::{RedisConfig, RedisStore};
use keyplane_tests::harness::{find_binary, key_root, servers_required};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server process, killed when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A free TCP port on `host`.
fn free_port(host: &str) -> u16 {
    std::net::TcpListener::bind((host, 0))
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Waits until the server on `host:port` answers `PING`.
fn wait_ready(host: &str, port: u16) {
    let url = if host.contains(':') {
        format!("redis://[{host}]:{port}")
    } else {
        format!("redis://{host}:{port}")
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let pong = redis::Client::open(url.as_str())
            .and_then(|c| c.get_connection())
            .and_then(|mut con| redis::cmd("PING").query::<String>(&mut con));
        if pong.is_ok() {
            return;
        }
        assert!(Instant::now() < deadline, "{url} did not start: {pong:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test]
async fn the_store_reaches_an_ipv6_master_the_sentinel_names() {
    let Some(binary) = find_binary("redis-server") else {
        assert!(!servers_required(), "redis-server is not installed");
        eprintln!("==== SKIP: redis-server not found ====");
        return;
    };
    if std::net::TcpListener::bind(("::1", 0)).is_err() {
        eprintln!("==== SKIP: no IPv6 loopback on this machine ====");
        return;
    }
    let dir = tempfile::tempdir().expect("a directory");
    let master_port = free_port("::1");
    let _master = Process(
        Command::new(&binary)
            .args(["--port", &master_port.to_string(), "--bind", "::1"])
            .args(["--protected-mode", "no", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .spawn()
            .expect("the master starts"),
    );
    wait_ready("::1", master_port);
    let sentinel_port = free_port("127.0.0.1");
    let conf = dir.path().join("sentinel.conf");
    std::fs::write(
        &conf,
        format!(
            "port {sentinel_port}\nbind 127.0.0.1\nprotected-mode no\n\
             sentinel monitor six ::1 {master_port} 1\n"
        ),
    )
    .expect("the sentinel's configuration");
    let _sentinel = Process(
        Command::new(&binary)
            .arg(&conf)
            .arg("--sentinel")
            .stdout(Stdio::null())
            .spawn()
            .expect("the sentinel starts"),
    );
    wait_ready("127.0.0.1", sentinel_port);

    let store = RedisStore::open(RedisConfig::new(format!(
        "redis+sentinel://127.0.0.1:{sentinel_port}/six"
    )))
    .await
    .expect("open through the sentinel that names ::1");
    let key = format!("{}k", key_root("sentinel-ipv6"));
    store
        .put(key.as_bytes(), b"v", PutOptions::default())
        .await
        .expect("a write on the IPv6 master");
    let entry = store.get(key.as_bytes()).await.expect("a read");
    assert_eq!(entry.map(|e| e.value), Some(b"v".to_vec()));
}
