//! Network partitions on loopback: a TCP proxy in front of each server port, which knows
//! which of the run's processes opened each connection and stops the traffic between the
//! nodes a partition separates.
//!
//! Every address a server advertises to its peers (an etcd member's peer URL, a Redis
//! replica's or sentinel's announced port) and every address the client is given is a
//! proxy's. The proxy tells a connection's source from its process: it finds the socket
//! in `/proc/net/tcp` by its two ends, then the process whose file descriptors hold that
//! socket among the processes named with [`Network::name_process`]. Any other process (the
//! test's own clients) is the node [`CLIENT`].
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
    /// Process id to node name.
    processes: Mutex<HashMap<u32, String>>,
    /// The pairs of nodes that cannot reach each other, each pair in both orders.
    cut: Mutex<HashSet<(String, String)>>,
    /// Bumped at every change of `cut`, for the pumps that wait for a heal.
    changes: watch::Sender<u64>,
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
                processes: Mutex::new(HashMap::new()),
                cut: Mutex::new(HashSet::new()),
                changes: watch::channel(0).0,
            }),
            runtime: Some(runtime),
        }
    }

    fn runtime(&self) -> &tokio::runtime::Runtime {
        self.runtime.as_ref().expect("the proxies' runtime runs until drop")
    }

    /// Names process `pid` as the node `node`: the connections it opens come from `node`.
    /// Call it as soon as the process is spawned, before it connects anywhere.
    pub fn name_process(&self, pid: u32, node: &str) {
        lock(&self.shared.processes).insert(pid, node.to_string());
    }

    /// Starts a proxy for the node `node` in front of the loopback port `target`, and
    /// returns the loopback port it listens on: the address the node is known by.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub fn proxy(&self, node: &str, target: u16) -> u16 {
        let listener = self
            .runtime()
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("a loopback port for a proxy");
        let port = listener.local_addr().expect("the proxy's address").port();
        let shared = Arc::clone(&self.shared);
        let node = node.to_string();
        self.runtime()
            .spawn(async move { serve(listener, port, target, node, shared).await });
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
            let ends = (from, node);
            let there = pump(in_read, out_write, ends.clone(), Arc::clone(&shared));
            let back = pump(out_read, in_write, ends, shared);
            tokio::join!(there, back);
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

/// The node whose process opened the connection from `peer` to the proxy on `port`:
/// [`CLIENT`] when it is none of the named processes, or when `/proc` cannot say.
fn source(shared: &Shared, peer: SocketAddr, port: u16) -> String {
    let Some(inode) = socket_inode(peer, port) else {
        return CLIENT.to_string();
    };
    let wanted = format!("socket:[{inode}]");
    let processes = lock(&shared.processes).clone();
    for (pid, node) in processes {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|link| link.as_os_str() == wanted.as_str())
        });
        if holds {
            return node;
        }
    }
    CLIENT.to_string()
}

/// The inode of the connecting end of a loopback connection from `peer` to port `port`,
/// from `/proc/net/tcp` (addresses there are hex, the IPv4 address in host byte order).
fn socket_inode(peer: SocketAddr, port: u16) -> Option<u64> {
    let SocketAddr::V4(peer) = peer else {
        return None;
    };
    let local = format!(
        "{:08X}:{:04X}",
        u32::from_ne_bytes(peer.ip().octets()),
        peer.port()
    );
    let remote = format!(
        "{:08X}:{:04X}",
        u32::from_ne_bytes([127, 0, 0, 1]),
        port
    );
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields.get(1) == Some(&local.as_str()) && fields.get(2) == Some(&remote.as_str()))
            .then(|| fields.get(9)?.parse().ok())
            .flatten()
    })
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
        assert!(round_trip(&mut stream, b"during").is_err(), "a cut link answered");
        // A new connection is accepted but hears nothing either.
        let mut fresh = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        fresh
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        assert!(round_trip(&mut fresh, b"new").is_err(), "a new connection answered");
        net.heal();
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut held = [0u8; 6];
        stream.read_exact(&mut held).unwrap();
        assert_eq!(&held, b"during", "the held data is delivered after the heal");
        fresh.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut held = [0u8; 3];
        fresh.read_exact(&mut held).unwrap();
        assert_eq!(&held, b"new");
    }

    #[test]
    fn a_connection_is_known_by_the_process_that_opened_it() {
        let net = Network::new();
        let port = net.proxy("server", echo_server());
        // This process opens it: as a named process it is `me`, unnamed it is the client.
        net.name_process(std::process::id(), "me");
        net.cut(&["me"], &["server"]);
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        assert!(round_trip(&mut stream, b"x").is_err(), "the cut did not apply to `me`");
        net.heal();
        net.cut(&[CLIENT], &["server"]);
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut held = [0u8; 1];
        stream.read_exact(&mut held).unwrap();
        assert_eq!(
            round_trip(&mut stream, b"y").unwrap(),
            b"y",
            "a cut of the clients applied to a named process"
        );
    }
}
