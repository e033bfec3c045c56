//! Network partitions on loopback: a TCP proxy in front of each server port, which knows
//! which node opened each connection and stops the traffic between the nodes a partition
//! separates.
//!
//! Every address a server advertises to its peers (an etcd member's peer URL, a Redis
//! replica's or sentinel's announced port) and every address the client is given is a
//! proxy's. A proxy is made for a node and the port it fronts ([`Network::proxy`]), so the
//! network knows each node's own ports. It tells a connection's source by the process at
//! its other end: it finds the connecting socket in `/proc/net/tcp` by its two ends, the
//! process whose file descriptors hold it, and the node whose port that process listens
//! on. This process (the test's clients) is the node [`CLIENT`]; a connection from any
//! other process is counted ([`Network::unidentified`]), since a cut would not hold it.
//!
//! A cut behaves as a partition does to TCP: nothing passes either way on a connection
//! between separated nodes, while the connections stay open; a new connection is accepted
//! and then hears nothing. Data held during the cut is delivered when it heals, as TCP
//! delivers its retransmissions, unless a side gave up and closed first. Nothing outside
//! the run's own proxies is touched: no firewall, no namespace, no other process.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// The node of every connection whose process was not named: the test's clients.
pub const CLIENT: &str = "client";

/// The proxies of one run and the partition between its nodes.
pub struct Network {
    shared: Arc<Shared>,
    /// Taken on drop, which may happen inside another runtime.
    runtime: Option<tokio::runtime::Runtime>,
}

struct Shared {
    /// Each node's own ports (the ports its proxies front) to its name.
    ports: Mutex<HashMap<u16, String>>,
    /// Process ids already told apart, to their node (`None`: not a node).
    processes: Mutex<HashMap<u32, Option<String>>>,
    /// Connections from a process that is neither a node nor this one.
    unidentified: std::sync::atomic::AtomicU64,
    /// The pairs of nodes that cannot reach each other, each pair in both orders.
    cut: Mutex<HashSet<(String, String)>>,
    /// Bumped at every change of `cut`, for the pumps that wait for a heal.
    changes: watch::Sender<u64>,
    /// How many times each node's connections were dropped ([`Network::drop_connections`]),
    /// for the relays, which end when their node's count moves.
    drops: watch::Sender<HashMap<String, u64>>,
}

impl Network {
    /// A network with no proxy and no cut, whose proxies run on a thread of their own (so
    /// that they keep forwarding while a test blocks).
    ///
    /// # Panics
    /// When the proxies' runtime cannot start.
    pub fn new() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("kv-partition-proxy")
            .enable_all()
            .build()
            .expect("the proxies' runtime");
        Network {
            shared: Arc::new(Shared {
                ports: Mutex::new(HashMap::new()),
                processes: Mutex::new(HashMap::new()),
                unidentified: std::sync::atomic::AtomicU64::new(0),
                cut: Mutex::new(HashSet::new()),
                changes: watch::channel(0).0,
                drops: watch::channel(HashMap::new()).0,
            }),
            runtime: Some(runtime),
        }
    }

    fn runtime(&self) -> &tokio::runtime::Runtime {
        self.runtime
            .as_ref()
            .expect("the proxies' runtime runs until drop")
    }

    /// How many connections came from a process that is neither a node (one listening on a
    /// port a proxy fronts) nor this one: a cut does not hold them, so a run that sees any
    /// cannot trust its partitions.
    pub fn unidentified(&self) -> u64 {
        self.shared
            .unidentified
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Starts a proxy for the node `node` in front of the loopback port `target`, and
    /// returns the loopback port it listens on: the address the node is known by.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub fn proxy(&self, node: &str, target: u16) -> u16 {
        // Bound here, without entering the proxies' runtime (the caller may be inside
        // another one), and handed to it.
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .expect("a loopback port for a proxy");
        let port = listener.local_addr().expect("the proxy's address").port();
        lock(&self.shared.ports).insert(target, node.to_string());
        let shared = Arc::clone(&self.shared);
        let node = node.to_string();
        self.runtime().spawn(async move {
            match TcpListener::from_std(listener) {
                Ok(listener) => serve(listener, port, target, node, shared).await,
                Err(e) => eprintln!("partition proxy for {node} did not start: {e}"),
            }
        });
        port
    }

    /// Separates the nodes of `a` from those of `b` (both directions), on top of any cut
    /// already made.
    pub fn cut(&self, a: &[&str], b: &[&str]) {
        let mut cut = lock(&self.shared.cut);
        for x in a {
            for y in b {
                cut.insert((x.to_string(), y.to_string()));
                cut.insert((y.to_string(), x.to_string()));
            }
        }
        drop(cut);
        self.shared.changes.send_modify(|n| *n += 1);
    }

    /// Heals every cut: held traffic flows again.
    pub fn heal(&self) {
        lock(&self.shared.cut).clear();
        self.shared.changes.send_modify(|n| *n += 1);
    }

    /// Closes every connection relayed to `node` now, both ways, as a proxy restart or an
    /// operator killing the clients would: each side reads the end of its stream. New
    /// connections are relayed as before.
    pub fn drop_connections(&self, node: &str) {
        self.shared
            .drops
            .send_modify(|drops| *drops.entry(node.to_string()).or_default() += 1);
    }

    /// Whether `a` and `b` are separated now.
    pub fn is_cut(&self, a: &str, b: &str) -> bool {
        self.shared.is_cut(a, b)
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        // Without waiting: a blocking shutdown panics inside another runtime.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Default for Network {
    fn default() -> Self {
        Self::new()
    }
}

