//! `redis-server` processes.

use super::partition::Network;
use super::process::{ServerProcess, exchange, free_port, require_binary, wait_ready};
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// A `redis-server` on a free loopback port with its own temporary directory.
pub struct RedisServer {
    binary: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    aof: bool,
    /// Whether the server runs as a Redis Cluster node (`--cluster-enabled yes`).
    cluster: bool,
    /// The port of the server it replicates, for a replica started with `--replicaof`.
    replica_of: Option<u16>,
    /// A cluster node that speaks TLS to clients, replicas and the other nodes.
    tls: Option<NodeTls>,
    /// A node of a [`Network`]: its name there and the port of its proxy, which it
    /// announces to its master and the sentinels.
    node: Option<NetworkNode>,
    process: Option<ServerProcess>,
}

/// A server's place on a [`Network`].
#[derive(Clone)]
pub(crate) struct NetworkNode {
    pub(crate) network: Arc<Network>,
    pub(crate) name: String,
    /// The proxy's port, set when the server's own port is chosen.
    pub(crate) port: u16,
}

/// The TLS side of a cluster node: its certificates (`ca.pem`, `server.pem`,
/// `server-key.pem`, and `client.pem`/`client-key.pem`, which it presents to the nodes it
/// connects to), its TLS port, and its cluster bus port. Its plain port stays open for the
/// harness's own administration.
struct NodeTls {
    certs: PathBuf,
    port: u16,
    bus: u16,
}

impl RedisServer {
    /// Starts a server without persistence. `None` (after a SKIP line) when `redis-server` is
    /// missing and servers are not required.
    pub fn start() -> Option<Self> {
        Self::start_with(false)
    }

    /// Starts a server with the append-only file on (`appendfsync always`), so that restarts
    /// keep every acknowledged write.
    pub fn start_with_aof() -> Option<Self> {
        Self::start_with(true)
    }

    fn start_with(aof: bool) -> Option<Self> {
        Self::start_node(aof, false, None)
    }

    /// Starts a replica of the server on `master_port` (loopback), which syncs at once.
    pub fn start_replica_of(master_port: u16) -> Option<Self> {
        Self::launch_new(false, false, None, Some(master_port), None)
    }

    /// Starts a server (a replica of the server known on `master_port`, when given) as the
    /// node `name` of `network`: known to others through a proxy, whose port it announces
    /// as a replica.
    pub(crate) fn start_on(
        network: &Arc<Network>,
        name: &str,
        master_port: Option<u16>,
    ) -> Option<Self> {
        let node = NetworkNode {
            network: Arc::clone(network),
            name: name.to_string(),
            port: 0,
        };
        Self::launch_new(false, false, None, master_port, Some(node))
    }

    /// Starts a server whose clients and replicas must use TLS with a certificate of
    /// `certs` (its plain port stays open for the harness), a replica of the server whose
    /// TLS port is `master_tls_port` when given, replicating over TLS.
    pub(crate) fn start_tls(
        certs: &super::TestCerts,
        master_tls_port: Option<u16>,
    ) -> Option<Self> {
        Self::launch_new(false, false, Some(certs), master_tls_port, None)
    }

    fn start_node(aof: bool, cluster: bool, tls: Option<&super::TestCerts>) -> Option<Self> {
        Self::launch_new(aof, cluster, tls, None, None)
    }

    fn launch_new(
        aof: bool,
        cluster: bool,
        tls: Option<&super::TestCerts>,
        replica_of: Option<u16>,
        node: Option<NetworkNode>,
    ) -> Option<Self> {
        let binary = require_binary("redis-server", "redis-server")?;
        let mut dir = tempfile::Builder::new()
            .prefix("kv-redis-")
            .tempdir()
            .expect("temp dir");
        let mut last_error = String::new();
        for _ in 0..3 {
            let port = if cluster { cluster_port() } else { free_port() };
            let node = node.clone().map(|mut node| {
                node.port = node.network.proxy(&node.name, port);
                node
            });
            let mut server = RedisServer {
                binary: binary.clone(),
                dir,
                port,
                aof,
                cluster,
                replica_of,
                tls: tls.map(|certs| NodeTls {
                    certs: certs.path(""),
                    port: free_port(),
                    bus: free_port(),
                }),
                node,
                process: None,
            };
            match server.launch() {
                Ok(()) => return Some(server),
                Err(e) => {
                    last_error = e;
                    dir = server.take_dir();
                }
            }
        }
        panic!("redis-server did not start: {last_error}");
    }

    fn take_dir(self) -> tempfile::TempDir {
        let RedisServer { dir, .. } = self;
        dir
    }

