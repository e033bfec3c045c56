//! Store URLs on the shared test servers, and a `kvctl` running in the background (a lease
//! keep-alive, a lock holder, an election, a watch), its stdout lines on a channel.

use keyplane_tests::harness::{key_root, redis_connection, shared_etcd, shared_redis};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The shared etcd, under a key root of its own named after `what`.
pub async fn etcd_url(what: &str) -> Option<String> {
    let server = shared_etcd().await?;
    let endpoint = server.endpoint();
    let host = endpoint.strip_prefix("http://").unwrap_or(&endpoint);
    Some(format!("etcd://{host}?namespace={}", key_root(what)))
}

/// A Redis database of its own, emptied.
pub async fn redis_url(database: u8) -> Option<String> {
    let server = shared_redis().await?;
    let url = format!("{}/{database}", server.url());
    let mut con = redis_connection(url.as_str()).await;
    let _: () = redis::cmd("FLUSHDB").query_async(&mut con).await.unwrap();
    Some(url)
}

/// A raw Redis command, as another program (`redis-cli`) sends it; panics on an error reply.
pub async fn raw(con: &redis::aio::MultiplexedConnection, cmd: &mut redis::Cmd) -> redis::Value {
    cmd.query_async(&mut con.clone())
        .await
        .unwrap_or_else(|e| panic!("raw command: {e}"))
}

/// A redb store (the default embedded store) in `dir`.
pub fn redb_url(dir: &tempfile::TempDir) -> String {
    format!("redb://{}", dir.path().join("store.redb").display())
}

/// A sled store in `dir`.
pub fn sled_url(dir: &tempfile::TempDir) -> String {
    format!("sled://{}", dir.path().join("db").display())
}

/// A `kvctl` running in the background, its stdout lines on a channel; killed when dropped.
pub struct Background {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Background {
    /// `kvctl --store URL ARGS...`, nothing taken from the environment (as
    /// [`kvctl`](super::kvctl)), stdin closed.
    pub fn start(url: &str, args: &[&str]) -> Self {
        Self::start_with(url, args, Stdio::null())
    }

    /// As [`start`](Self::start), with this stdin.
    pub fn start_with(url: &str, args: &[&str], stdin: Stdio) -> Self {
        let mut cmd = super::process_without_store();
        cmd.args(["--store", url]).args(args).stdin(stdin);
        Self::spawn(cmd)
    }

    /// `cmd` (a `kvctl` set up by the test: its environment, its arguments) started with its
    /// stdout on the channel.
    pub fn spawn(mut cmd: std::process::Command) -> Self {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("kvctl starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Background { child, lines }
    }

    /// The next stdout line, waiting for it (generously: the machine is shared).
    pub fn next(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(30))
            .expect("kvctl printed a line")
    }

    /// The next stdout line if one comes within `timeout`.
    pub fn next_within(&self, timeout: Duration) -> Option<String> {
        self.lines.recv_timeout(timeout).ok()
    }

    /// The next stdout line as JSON.
    pub fn next_json(&self) -> Value {
        let line = self.next();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Whatever it has printed so far and not yet read, without waiting.
    pub fn printed(&self) -> Vec<String> {
        self.lines.try_iter().collect()
    }

    /// The child's stdin, when it was started with a piped one (closing it is the test's
    /// signal to some commands).
    pub fn take_stdin(&mut self) -> std::process::ChildStdin {
        self.child.stdin.take().expect("started with a piped stdin")
    }

    /// Waits for the process to end by itself; its exit code.
    pub fn wait(&mut self) -> i32 {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            assert!(
                std::time::Instant::now() < deadline,
                "kvctl did not end in time"
            );
            std::thread::park_timeout(Duration::from_millis(20));
        }
    }

    /// Sends Ctrl-C and waits for the process to end; its exit code.
    pub fn interrupt(&mut self) -> i32 {
        let sent = std::process::Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success());
        self.wait()
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