impl Shared {
    fn is_cut(&self, a: &str, b: &str) -> bool {
        lock(&self.cut).contains(&(a.to_string(), b.to_string()))
    }

    /// Returns once `a` and `b` are not separated.
    async fn open(&self, a: &str, b: &str) {
        let mut changes = self.changes.subscribe();
        while self.is_cut(a, b) {
            if changes.changed().await.is_err() {
                return;
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Accepts connections on `listener` (port `port`) for `node` and relays each to `target`.
async fn serve(listener: TcpListener, port: u16, target: u16, node: String, shared: Arc<Shared>) {
    loop {
        let Ok((inbound, peer)) = listener.accept().await else {
            // Out of descriptors, say: try again shortly rather than spin.
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            continue;
        };
        let from = source(&shared, peer, port);
        let (node, shared) = (node.clone(), Arc::clone(&shared));
        tokio::spawn(async move {
            // A cut is in force from the first byte: wait for the heal before dialling.
            shared.open(&from, &node).await;
            let Ok(outbound) = TcpStream::connect(("127.0.0.1", target)).await else {
                return;
            };
            let _ = inbound.set_nodelay(true);
            let _ = outbound.set_nodelay(true);
            let (in_read, in_write) = inbound.into_split();
            let (out_read, out_write) = outbound.into_split();
            let mut drops = shared.drops.subscribe();
            let dropped = drops.borrow_and_update().get(&node).copied();
            let ends = (from, node.clone());
            let there = pump(in_read, out_write, ends.clone(), Arc::clone(&shared));
            let back = pump(out_read, in_write, ends, shared);
            // Dropping the pumps closes both sockets.
            tokio::select! {
                _ = async { tokio::join!(there, back) } => {}
                _ = drops.wait_for(|drops| drops.get(&node).copied() != dropped) => {}
            }
        });
    }
}

/// Copies from `from` to `to` while the two nodes are not separated; holds the data read
/// during a cut (and the end of the stream) until it heals.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    (a, b): (String, String),
    shared: Arc<Shared>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let read = from.read(&mut buf).await;
        shared.open(&a, &b).await;
        match read {
            Ok(0) | Err(_) => {
                let _ = to.shutdown().await;
                return;
            }
            Ok(n) => {
                if to.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// The node whose process opened the connection from `peer` to the proxy on `port`: the
/// node listening on a port of the process at the other end, [`CLIENT`] for this process.
/// A connection from any other process (or one `/proc` cannot place) counts as
/// unidentified and is taken for a client's.
fn source(shared: &Shared, peer: SocketAddr, port: u16) -> String {
    let tables = Tables::read();
    let owner = tables
        .connecting_inode(peer, port)
        .and_then(|inode| owner_of(&format!("socket:[{inode}]")));
    let node = match owner {
        Some(pid) if pid == std::process::id() => return CLIENT.to_string(),
        Some(pid) => {
            let known = lock(&shared.processes).get(&pid).cloned();
            known.unwrap_or_else(|| {
                let node = node_of(shared, &tables, pid);
                lock(&shared.processes).insert(pid, node.clone());
                node
            })
        }
        None => None,
    };
    node.unwrap_or_else(|| {
        shared
            .unidentified
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        CLIENT.to_string()
    })
}

/// The node listening on one of the ports of process `pid`, if any.
fn node_of(shared: &Shared, tables: &Tables, pid: u32) -> Option<String> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    let ports = lock(&shared.ports).clone();
    fds.flatten().find_map(|fd| {
        let link = std::fs::read_link(fd.path()).ok()?;
        let inode = link
            .to_str()?
            .strip_prefix("socket:[")?
            .strip_suffix(']')?
            .parse()
            .ok()?;
        ports.get(tables.listening.get(&inode)?).cloned()
    })
}

/// The process whose file descriptors hold `socket` (`socket:[INODE]`).
fn owner_of(socket: &str) -> Option<u32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let fds = std::fs::read_dir(entry.path().join("fd")).ok()?;
            fds.flatten()
                .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == socket))
                .then_some(pid)
        })
}

/// The IPv4 TCP sockets of `/proc/net/tcp`: addresses are hex, the address in host byte
/// order; state `01` is established, `0A` listening; a socket in `TIME_WAIT` has inode 0.
struct Tables {
    /// `(local, remote)` of each established socket, to its inode.
    established: HashMap<(String, String), u64>,
    /// Each listening socket's inode, to its port.
    listening: HashMap<u64, u16>,
}