    fn launch(&mut self) -> Result<(), String> {
        let mut cmd = Command::new(&self.binary);
        cmd.arg("--port")
            .arg(self.port.to_string())
            .args([
                "--bind",
                "127.0.0.1",
                "--protected-mode",
                "no",
                "--daemonize",
                "no",
            ])
            .args(["--save", ""])
            .arg("--dir")
            .arg(self.dir.path());
        if self.aof {
            cmd.args(["--appendonly", "yes", "--appendfsync", "always"]);
        } else {
            cmd.args(["--appendonly", "no"]);
        }
        if self.cluster {
            cmd.args([
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                "2000",
                // Replicas sync at once (not 5 s later), so that the cluster is ready sooner.
                "--repl-diskless-sync-delay",
                "0",
            ]);
        }
        if let Some(master) = self.replica_of {
            cmd.args(["--replicaof", "127.0.0.1", &master.to_string()]);
        }
        if self.replica_of.is_some() || self.node.is_some() {
            // Replicas sync at once; a node on a network may become a master after a failover.
            cmd.args(["--repl-diskless-sync-delay", "0"]);
        }
        if let Some(node) = &self.node {
            cmd.args(["--replica-announce-ip", "127.0.0.1"])
                .args(["--replica-announce-port", &node.port.to_string()]);
        }
        if let Some(tls) = &self.tls {
            cmd.args(["--tls-port", &tls.port.to_string()])
                .args(["--tls-replication", "yes"])
                .args(["--tls-auth-clients", "yes"]);
            if self.cluster {
                cmd.args(["--cluster-port", &tls.bus.to_string()])
                    .args(["--tls-cluster", "yes"]);
            }
            for (option, file) in [
                ("--tls-ca-cert-file", "ca.pem"),
                ("--tls-cert-file", "server.pem"),
                ("--tls-key-file", "server-key.pem"),
                ("--tls-client-cert-file", "client.pem"),
                ("--tls-client-key-file", "client-key.pem"),
            ] {
                cmd.arg(option).arg(tls.certs.join(file));
            }
        }
        let log = self.dir.path().join("redis.log");
        let mut process =
            ServerProcess::spawn(cmd, &log, self.dir.path()).map_err(|e| e.to_string())?;
        let port = self.port;
        wait_ready(&mut process, Duration::from_secs(20), || {
            exchange(port, b"PING\r\n").starts_with("+PONG\r\n")
        })?;
        self.process = Some(process);
        Ok(())
    }

    /// The server's URL, `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The port the server is known by to its master, its replicas and the sentinels: its
    /// proxy's on a network, its TLS port when it speaks TLS, else its own.
    pub fn announced_port(&self) -> u16 {
        match (&self.node, &self.tls) {
            (Some(node), _) => node.port,
            (None, Some(tls)) => tls.port,
            (None, None) => self.port,
        }
    }

    /// The server's name on its network, if it is on one.
    pub fn node_name(&self) -> Option<&str> {
        self.node.as_ref().map(|node| node.name.as_str())
    }

    /// The server's process id, while it runs (for fault tests that pause it).
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(|p| p.pid())
    }

    /// Turns keyspace notifications off and adds the ACL user `app` (password `app-pw`), who may
    /// run every command but `CONFIG`, so cannot turn them on: a deployment where a store's
    /// reconciler has only its periodic scan. Returns the user's URL.
    ///
    /// # Panics
    /// When the server refuses either command.
    pub async fn user_without_notifications(&self) -> String {
        redis_commands(
            &mut redis_connection(&self.url()).await,
            &[
                &["CONFIG", "SET", "notify-keyspace-events", ""],
                &[
                    "ACL", "SETUSER", "app", "on", ">app-pw", "~*", "&*", "+@all", "-config",
                ],
            ],
        )
        .await;
        format!("redis://app:app-pw@127.0.0.1:{}", self.port)
    }

    /// Kills the server with SIGKILL.
    pub fn kill(&mut self) {
        if let Some(mut p) = self.process.take() {
            p.kill();
        }
    }

    /// Starts the server again on the same port and directory (after [`RedisServer::kill`]).
    ///
    /// # Panics
    /// When it does not come back within 20 s.
    pub fn restart(&mut self) {
        self.kill();
        if let Err(e) = self.launch() {
            panic!("redis-server did not restart: {e}");
        }
    }
}

/// Writes `keys` with `value` in the Redis store's layout before its bucketed index, as a
/// store of an earlier version (or a restore of its dump) left them: each value, its metadata
/// (`1:1:1:0` in `__kv:meta`), the one sorted set `__kv:idx`, in pipelines of 10,000 keys; and
/// the revision 1 unless there is one.
///
/// # Panics
/// When the server refuses a write.
pub async fn write_layout_before_buckets(
    con: &mut redis::aio::MultiplexedConnection,
    keys: impl IntoIterator<Item = Vec<u8>>,
    value: &[u8],
) {
    let mut keys = keys.into_iter().peekable();
    while keys.peek().is_some() {
        let mut pipe = redis::pipe();
        for key in keys.by_ref().take(10_000) {
            pipe.cmd("SET").arg(&key).arg(value).ignore();
            pipe.cmd("HSET")
                .arg("__kv:meta")
                .arg(&key)
                .arg("1:1:1:0")
                .ignore();
            pipe.cmd("ZADD").arg("__kv:idx").arg(0).arg(&key).ignore();
        }
        let () = pipe.query_async(con).await.unwrap();
    }
    let _: Option<String> = redis::cmd("SET")
        .arg("__kv:rev")
        .arg(1)
        .arg("NX")
        .query_async(con)
        .await
        .unwrap();
}

