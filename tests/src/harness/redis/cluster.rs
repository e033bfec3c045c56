//! A Redis Cluster of `redis-server` nodes on loopback.

use super::RedisServer;
use std::sync::OnceLock;
use std::time::Duration;

/// A Redis Cluster on loopback: 3 masters holding the 16384 slots in three ranges, each with
/// one replica, every node a `redis-server --cluster-enabled yes` with its own directory.
/// Fault tests kill a master and watch its replica take over.
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts 3 masters and 3 replicas, joins them and waits until every node reports
    /// `cluster_state:ok` and knows all six. `None` (after a SKIP line) when `redis-server` is
    /// missing and servers are not required.
    ///
    /// # Panics
    /// When the cluster does not form within 30 s.
    pub fn start() -> Option<Self> {
        Self::start_with(None)
    }

    /// [`RedisCluster::start`], every node speaking only TLS to clients, replicas and the
    /// other nodes (`tls-cluster`, `tls-replication`), with the certificates of `certs` and
    /// client certificates required: the store connects with `rediss+cluster://`
    /// ([`RedisCluster::url`]).
    ///
    /// # Panics
    /// As [`RedisCluster::start`].
    pub fn start_tls(certs: &super::super::TestCerts) -> Option<Self> {
        Self::start_with(Some(certs))
    }

    fn start_with(tls: Option<&super::super::TestCerts>) -> Option<Self> {
        let mut nodes = Vec::new();
        for _ in 0..6 {
            nodes.push(RedisServer::start_node(false, true, tls)?);
        }
        let cluster = RedisCluster { nodes };
        if let Err(e) = cluster.form() {
            panic!("the Redis cluster did not form: {e}");
        }
        Some(cluster)
    }

    fn form(&self) -> redis::RedisResult<()> {
        let ranges = [(0, 5460), (5461, 10922), (10923, 16383)];
        for (node, (first, last)) in self.nodes.iter().zip(ranges) {
            let () = redis::cmd("CLUSTER")
                .arg("ADDSLOTSRANGE")
                .arg(first)
                .arg(last)
                .query(&mut node.sync_connection()?)?;
        }
        let mut first = self.nodes[0].sync_connection()?;
        for node in &self.nodes[1..] {
            let mut meet = redis::cmd("CLUSTER");
            meet.arg("MEET").arg("127.0.0.1");
            match &node.tls {
                Some(tls) => meet.arg(tls.port).arg(tls.bus),
                None => meet.arg(node.port),
            };
            let () = meet.query(&mut first)?;
        }
        self.wait(|con| Ok(cluster_nodes(con)?.lines().count() == 6))?;
        for i in 0..3 {
            let id: String = redis::cmd("CLUSTER")
                .arg("MYID")
                .query(&mut self.nodes[i].sync_connection()?)?;
            let mut replica = self.nodes[i + 3].sync_connection()?;
            // The replica may not have learnt of its master yet: retry until it has.
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            loop {
                let done: redis::RedisResult<()> = redis::cmd("CLUSTER")
                    .arg("REPLICATE")
                    .arg(&id)
                    .query(&mut replica);
                match done {
                    Ok(()) => break,
                    Err(e) if std::time::Instant::now() > deadline => return Err(e),
                    Err(_) => std::thread::sleep(Duration::from_millis(50)),
                }
            }
        }
        self.wait(|con| {
            Ok(settled(con)?
                && cluster_nodes(con)?
                    .lines()
                    .filter(|l| l.contains("slave"))
                    .count()
                    == 3)
        })
    }

    /// Waits until `ready` holds on every live node, for up to 30 s.
    fn wait(
        &self,
        mut ready: impl FnMut(&mut redis::Connection) -> redis::RedisResult<bool>,
    ) -> redis::RedisResult<()> {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let mut all = true;
            for node in self.nodes.iter().filter(|n| n.process.is_some()) {
                let mut con = node.sync_connection()?;
                if !ready(&mut con)? {
                    all = false;
                    break;
                }
            }
            if all {
                return Ok(());
            }
            if std::time::Instant::now() > deadline {
                return Err(redis::RedisError::from((
                    redis::ErrorKind::Io,
                    "the cluster did not settle within 30 s",
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The cluster's URL: `redis+cluster://` (`rediss+cluster://` with TLS) and the masters'
    /// addresses, comma-separated.
    pub fn url(&self) -> String {
        let seeds: Vec<String> = self.nodes[..3]
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.tls.as_ref().map_or(n.port, |t| t.port)))
            .collect();
        let scheme = if self.nodes[0].tls.is_some() {
            "rediss+cluster"
        } else {
            "redis+cluster"
        };
        format!("{scheme}://{}", seeds.join(","))
    }

    /// The URL of each node (`redis://127.0.0.1:PORT`, its plain port also on a TLS
    /// cluster), the three masters first.
    pub fn node_urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// The node `i` (0 to 2 are the first masters, 3 to 5 their replicas).
    pub fn node(&mut self, i: usize) -> &mut RedisServer {
        &mut self.nodes[i]
    }

    /// Kills node `i`, one of the first three masters, and waits until its replica (node
    /// `i + 3`) has taken over its slots and every live node sees the cluster `ok` again.
    ///
    /// # Panics
    /// When no replica takes over within 30 s.
    pub fn fail_over(&mut self, i: usize) {
        self.nodes[i].kill();
        let port = self.nodes[i].port;
        let replica = &self.nodes[i + 3];
        let taken_over = self.wait(|con| {
            let info: String = redis::cmd("CLUSTER").arg("INFO").query(con)?;
            let nodes = cluster_nodes(con)?;
            // Failed for good (`fail`), not merely suspected (`fail?`).
            let dead = nodes
                .lines()
                .find(|l| l.contains(&format!("127.0.0.1:{port}@")))
                .is_none_or(|l| l.contains("fail") && !l.contains("fail?"));
            let role: String = redis::cmd("INFO")
                .arg("replication")
                .query(&mut replica.sync_connection()?)?;
            Ok(info.contains("cluster_state:ok") && dead && role.contains("role:master"))
        });
        if let Err(e) = taken_over {
            let seen = self.nodes[(i + 1) % 3]
                .sync_connection()
                .and_then(|mut con| cluster_nodes(&mut con))
                .unwrap_or_default();
            panic!("no replica took over from node {i}: {e}\n{seen}");
        }
    }

    /// Starts node `i` again (after [`RedisCluster::fail_over`]): it rejoins as a replica of
    /// the master that took over, and this waits until it has synced.
    ///
    /// # Panics
    /// When it does not rejoin within 30 s.
    pub fn restart(&mut self, i: usize) {
        self.nodes[i].restart();
        if let Err(e) = self.wait(settled) {
            panic!("node {i} did not rejoin: {e}");
        }
    }
}

/// Whether the node of `con` sees the cluster settled: `ok`, every node it knows connected,
/// and itself a master or a replica that has synced with its master (one that has not could
/// not take over).
fn settled(con: &mut redis::Connection) -> redis::RedisResult<bool> {
    let info: String = redis::cmd("CLUSTER").arg("INFO").query(con)?;
    let replication: String = redis::cmd("INFO").arg("replication").query(con)?;
    let synced =
        replication.contains("role:master") || replication.contains("master_link_status:up");
    Ok(info.contains("cluster_state:ok")
        && synced
        && cluster_nodes(con)?
            .lines()
            .all(|l| l.contains(" connected")))
}

/// `CLUSTER NODES`, as seen from `con`.
fn cluster_nodes(con: &mut redis::Connection) -> redis::RedisResult<String> {
    redis::cmd("CLUSTER").arg("NODES").query(con)
}

/// The Redis cluster shared by every test of this test binary, started on first use.
pub async fn shared_redis_cluster() -> Option<&'static RedisCluster> {
    static CLUSTER: OnceLock<Option<RedisCluster>> = OnceLock::new();
    // Forming the cluster blocks for a few seconds, once per test binary.
    CLUSTER.get_or_init(RedisCluster::start).as_ref()
}
