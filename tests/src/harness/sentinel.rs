//! A Redis deployment under Sentinel: one master, two replicas and three sentinels, every
//! process a `redis-server` on a free loopback port with its own directory, optionally
//! behind the proxies of a [`Network`] that can partition it.

use super::partition::Network;
use super::process::{ServerProcess, exchange, free_port, require_binary, wait_ready};
use super::redis::RedisServer;
use super::tls::TestCerts;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The name the sentinels monitor the master under.
pub const SENTINEL_MASTER: &str = "keyplane";

/// How long a failover may take before the harness gives up.
const FAILOVER_TIMEOUT: Duration = Duration::from_secs(30);

/// One master, two replicas and three sentinels (quorum 2) monitoring them as
/// [`SENTINEL_MASTER`]. The sentinels mark a silent master down after one second.
pub struct RedisSentinel {
    /// The data servers: the first started as the master, the others as its replicas.
    servers: Vec<RedisServer>,
    sentinels: Vec<SentinelProcess>,
    network: Option<Arc<Network>>,
    /// Whether every process speaks TLS ([`RedisSentinel::start_tls`]).
    tls: bool,
}

/// One `redis-server --sentinel`, with the configuration file it rewrites.
struct SentinelProcess {
    port: u16,
    /// The port it is known by: its proxy's on a network, else `port`.
    announced: u16,
    _dir: tempfile::TempDir,
    _process: ServerProcess,
}

impl RedisSentinel {
    /// Starts the deployment and waits until every sentinel knows both replicas and the
    /// other two sentinels. `None` (after a SKIP line) when `redis-server` is missing and
    /// servers are not required.
    ///
    /// # Panics
    /// When a process does not start, or the sentinels do not see the whole deployment
    /// within 30 s.
    pub fn start() -> Option<Self> {
        Self::start_on(None)
    }

    /// Starts the deployment as [`RedisSentinel::start`] does, every process known to the
    /// others and to clients only through proxies of a [`Network`] of its own, whose nodes
    /// are the data servers `r0` (the first master), `r1`, `r2`, the sentinels `s0`, `s1`,
    /// `s2`, and the clients ([`super::CLIENT`]).
    pub fn start_partitionable() -> Option<Self> {
        Self::start_on(Some(Arc::new(Network::new())))
    }

    /// Starts the deployment as [`RedisSentinel::start`] does, every process speaking TLS
    /// with the certificates of `certs` to its clients and to the others, and requiring a
    /// client certificate; [`RedisSentinel::url`] is then a `rediss+sentinel://` URL.
    pub fn start_tls(certs: &TestCerts) -> Option<Self> {
        Self::start_with(None, Some(certs))
    }

    fn start_on(network: Option<Arc<Network>>) -> Option<Self> {
        Self::start_with(network, None)
    }

    fn start_with(network: Option<Arc<Network>>, certs: Option<&TestCerts>) -> Option<Self> {
        let binary = require_binary("redis-server", "redis-server")?;
        let start = |i: usize, master: Option<u16>| match (&network, certs, master) {
            (Some(net), _, _) => RedisServer::start_on(net, &format!("r{i}"), master),
            (None, Some(certs), _) => RedisServer::start_tls(certs, master),
            (None, None, Some(master)) => RedisServer::start_replica_of(master),
            (None, None, None) => RedisServer::start(),
        };
        let master = start(0, None)?;
        let master_port = master.announced_port();
        let mut servers = vec![master];
        for i in 1..3 {
            servers.push(start(i, Some(master_port))?);
        }
        let sentinels = (0..3)
            .map(|i| SentinelProcess::start(&binary, master_port, network.as_deref(), certs, i))
            .collect::<Result<Vec<_>, String>>()
            .unwrap_or_else(|e| panic!("a sentinel did not start: {e}"));
        let deployment = RedisSentinel {
            servers,
            sentinels,
            network,
            tls: certs.is_some(),
        };
        deployment.wait("the sentinels to see the replicas and each other", |s| {
            let info = s.sentinel_query(|con| {
                redis::cmd("SENTINEL")
                    .arg("MASTER")
                    .arg(SENTINEL_MASTER)
                    .query::<Vec<String>>(con)
            })?;
            let field = |name: &str| {
                info.iter()
                    .position(|f| f == name)
                    .and_then(|i| info.get(i + 1))
                    .cloned()
                    .unwrap_or_default()
            };
            Ok(field("num-slaves") == "2" && field("num-other-sentinels") == "2")
        });
        deployment.wait("the replicas to sync", |s| {
            Ok(s.servers[1..]
                .iter()
                .all(|r| replication(r).is_ok_and(|info| info.contains("master_link_status:up"))))
        });
        Some(deployment)
    }