/// A raw redis-rs connection to `url` (a harness server, any database): the client of
/// "another program" in foreign-writer tests.
///
/// # Panics
/// When the server cannot be reached.
pub async fn redis_connection(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .expect("a Redis URL")
        .get_multiplexed_async_connection()
        .await
        .expect("connect a raw Redis client")
}

/// A `redis-server` of the caller's own (one a test may pause or reconfigure without holding
/// other tests up) and a store on it with the default configuration; `None` when no
/// `redis-server` can be found (and servers are not required).
///
/// # Panics
/// When the store cannot connect.
pub async fn own_redis_store() -> Option<(RedisServer, keyplane_redis::RedisStore)> {
    let server = RedisServer::start()?;
    let store = keyplane_redis::RedisStore::open(keyplane_redis::RedisConfig::new(server.url()))
        .await
        .expect("connect");
    Some((server, store))
}

/// Runs raw commands, each its name then its arguments, in order: another program writing the
/// documents' layouts.
///
/// # Panics
/// When a command fails.
pub async fn redis_commands(con: &mut redis::aio::MultiplexedConnection, commands: &[&[&str]]) {
    for args in commands {
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        let _: redis::Value = cmd.query_async(&mut *con).await.unwrap();
    }
}

/// Calls of `cmd` the server has served, from `INFO commandstats` (0 before the first).
///
/// # Panics
/// When the server cannot be asked.
pub async fn redis_command_calls(con: &mut redis::aio::MultiplexedConnection, cmd: &str) -> u64 {
    redis_command_stat(con, cmd, "calls").await
}

/// One figure of `cmd` in `INFO commandstats` (`calls`, `usec`, `rejected_calls`,
/// `failed_calls`; 0 before the first call).
///
/// # Panics
/// When the server cannot be asked.
pub async fn redis_command_stat(
    con: &mut redis::aio::MultiplexedConnection,
    cmd: &str,
    field: &str,
) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(con)
        .await
        .expect("INFO commandstats");
    let field = format!("{field}=");
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("cmdstat_{cmd}:")))
        .and_then(|stats| {
            stats
                .split(',')
                .find_map(|f| f.strip_prefix(field.as_str()))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The items of the list at `key` (`LRANGE key 0 -1`), on a server or a cluster.
///
/// # Panics
/// When the server cannot be asked or the key holds no list.
pub async fn redis_lrange(con: &mut impl redis::aio::ConnectionLike, key: &str) -> Vec<String> {
    redis::cmd("LRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .query_async(con)
        .await
        .expect("LRANGE")
}

/// Every key `SCAN ... MATCH pattern` finds, as `redis-cli --scan --pattern` lists them.
pub async fn redis_scan(con: &mut redis::aio::MultiplexedConnection, pattern: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, page): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(1000)
            .query_async(con)
            .await
            .expect("SCAN");
        keys.extend(page);
        if next == 0 {
            return keys;
        }
        cursor = next;
    }
}

/// The Redis server shared by every test of this test binary, started on first use.
pub async fn shared_redis() -> Option<&'static RedisServer> {
    static SERVER: OnceLock<Option<RedisServer>> = OnceLock::new();
    // Start-up blocks for up to a second or two, once per test binary.
    SERVER.get_or_init(RedisServer::start).as_ref()
}

/// A free loopback port whose cluster bus port (the port + 10000) is free too.
fn cluster_port() -> u16 {
    loop {
        let port = free_port();
        if port < 55_000 && std::net::TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
}

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
    pub fn start_tls(certs: &super::TestCerts) -> Option<Self> {
        Self::start_with(Some(certs))
    }

    fn start_with(tls: Option<&super::TestCerts>) -> Option<Self> {
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

impl RedisServer {
    /// A blocking connection to the server (the cluster and Sentinel harnesses use it).
    pub(crate) fn sync_connection(&self) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(self.url())?.get_connection()
    }
}

/// The Redis cluster shared by every test of this test binary, started on first use.
pub async fn shared_redis_cluster() -> Option<&'static RedisCluster> {
    static CLUSTER: OnceLock<Option<RedisCluster>> = OnceLock::new();
    // Forming the cluster blocks for a few seconds, once per test binary.
    CLUSTER.get_or_init(RedisCluster::start).as_ref()
}
