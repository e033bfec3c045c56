//! The faults of each server backend: processes killed with SIGKILL and restarted, paused
//! with SIGSTOP and resumed with SIGCONT, the etcd leader killed. Each runs until its
//! deadline and leaves every process running.

use super::history::Recorder;
use crate::harness::{CLIENT, EtcdCluster, RedisSentinel, RedisServer};
use rand::Rng;
use rand::rngs::StdRng;
use std::time::{Duration, Instant};
use tokio::task::block_in_place;

/// Sends `signal` (`STOP`, `CONT`) to process `pid` with `kill(1)`.
pub fn signal(pid: u32, signal: &str) {
    let status = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status();
    if !status.is_ok_and(|s| s.success()) {
        eprintln!("chaos: kill -{signal} {pid} failed");
    }
}

/// Sleeps a random time in `range`, but not past `until`; false when `until` has passed.
async fn pause_within(rng: &mut StdRng, range: std::ops::Range<Duration>, until: Instant) -> bool {
    let wanted = rng.random_range(range);
    let left = until.saturating_duration_since(Instant::now());
    tokio::time::sleep(wanted.min(left)).await;
    Instant::now() < until
}

/// Sleeps the pause between two faults (1.5 to 3.5 s), but not past `until`; false when
/// `until` has passed.
async fn between_faults(rng: &mut StdRng, until: Instant) -> bool {
    let pause = Duration::from_millis(1500)..Duration::from_millis(3500);
    pause_within(rng, pause, until).await
}

/// Drops every client connection of the Redis server at `url` (commands and
/// subscriptions), as an operator's `CLIENT KILL TYPE normal` and `TYPE pubsub` do; nothing
/// is lost, so a watch that ends for it is an anomaly.
pub async fn client_kill(recorder: &Recorder, url: &str, what: &str) {
    let kill = async {
        let mut con = redis::Client::open(url)?
            .get_multiplexed_async_connection()
            .await?;
        let mut killed = 0;
        for kind in ["normal", "pubsub"] {
            killed += redis::cmd("CLIENT")
                .arg("KILL")
                .arg("TYPE")
                .arg(kind)
                .query_async::<i64>(&mut con)
                .await?;
        }
        Ok::<i64, redis::RedisError>(killed)
    };
    match tokio::time::timeout(Duration::from_secs(3), kill).await {
        Ok(Ok(killed)) => recorder.fault(format!(
            "{what}: CLIENT KILL TYPE normal and pubsub ({killed} connections dropped)"
        )),
        Ok(Err(e)) => recorder.fault(format!("{what}: CLIENT KILL failed: {e}")),
        Err(_) => recorder.fault(format!("{what}: CLIENT KILL did not answer")),
    }
}

/// Redis faults until `until`: kill -9 then restart (the AOF with `appendfsync always`
/// brings back every acknowledged write), SIGSTOP for up to 3 s then SIGCONT, or every
/// client connection killed.
pub async fn redis(
    server: &mut RedisServer,
    recorder: &Recorder,
    rng: &mut StdRng,
    until: Instant,
) {
    loop {
        if !between_faults(rng, until).await {
            return;
        }
        let kind = rng.random_range(0..3);
        if kind == 2 {
            client_kill(recorder, &server.url(), "redis").await;
        } else if kind == 0 {
            recorder.fault("redis: kill -9 then restart");
            block_in_place(|| server.kill());
            tokio::time::sleep(rng.random_range(Duration::ZERO..Duration::from_millis(1500))).await;
            block_in_place(|| server.restart());
        } else if let Some(pid) = server.pid() {
            recorder.fault("redis: SIGSTOP then SIGCONT");
            signal(pid, "STOP");
            tokio::time::sleep(
                rng.random_range(Duration::from_millis(300)..Duration::from_secs(3)),
            )
            .await;
            signal(pid, "CONT");
        }
    }
}

