//! `etcd` processes: single servers and a 3-member cluster, optionally behind the proxies
//! of a [`Network`] that can partition it.

use super::partition::Network;
use super::process::{ServerProcess, exchange, free_port, require_binary, wait_ready};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// One etcd member's identity: its name, ports and data directory.
struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    /// The ports the member is known by: its own, or its proxies' on a [`Network`].
    advertised_client: u16,
    advertised_peer: u16,
    process: Option<ServerProcess>,
}

impl Member {
    fn new(name: String, network: Option<&Network>) -> Self {
        let (client_port, peer_port) = (free_port(), free_port());
        let (advertised_client, advertised_peer) = match network {
            Some(net) => (net.proxy(&name, client_port), net.proxy(&name, peer_port)),
            None => (client_port, peer_port),
        };
        Member {
            name,
            client_port,
            peer_port,
            advertised_client,
            advertised_peer,
            process: None,
        }
    }

    fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.advertised_peer)
    }

    fn client_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.advertised_client)
    }

    fn direct_client_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// Starts the member; `initial_cluster` lists every member as `name=peer_url`.
    fn launch(
        &mut self,
        binary: &Path,
        root: &Path,
        initial_cluster: &str,
        token: &str,
    ) -> Result<(), String> {
        let data = root.join(&self.name);
        let mut cmd = Command::new(binary);
        cmd.arg("--name")
            .arg(&self.name)
            .arg("--data-dir")
            .arg(&data)
            .arg("--listen-client-urls")
            .arg(self.direct_client_url())
            .arg("--advertise-client-urls")
            .arg(self.client_url())
            .arg("--listen-peer-urls")
            .arg(format!("http://127.0.0.1:{}", self.peer_port))
            .arg("--initial-advertise-peer-urls")
            .arg(self.peer_url())
            .arg("--initial-cluster")
            .arg(initial_cluster)
            .arg("--initial-cluster-token")
            .arg(token)
            .args(["--initial-cluster-state", "new"])
            .args([
                "--logger",
                "zap",
                "--log-outputs",
                "stderr",
                "--log-level",
                "warn",
            ])
            // Keep start-up and elections quick on a loaded two-core machine.
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
            .args(["--snapshot-count", "100000"]);
        let log = root.join(format!("{}.log", self.name));
        let mut process = ServerProcess::spawn(cmd, &log, root).map_err(|e| e.to_string())?;
        let port = self.client_port;
        wait_ready(&mut process, Duration::from_secs(30), || {
            exchange(port, b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
                .contains("\"health\":\"true\"")
        })?;
        self.process = Some(process);
        Ok(())
    }

    fn kill(&mut self) {
        if let Some(mut p) = self.process.take() {
            p.kill();
        }
    }
}

/// Starts members and waits until each reports healthy. A cluster's members start
/// concurrently because each waits for a quorum.
fn launch_all(
    members: &mut [Member],
    binary: &Path,
    root: &Path,
    token: &str,
) -> Result<(), String> {
    let initial: Vec<String> = members
        .iter()
        .map(|m| format!("{}={}", m.name, m.peer_url()))
        .collect();
    let initial = initial.join(",");
    std::thread::scope(|s| {
        let handles: Vec<_> = members
            .iter_mut()
            .map(|m| {
                let initial = &initial;
                s.spawn(move || m.launch(binary, root, initial, token))
            })
            .collect();
        // Every thread is joined (the scope guarantees it); the first failure is reported.
        handles
            .into_iter()
            .try_for_each(|h| h.join().expect("launch thread"))
    })
}

/// A single-member etcd on free loopback ports with its own temporary data directory.
pub struct EtcdServer {
    cluster: EtcdCluster,
}

impl EtcdServer {
    /// Starts a single-member etcd. `None` (after a SKIP line) when `etcd` is missing and
    /// servers are not required.
    pub fn start() -> Option<Self> {
        EtcdCluster::start(1).map(|cluster| EtcdServer { cluster })
    }

