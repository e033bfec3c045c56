//! Smoke tests of the server harness: each server kind starts, answers, restarts and stops.

use keyplane_tests::harness::{EtcdCluster, EtcdServer, RedisServer, shared_etcd, shared_redis};
use std::net::TcpStream;

fn reachable(url: &str) -> bool {
    let addr = url
        .trim_start_matches("http://")
        .trim_start_matches("redis://");
    TcpStream::connect(addr).is_ok()
}

#[tokio::test]
async fn etcd_server_starts_restarts_and_stops() {
    let Some(mut server) = EtcdServer::start() else {
        return;
    };
    let endpoint = server.endpoint();
    assert!(reachable(&endpoint));
    server.kill();
    assert!(!reachable(&endpoint), "killed etcd still answers");
    server.restart();
    assert!(reachable(&endpoint));
    drop(server);
    assert!(!reachable(&endpoint), "dropped etcd still answers");
}

#[tokio::test]
async fn etcd_cluster_of_three_survives_one_member() {
    let Some(mut cluster) = EtcdCluster::start(3) else {
        return;
    };
    assert_eq!(cluster.len(), 3);
    let endpoints = cluster.endpoints();
    assert!(endpoints.iter().all(|e| reachable(e)));
    cluster.kill(0);
    assert!(!reachable(&endpoints[0]));
    cluster.restart(0);
    assert!(reachable(&endpoints[0]));
}

#[tokio::test]
async fn redis_server_starts_restarts_and_stops() {
    let Some(mut server) = RedisServer::start_with_aof() else {
        return;
    };
    let url = server.url();
    assert!(reachable(&url));
    server.kill();
    assert!(!reachable(&url), "killed redis still answers");
    server.restart();
    assert!(reachable(&url));
    drop(server);
    assert!(!reachable(&url), "dropped redis still answers");
}

#[tokio::test]
async fn shared_servers_are_started_once() {
    if let Some(a) = shared_etcd().await {
        let b = shared_etcd().await.expect("shared etcd");
        assert_eq!(a.endpoint(), b.endpoint());
    }
    if let Some(a) = shared_redis().await {
        let b = shared_redis().await.expect("shared redis");
        assert_eq!(a.url(), b.url());
    }
}