/// The index of the member that reports itself leader, asking each member in turn (a
/// paused or dead member does not answer within the second it is given).
pub async fn etcd_leader(endpoints: &[String]) -> Option<usize> {
    for (i, endpoint) in endpoints.iter().enumerate() {
        let ask = async {
            let options = etcd_client::ConnectOptions::new()
                .with_connect_timeout(Duration::from_millis(500))
                .with_timeout(Duration::from_millis(500));
            let mut client = etcd_client::Client::connect([endpoint], Some(options))
                .await
                .ok()?;
            let status = client.status().await.ok()?;
            Some(status.header().map(|h| h.member_id()) == Some(status.leader()))
        };
        if let Ok(Some(true)) = tokio::time::timeout(Duration::from_secs(1), ask).await {
            return Some(i);
        }
    }
    None
}

/// etcd faults on a 3-member cluster until `until`: the leader killed with SIGKILL and
/// restarted, a member paused with SIGSTOP for up to 3 s, or a follower killed and
/// restarted; on a partitionable cluster also a follower cut off from the other members,
/// the leader cut off from the others (the minority side, which the clients still reach),
/// or the clients cut off from one member, each for up to 3 s.
pub async fn etcd(
    cluster: &mut EtcdCluster,
    recorder: &Recorder,
    rng: &mut StdRng,
    until: Instant,
) {
    loop {
        if !between_faults(rng, until).await {
            return;
        }
        let endpoints = cluster.direct_endpoints();
        let leader = etcd_leader(&endpoints).await;
        let kinds = if cluster.network().is_some() { 7 } else { 3 };
        match (rng.random_range(0..kinds), leader) {
            (0, Some(leader)) => {
                recorder.fault(format!("etcd: kill -9 leader m{leader}, then restart"));
                block_in_place(|| cluster.kill(leader));
                tokio::time::sleep(
                    rng.random_range(Duration::from_millis(200)..Duration::from_secs(2)),
                )
                .await;
                block_in_place(|| cluster.restart(leader));
            }
            (1, Some(leader)) => {
                let follower = (leader + rng.random_range(1..cluster.len())) % cluster.len();
                recorder.fault(format!("etcd: kill -9 follower m{follower}, then restart"));
                block_in_place(|| cluster.kill(follower));
                tokio::time::sleep(
                    rng.random_range(Duration::from_millis(200)..Duration::from_secs(2)),
                )
                .await;
                block_in_place(|| cluster.restart(follower));
            }
            (3, Some(leader)) => {
                let follower = (leader + rng.random_range(1..cluster.len())) % cluster.len();
                let what = format!("etcd: partition: follower m{follower} cut off from the others");
                etcd_partition(cluster, recorder, rng, &what, &[follower]).await;
            }
            (4, Some(leader)) => {
                let what = format!(
                    "etcd: partition: leader m{leader} alone on the minority side, the clients \
                     still reaching it"
                );
                etcd_partition(cluster, recorder, rng, &what, &[leader]).await;
            }
            (6, _) => {
                let member = rng.random_range(0..cluster.len());
                if let Some(net) = cluster.network() {
                    recorder.fault(format!(
                        "etcd: every client connection of member m{member} dropped"
                    ));
                    net.drop_connections(cluster.name(member));
                }
            }
            (5, _) => {
                let member = rng.random_range(0..cluster.len());
                let Some(net) = cluster.network() else {
                    continue;
                };
                recorder.fault(format!(
                    "etcd: partition: the clients cut off from one member (m{member})"
                ));
                net.cut(&[CLIENT], &[cluster.name(member)]);
                tokio::time::sleep(
                    rng.random_range(Duration::from_millis(300)..Duration::from_secs(3)),
                )
                .await;
                net.heal();
            }
            _ => {
                let member = rng.random_range(0..cluster.len());
                let Some(pid) = cluster.pid(member) else {
                    continue;
                };
                let role = if leader == Some(member) {
                    "leader"
                } else {
                    "member"
                };
                recorder.fault(format!("etcd: SIGSTOP {role} m{member}, then SIGCONT"));
                signal(pid, "STOP");
                tokio::time::sleep(
                    rng.random_range(Duration::from_millis(300)..Duration::from_secs(3)),
                )
                .await;
                signal(pid, "CONT");
            }
        }
    }
}

