//! `redis-server` processes.

use super::partition::Network;
use super::process::{
    ServerProcess, cluster_port, exchange, free_port, require_binary, wait_ready,
};
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub(super) mod cluster;

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
/// "another program" in foreign-writer tests. Like `redis-cli`, it waits for a reply as long
/// as the server takes (30 s at most), rather than redis-rs's default of half a second: a
/// large reply (`SLOWLOG GET` of every command) on a loaded machine is no failure.
///
/// # Panics
/// When the server cannot be reached.
pub async fn redis_connection(url: &str) -> redis::aio::MultiplexedConnection {
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(30)))
        .set_response_timeout(Some(Duration::from_secs(30)));
    redis::Client::open(url)
        .expect("a Redis URL")
        .get_multiplexed_async_connection_with_config(&config)
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

impl RedisServer {
    /// A blocking connection to the server (the cluster and Sentinel harnesses use it).
    pub(crate) fn sync_connection(&self) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(self.url())?.get_connection()
    }
}