impl Tables {
    fn read() -> Self {
        let mut tables = Tables {
            established: HashMap::new(),
            listening: HashMap::new(),
        };
        let text = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(remote), Some(state), Some(inode)) =
                (fields.get(1), fields.get(2), fields.get(3), fields.get(9))
            else {
                continue;
            };
            let Ok(inode) = inode.parse::<u64>() else {
                continue;
            };
            if inode == 0 {
                continue;
            }
            match *state {
                "01" => {
                    tables
                        .established
                        .insert((local.to_string(), remote.to_string()), inode);
                }
                "0A" => {
                    let port = local
                        .rsplit(':')
                        .next()
                        .and_then(|p| u16::from_str_radix(p, 16).ok());
                    if let Some(port) = port {
                        tables.listening.insert(inode, port);
                    }
                }
                _ => {}
            }
        }
        tables
    }

    /// The inode of the connecting end of a loopback connection from `peer` to `port`.
    fn connecting_inode(&self, peer: SocketAddr, port: u16) -> Option<u64> {
        let SocketAddr::V4(peer) = peer else {
            return None;
        };
        let hex = |ip: [u8; 4], port: u16| format!("{:08X}:{port:04X}", u32::from_ne_bytes(ip));
        let key = (
            hex(peer.ip().octets(), peer.port()),
            hex([127, 0, 0, 1], port),
        );
        self.established.get(&key).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::time::Duration;

    fn echo_server() -> u16 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut stream = stream;
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = stream.read(&mut buf) {
                        if n == 0 || stream.write_all(&buf[..n]).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        port
    }

    fn round_trip(stream: &mut std::net::TcpStream, text: &[u8]) -> std::io::Result<Vec<u8>> {
        stream.write_all(text)?;
        let mut buf = vec![0u8; text.len()];
        stream.read_exact(&mut buf)?;
        Ok(buf)
    }

    #[test]
    fn a_cut_holds_the_traffic_and_a_heal_delivers_it() {
        let net = Network::new();
        let port = net.proxy("server", echo_server());
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        assert_eq!(round_trip(&mut stream, b"before").unwrap(), b"before");
        net.cut(&[CLIENT], &["server"]);
        assert!(net.is_cut("server", CLIENT));
        assert!(
            round_trip(&mut stream, b"during").is_err(),
            "a cut link answered"
        );
        // A new connection is accepted but hears nothing either.
        let mut fresh = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        fresh
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        assert!(
            round_trip(&mut fresh, b"new").is_err(),
            "a new connection answered"
        );
        net.heal();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut held = [0u8; 6];
        stream.read_exact(&mut held).unwrap();
        assert_eq!(
            &held, b"during",
            "the held data is delivered after the heal"
        );
        fresh
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut held = [0u8; 3];
        fresh.read_exact(&mut held).unwrap();
        assert_eq!(&held, b"new");
    }

    #[tokio::test]
    async fn a_proxy_starts_from_inside_another_runtime() {
        let net = Network::new();
        let port = net.proxy("server", echo_server());
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        stream.write_all(b"hi").await.unwrap();
        let mut buf = [0u8; 2];
        stream.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"hi");
        // Dropped inside this runtime: the proxies' runtime shuts down in the background.
        drop(net);
    }

    #[test]
    fn a_connection_is_known_by_the_process_that_opened_it() {
        let net = Network::new();
        let target = echo_server();
        let port = net.proxy("server", target);
        // This process listens on no node's port: it is the client.
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        assert_eq!(round_trip(&mut stream, b"a").unwrap(), b"a");
        net.cut(&["other"], &["server"]);
        assert_eq!(
            round_trip(&mut stream, b"b").unwrap(),
            b"b",
            "a cut of another node"
        );
        net.cut(&[CLIENT], &["server"]);
        stream
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        assert!(
            round_trip(&mut stream, b"c").is_err(),
            "the client's cut did not apply"
        );
        assert_eq!(net.unidentified(), 0);
    }

    #[test]
    fn another_process_is_known_by_the_port_it_listens_on() {
        let net = Network::new();
        let port = net.proxy("server", echo_server());
        // A process of its own that listens on a node's port, then connects through the
        // proxy: python, as a stand-in for a server that dials its peers.
        let node_port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let _ = net.proxy("peer", node_port);
        net.cut(&["peer"], &["server"]);
        let script = format!(
            "import socket\n\
             l = socket.socket(); l.bind(('127.0.0.1', {node_port})); l.listen()\n\
             c = socket.create_connection(('127.0.0.1', {port})); c.settimeout(0.5)\n\
             c.sendall(b'x')\n\
             try:\n    print('answered' if c.recv(1) else 'closed')\n\
             except socket.timeout:\n    print('silent')\n"
        );
        let Ok(out) = std::process::Command::new("python3")
            .arg("-c")
            .arg(&script)
            .output()
        else {
            eprintln!("SKIP: no python3 to play another process");
            return;
        };
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "silent");
        assert_eq!(net.unidentified(), 0);
    }
}
