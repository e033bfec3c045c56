//! `redis-server` processes.

use super::process::{ServerProcess, exchange, free_port, require_binary, wait_ready};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// A `redis-server` on a free loopback port with its own temporary directory.
pub struct RedisServer {
    binary: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    aof: bool,
    process: Option<ServerProcess>,
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
        let binary = require_binary("redis-server", "redis-server")?;
        let mut dir = tempfile::Builder::new()
            .prefix("kv-redis-")
            .tempdir()
            .expect("temp dir");
        let mut last_error = String::new();
        for _ in 0..3 {
            let mut server = RedisServer {
                binary: binary.clone(),
                dir,
                port: free_port(),
                aof,
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

    /// The server's process id, while it runs (for fault tests that pause it).
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(|p| p.pid())
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