    /// The deployment's URL for the store: `redis+sentinel://` (`rediss+sentinel://` with
    /// TLS) with the three sentinels' addresses (their proxies' on a network, their TLS
    /// ports with TLS) and the master's name.
    pub fn url(&self) -> String {
        let sentinels: Vec<String> = self
            .sentinels
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.announced))
            .collect();
        let scheme = if self.tls { "rediss" } else { "redis" };
        format!(
            "{scheme}+sentinel://{}/{SENTINEL_MASTER}",
            sentinels.join(",")
        )
    }

    /// The sentinels' own ports (the harness asks them directly, around any proxy).
    pub fn sentinel_ports(&self) -> Vec<u16> {
        self.sentinels.iter().map(|s| s.port).collect()
    }

    /// The data servers' own ports (the harness asks them directly, around any proxy).
    pub fn server_ports(&self) -> Vec<u16> {
        self.servers.iter().map(RedisServer::port).collect()
    }

    /// The network the deployment runs behind ([`RedisSentinel::start_partitionable`]).
    pub fn network(&self) -> Option<&Network> {
        self.network.as_deref()
    }

    /// The name on the network of the data server known on `port`, as
    /// [`RedisServer::node_name`] gives it.
    pub fn node_name(&self, port: u16) -> Option<&str> {
        self.servers
            .iter()
            .find(|s| s.announced_port() == port || s.port() == port)
            .and_then(RedisServer::node_name)
    }

    /// The sentinels' names on the network (`s0`, `s1`, `s2`).
    pub fn sentinel_names(&self) -> Vec<String> {
        (0..self.sentinels.len()).map(|i| format!("s{i}")).collect()
    }

    /// Every data server's name on the network.
    pub fn server_names(&self) -> Vec<String> {
        self.servers
            .iter()
            .filter_map(|s| s.node_name().map(String::from))
            .collect()
    }

    /// The port the master is known by (its proxy's, on a network), as the first sentinel
    /// that answers reports it.
    ///
    /// # Panics
    /// When no sentinel answers.
    pub fn master_port(&self) -> u16 {
        self.sentinel_master()
            .unwrap_or_else(|e| panic!("no sentinel names the master: {e}"))
    }

    /// The data server on `port` (the master or a replica), by its own or its announced port.
    ///
    /// # Panics
    /// When no server of the deployment listens on `port`.
    pub fn server(&mut self, port: u16) -> &mut RedisServer {
        self.servers
            .iter_mut()
            .find(|s| s.port() == port || s.announced_port() == port)
            .unwrap_or_else(|| panic!("no server of the deployment on port {port}"))
    }

    /// Asks a sentinel to fail over (`SENTINEL FAILOVER`), then waits until every sentinel
    /// names another master, which says it is one, and returns its port.
    ///
    /// # Panics
    /// When the failover does not complete within 30 s.
    pub fn fail_over(&self) -> u16 {
        let old = self.master_port();
        self.sentinel_query(|con| {
            redis::cmd("SENTINEL")
                .arg("FAILOVER")
                .arg(SENTINEL_MASTER)
                .query::<()>(con)
        })
        .unwrap_or_else(|e| panic!("SENTINEL FAILOVER was refused: {e}"));
        self.wait_for_new_master(old)
    }

    /// Waits until every sentinel names a master other than the one on `old`, and that
    /// server says it is a master; returns its port.
    ///
    /// # Panics
    /// When that does not happen within 30 s.
    pub fn wait_for_new_master(&self, old: u16) -> u16 {
        self.try_wait_for_new_master(old)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`RedisSentinel::wait_for_new_master`], with an error in place of the panic.
    ///
    /// # Errors
    /// When no new master is agreed on within 30 s.
    pub fn try_wait_for_new_master(&self, old: u16) -> Result<u16, String> {
        let mut new = 0;
        self.try_wait("a new master", |s| {
            let mut named = Vec::new();
            for port in s.sentinel_ports() {
                let mut con = sentinel_connection(port)?;
                named.push(master_addr(&mut con)?);
            }
            let Some(&first) = named.first() else {
                return Ok(false);
            };
            if first == old || named.iter().any(|&p| p != first) {
                return Ok(false);
            }
            let promoted = s
                .servers
                .iter()
                .find(|r| r.announced_port() == first)
                .is_some_and(|r| replication(r).is_ok_and(|i| i.contains("role:master")));
            new = first;
            Ok(promoted)
        })?;
        Ok(new)
    }

    /// Waits until the other two data servers replicate the master known on `port` and are
    /// in sync with it (the sentinels reconfigure them after a failover).
    ///
    /// # Panics
    /// When that does not happen within 30 s.
    pub fn wait_for_replicas_of(&self, port: u16) {
        self.try_wait_for_replicas_of(port, None)
            .unwrap_or_else(|e| panic!("{e}"));
    }

    /// Waits until every data server but the master known on `port` and the one known on
    /// `except` replicates that master and is in sync with it.
    ///
    /// # Errors
    /// When that does not happen within 30 s.
    pub fn try_wait_for_replicas_of(&self, port: u16, except: Option<u16>) -> Result<(), String> {
        let master = format!("master_port:{port}\r\n");
        self.try_wait("the replicas to follow the master", |s| {
            Ok(s.servers
                .iter()
                .filter(|r| r.announced_port() != port && Some(r.announced_port()) != except)
                .all(|r| {
                    replication(r)
                        .is_ok_and(|i| i.contains(&master) && i.contains("master_link_status:up"))
                }))
        })
    }

    /// The master's port, from the first sentinel that answers.
    fn sentinel_master(&self) -> redis::RedisResult<u16> {
        self.sentinel_query(master_addr)
    }

    /// Runs `query` on the first sentinel that answers.
    fn sentinel_query<T>(
        &self,
        mut query: impl FnMut(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> redis::RedisResult<T> {
        let mut last = None;
        for port in self.sentinel_ports() {
            match sentinel_connection(port).and_then(|mut con| query(&mut con)) {
                Ok(answer) => return Ok(answer),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| (redis::ErrorKind::Io, "no sentinel").into()))
    }

    /// Polls `ready` every 50 ms for up to 30 s.
    ///
    /// # Panics
    /// When it is not ready by then.
    fn wait(&self, what: &str, ready: impl FnMut(&Self) -> redis::RedisResult<bool>) {
        self.try_wait(what, ready).unwrap_or_else(|e| panic!("{e}"));
    }

    /// Polls `ready` every 50 ms for up to 30 s; the error says what it waited for.
    fn try_wait(
        &self,
        what: &str,
        mut ready: impl FnMut(&Self) -> redis::RedisResult<bool>,
    ) -> Result<(), String> {
        let deadline = Instant::now() + FAILOVER_TIMEOUT;
        let mut last = String::new();
        loop {
            match ready(self) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => last = e.to_string(),
            }
            if Instant::now() > deadline {
                return Err(format!("waited 30 s for {what}; last error: {last}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl SentinelProcess {
    /// Writes a sentinel's configuration (it must be writable: sentinels record what they
    /// learn in it) and starts it; on a `network`, as the node `s{index}` behind a proxy
    /// whose port it announces.
    fn start(
        binary: &PathBuf,
        master_port: u16,
        network: Option<&Network>,
        certs: Option<&TestCerts>,
        index: usize,
    ) -> Result<Self, String> {
        let dir = tempfile::Builder::new()
            .prefix("kv-sentinel-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let port = free_port();
        let name = format!("s{index}");
        let tls_port = certs.map(|_| free_port());
        let announced = match (network, tls_port) {
            (Some(net), _) => net.proxy(&name, port),
            (None, Some(tls_port)) => tls_port,
            (None, None) => port,
        };
        let conf = dir.path().join("sentinel.conf");
        let mut text = format!(
            "port {port}\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\n\
             sentinel resolve-hostnames no\n\
             sentinel monitor {SENTINEL_MASTER} 127.0.0.1 {master_port} 2\n\
             sentinel down-after-milliseconds {SENTINEL_MASTER} 1000\n\
             sentinel failover-timeout {SENTINEL_MASTER} 10000\n\
             sentinel parallel-syncs {SENTINEL_MASTER} 2\n"
        );
        if let (Some(certs), Some(tls_port)) = (certs, tls_port) {
            // Clients, the other sentinels and the data servers, all over TLS.
            text.push_str(&format!(
                "tls-port {tls_port}\ntls-replication yes\ntls-auth-clients yes\n\
                 tls-ca-cert-file {}\ntls-cert-file {}\ntls-key-file {}\n\
                 tls-client-cert-file {}\ntls-client-key-file {}\n",
                certs.path("ca.pem").display(),
                certs.path("server.pem").display(),
                certs.path("server-key.pem").display(),
                certs.path("client.pem").display(),
                certs.path("client-key.pem").display(),
            ));
        }
        if network.is_some() {
            text.push_str(&format!(
                "sentinel announce-ip 127.0.0.1\nsentinel announce-port {announced}\n"
            ));
        }
        std::fs::write(&conf, text).map_err(|e| e.to_string())?;
        let mut cmd = Command::new(binary);
        cmd.arg(&conf)
            .arg("--sentinel")
            .arg("--dir")
            .arg(dir.path());
        let log = dir.path().join("sentinel.log");
        let mut process = ServerProcess::spawn(cmd, &log, dir.path()).map_err(|e| e.to_string())?;
        wait_ready(&mut process, Duration::from_secs(20), || {
            exchange(port, b"PING\r\n").starts_with("+PONG\r\n")
        })?;
        Ok(SentinelProcess {
            port,
            announced,
            _dir: dir,
            _process: process,
        })
    }
}

/// A blocking connection to the sentinel on `port`.
fn sentinel_connection(port: u16) -> redis::RedisResult<redis::Connection> {
    redis::Client::open(format!("redis://127.0.0.1:{port}"))?.get_connection()
}

/// The master's port as the sentinel of `con` names it.
fn master_addr(con: &mut redis::Connection) -> redis::RedisResult<u16> {
    let (_host, port): (String, u16) = redis::cmd("SENTINEL")
        .arg("GET-MASTER-ADDR-BY-NAME")
        .arg(SENTINEL_MASTER)
        .query(con)?;
    Ok(port)
}

/// `INFO replication` of a data server.
fn replication(server: &RedisServer) -> redis::RedisResult<String> {
    redis::cmd("INFO")
        .arg("replication")
        .query(&mut server.sync_connection()?)
}

/// The Sentinel deployment shared by every test of this test binary, started on first use.
pub async fn shared_redis_sentinel() -> Option<&'static RedisSentinel> {
    static DEPLOYMENT: OnceLock<Option<RedisSentinel>> = OnceLock::new();
    // Starting it blocks for a few seconds, once per test binary.
    DEPLOYMENT.get_or_init(RedisSentinel::start).as_ref()
}