    /// The client endpoint, `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        self.cluster.endpoints().remove(0)
    }

    /// Kills the server with SIGKILL.
    pub fn kill(&mut self) {
        self.cluster.kill(0);
    }

    /// Starts the server again with the same ports and data (after [`EtcdServer::kill`]).
    ///
    /// # Panics
    /// When it does not come back within 30 s.
    pub fn restart(&mut self) {
        self.cluster.restart(0);
    }
}

/// An etcd cluster of `n` members on loopback, for fault tests: kill and restart members.
pub struct EtcdCluster {
    binary: PathBuf,
    dir: tempfile::TempDir,
    token: String,
    members: Vec<Member>,
    network: Option<Arc<Network>>,
}

impl EtcdCluster {
    /// Starts `n` members (3 for fault tests) and waits until each is healthy. `None` (after a
    /// SKIP line) when `etcd` is missing and servers are not required.
    pub fn start(n: usize) -> Option<Self> {
        Self::start_on(n, None)
    }

    /// Starts `n` members as [`EtcdCluster::start`] does, each known to the others and to
    /// clients only through proxies of a [`Network`] of its own, whose nodes are the
    /// members, named `m0`, `m1`..., and the clients ([`super::CLIENT`]).
    pub fn start_partitionable(n: usize) -> Option<Self> {
        Self::start_on(n, Some(Arc::new(Network::new())))
    }

    fn start_on(n: usize, network: Option<Arc<Network>>) -> Option<Self> {
        let binary = require_binary("etcd", "etcd-server")?;
        let mut last_error = String::new();
        for _ in 0..3 {
            let dir = tempfile::Builder::new()
                .prefix("kv-etcd-")
                .tempdir()
                .expect("temp dir");
            let token = format!("kv-{}", uuid::Uuid::new_v4().simple());
            let net = network.as_deref();
            let mut members: Vec<Member> =
                (0..n).map(|i| Member::new(format!("m{i}"), net)).collect();
            match launch_all(&mut members, &binary, dir.path(), &token) {
                Ok(()) => {
                    return Some(EtcdCluster {
                        binary,
                        dir,
                        token,
                        members,
                        network,
                    });
                }
                Err(e) => {
                    members.iter_mut().for_each(Member::kill);
                    last_error = e;
                }
            }
        }
        panic!("etcd did not start: {last_error}");
    }

    /// Every member's client endpoint, in member order (its proxy's, on a network).
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(Member::client_url).collect()
    }

    /// Every member's own client endpoint, in member order: on a network, the way around
    /// its proxies (for the harness's questions, which a partition must not stop).
    pub fn direct_endpoints(&self) -> Vec<String> {
        self.members.iter().map(Member::direct_client_url).collect()
    }

    /// The network the cluster runs behind ([`EtcdCluster::start_partitionable`]).
    pub fn network(&self) -> Option<&Network> {
        self.network.as_deref()
    }

    /// Member `i`'s name, its node on the network.
    pub fn name(&self, i: usize) -> &str {
        &self.members[i].name
    }

    /// The number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether the cluster has no members (never, once started).
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Member `i`'s process id, while it runs (for fault tests that pause it).
    pub fn pid(&self, i: usize) -> Option<u32> {
        self.members[i].process.as_ref().map(|p| p.pid())
    }

    /// Kills member `i` with SIGKILL.
    pub fn kill(&mut self, i: usize) {
        self.members[i].kill();
    }

    /// Restarts member `i` with its data and ports (after [`EtcdCluster::kill`]).
    ///
    /// # Panics
    /// When it does not become healthy within 30 s.
    pub fn restart(&mut self, i: usize) {
        self.members[i].kill();
        let initial: Vec<String> = self
            .members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url()))
            .collect();
        let (binary, root, token) = (&self.binary, self.dir.path(), &self.token);
        if let Err(e) = self.members[i].launch(binary, root, &initial.join(","), token) {
            panic!("etcd member {i} did not restart: {e}");
        }
    }
}

/// The etcd server shared by every test of this test binary, started on first use.
pub async fn shared_etcd() -> Option<&'static EtcdServer> {
    static SERVER: OnceLock<Option<EtcdServer>> = OnceLock::new();
    // Start-up blocks for a second or two, once per test binary.
    SERVER.get_or_init(EtcdServer::start).as_ref()
}
