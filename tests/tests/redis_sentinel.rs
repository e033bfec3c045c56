//! The Redis deployment under Sentinel that the harness starts: the sentinels agree on the
//! master, the replicas copy it, and a failover promotes a replica that takes writes.

use keyplane_tests::harness::RedisSentinel;

/// `INFO replication` of the server on `port`.
fn replication(port: u16) -> String {
    let mut con = redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .and_then(|c| c.get_connection())
        .expect("a connection to the server");
    redis::cmd("INFO")
        .arg("replication")
        .query(&mut con)
        .expect("INFO replication")
}

/// Writes `key` on the server on `port` and waits until both replicas have it.
fn write_replicated(port: u16, key: &str, value: &str) {
    let mut con = redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .and_then(|c| c.get_connection())
        .expect("a connection to the master");
    let () = redis::cmd("SET")
        .arg(key)
        .arg(value)
        .query(&mut con)
        .expect("SET on the master");
    let acknowledged: i64 = redis::cmd("WAIT")
        .arg(2)
        .arg(10_000)
        .query(&mut con)
        .expect("WAIT");
    assert_eq!(acknowledged, 2, "both replicas acknowledge the write");
}

/// The value of `key` on the server on `port`.
fn read(port: u16, key: &str) -> Option<String> {
    let mut con = redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .and_then(|c| c.get_connection())
        .expect("a connection");
    redis::cmd("GET").arg(key).query(&mut con).expect("GET")
}

#[test]
fn sentinels_follow_a_failover_to_a_replica_that_takes_writes() {
    let Some(deployment) = RedisSentinel::start() else {
        return;
    };
    let url = deployment.url();
    assert!(url.starts_with("redis+sentinel://127.0.0.1:"), "{url}");
    let old = deployment.master_port();
    assert!(replication(old).contains("connected_slaves:2"));
    write_replicated(old, "sentinel-test/before", "1");

    let new = deployment.fail_over();
    assert_ne!(new, old);
    assert!(replication(new).contains("role:master"));
    // The promoted replica holds what the old master acknowledged, and takes writes.
    assert_eq!(read(new, "sentinel-test/before").as_deref(), Some("1"));
    deployment.wait_for_replicas_of(new);
    write_replicated(new, "sentinel-test/after", "2");
    // The old master now replicates the new one.
    assert_eq!(read(old, "sentinel-test/after").as_deref(), Some("2"));
}