/// Cuts the members `alone` off from the other members (the clients still reach every
/// member) for 300 ms to 3 s, then heals.
async fn etcd_partition(
    cluster: &EtcdCluster,
    recorder: &Recorder,
    rng: &mut StdRng,
    what: &str,
    alone: &[usize],
) {
    let Some(net) = cluster.network() else {
        return;
    };
    let side = |alone_side: bool| -> Vec<&str> {
        (0..cluster.len())
            .filter(|i| alone.contains(i) == alone_side)
            .map(|i| cluster.name(i))
            .collect()
    };
    let (inside, outside) = (side(true), side(false));
    recorder.fault(what);
    net.cut(&inside, &outside);
    tokio::time::sleep(rng.random_range(Duration::from_millis(300)..Duration::from_secs(3))).await;
    net.heal();
}

/// Redis Sentinel faults until `until`, every one a partition of the deployment's network,
/// healed before the next: the master cut off from its replicas and the sentinels (its
/// clients still reach it) until the sentinels have promoted a replica and the other
/// replica follows it, then healed, after which the sentinels make the old master a replica
/// of the new one; the master cut off for less than the sentinels' down-after time (no
/// failover); a replica cut off from every other node for up to 3 s.
pub async fn sentinel(
    deployment: &RedisSentinel,
    recorder: &Recorder,
    rng: &mut StdRng,
    until: Instant,
) {
    let Some(net) = deployment.network() else {
        return;
    };
    loop {
        if !between_faults(rng, until).await {
            return;
        }
        let old = block_in_place(|| deployment.master_port());
        let Some(master) = deployment.node_name(old).map(String::from) else {
            return;
        };
        let nodes: Vec<String> = deployment
            .server_names()
            .into_iter()
            .chain(deployment.sentinel_names())
            .collect();
        let apart = |alone: &str| -> Vec<&str> {
            nodes
                .iter()
                .map(String::as_str)
                .filter(|n| *n != alone)
                .collect()
        };
        match rng.random_range(0..5) {
            4 => {
                let url = format!("redis://127.0.0.1:{old}");
                client_kill(recorder, &url, &format!("sentinel: master {master}")).await;
            }
            0 | 1 => {
                recorder.fault(format!(
                    "sentinel: partition: master {master} cut off from its replicas and the \
                     sentinels until a replica is promoted, then healed"
                ));
                net.cut(&[&master], &apart(&master));
                let failed_over = block_in_place(|| {
                    let new = deployment.try_wait_for_new_master(old)?;
                    deployment.try_wait_for_replicas_of(new, Some(old))?;
                    Ok::<u16, String>(new)
                });
                tokio::time::sleep(rng.random_range(Duration::ZERO..Duration::from_secs(2))).await;
                net.heal();
                match failed_over {
                    Ok(new) => {
                        if let Err(e) =
                            block_in_place(|| deployment.try_wait_for_replicas_of(new, None))
                        {
                            recorder.fault(format!("sentinel: the old master did not rejoin: {e}"));
                        }
                    }
                    Err(e) => recorder.fault(format!("sentinel: no failover: {e}")),
                }
            }
            2 => {
                recorder.fault(format!(
                    "sentinel: partition: master {master} cut off for less than down-after"
                ));
                net.cut(&[&master], &apart(&master));
                tokio::time::sleep(
                    rng.random_range(Duration::from_millis(200)..Duration::from_millis(800)),
                )
                .await;
                net.heal();
            }
            _ => {
                let replicas: Vec<String> = deployment
                    .server_names()
                    .into_iter()
                    .filter(|n| *n != master)
                    .collect();
                let replica = &replicas[rng.random_range(0..replicas.len())];
                recorder.fault(format!(
                    "sentinel: partition: replica {replica} cut off from every node"
                ));
                let mut others = apart(replica);
                others.push(CLIENT);
                net.cut(&[replica], &others);
                tokio::time::sleep(
                    rng.random_range(Duration::from_millis(300)..Duration::from_secs(3)),
                )
                .await;
                net.heal();
                let _ = block_in_place(|| deployment.try_wait_for_replicas_of(old, None));
            }
        }
    }
}
