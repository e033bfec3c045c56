//! Spawning, watching and stopping server processes.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Whether a missing server binary must fail the test (`KV_REQUIRE_SERVERS=1`).
pub fn servers_required() -> bool {
    std::env::var("KV_REQUIRE_SERVERS").is_ok_and(|v| v == "1")
}

/// Finds an executable on `PATH`, or in `/usr/bin`, `/usr/sbin`, `/usr/local/bin`.
pub fn find_binary(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/bin", "/usr/sbin", "/usr/local/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Resolves a server binary, or says why there is none: panics when servers are required,
/// prints a loud SKIP line and returns `None` otherwise.
pub(crate) fn require_binary(name: &str, package: &str) -> Option<PathBuf> {
    if let Some(path) = find_binary(name) {
        return Some(path);
    }
    if servers_required() {
        panic!(
            "KV_REQUIRE_SERVERS=1 but `{name}` is not installed (apt-get install {package}, \
             or run `cargo xtask test`, which installs it)"
        );
    }
    eprintln!(
        "\n==== SKIP: `{name}` not found; tests needing it are skipped. Install {package} or run \
         `cargo xtask test`. ====\n"
    );
    None
}

/// A free TCP port on 127.0.0.1 (bound once and released; callers retry on a lost race).
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free loopback port")
}

/// A running server process with its log file and a watchdog that kills it if the test
/// process dies first, and then removes the server's data directory (servers shared through
/// statics are never dropped, so their `TempDir` never cleans up after itself).
pub(crate) struct ServerProcess {
    child: Child,
    watchdog: Option<Child>,
    log: PathBuf,
    /// Whether the process leads a process group of its own, killed as a whole.
    group: bool,
}

impl ServerProcess {
    /// Spawns `cmd`, appending its output to `log`; `data_dir` is removed by the watchdog if
    /// the test process exits while the server runs.
    pub(crate) fn spawn(cmd: Command, log: &Path, data_dir: &Path) -> std::io::Result<Self> {
        Self::spawn_with(cmd, log, data_dir, false)
    }

    /// Spawns `cmd` as [`ServerProcess::spawn`] does, as the leader of a process group of its
    /// own: a kill, the watchdog's included, ends the whole group, so that the programs it
    /// started (a browser started by its driver) end with it.
    pub(crate) fn spawn_group(cmd: Command, log: &Path, data_dir: &Path) -> std::io::Result<Self> {
        Self::spawn_with(cmd, log, data_dir, true)
    }

    fn spawn_with(
        mut cmd: Command,
        log: &Path,
        data_dir: &Path,
        group: bool,
    ) -> std::io::Result<Self> {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)?;
        let err = out.try_clone()?;
        cmd.stdin(Stdio::null()).stdout(out).stderr(err);
        #[cfg(unix)]
        if group {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        let child = cmd.spawn()?;
        // The watchdog polls the test process and kills the server once it is gone. It ends
        // quietly when the server exits first (a kill or restart by the test itself).
        let target = if group {
            format!("-{}", child.id())
        } else {
            child.id().to_string()
        };
        let script = format!(
            "while kill -0 {parent} 2>/dev/null && kill -0 {child} 2>/dev/null; do sleep 0.5; done; \
             if ! kill -0 {parent} 2>/dev/null; then \
               kill -s KILL -- {target} 2>/dev/null; sleep 0.2; rm -rf \"$0\"; fi",
            parent = std::process::id(),
            child = child.id()
        );
        let watchdog = Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg(data_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok();
        Ok(ServerProcess {
            child,
            watchdog,
            log: log.to_path_buf(),
            group,
        })
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process has exited.
    pub(crate) fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// The last lines of the server's log, for failure messages.
    pub(crate) fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Kills the process (SIGKILL), with its process group when it leads one, and reaps it.
    pub(crate) fn kill(&mut self) {
        if self.group && matches!(self.child.try_wait(), Ok(None)) {
            // `--` before the negative id: without it, procps's kill takes it for options.
            let _ = Command::new("kill")
                .args(["-s", "KILL", "--", &format!("-{}", self.child.id())])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(mut w) = self.watchdog.take() {
            let _ = w.kill();
            let _ = w.wait();
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Polls `ready` every 50 ms until it returns true, the process exits, or `timeout` passes.
pub(crate) fn wait_ready(
    process: &mut ServerProcess,
    timeout: Duration,
    mut ready: impl FnMut() -> bool,
) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    loop {
        if ready() {
            return Ok(());
        }
        if process.exited() {
            return Err(format!(
                "server exited during start-up:\n{}",
                process.log_tail()
            ));
        }
        if Instant::now() > deadline {
            return Err(format!(
                "server not ready after {timeout:?}:\n{}",
                process.log_tail()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends `request` to 127.0.0.1:`port` and returns what came back until the peer closed the
/// connection or a complete line arrived for a RESP request (empty on failure).
pub(crate) fn exchange(port: u16, request: &[u8]) -> String {
    use std::io::{Read, Write};
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream.write_all(request).is_err() {
        return String::new();
    }
    let resp = !request.starts_with(b"GET ");
    let mut buf = [0u8; 4096];
    let mut out = Vec::new();
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
        if resp && out.ends_with(b"\r\n") {
            break;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Calls `each` with every complete line a child process prints on `out` (without its line
/// end), until the stream ends. A last line without its newline was cut by a kill, so it is
/// not passed on: what a killed child printed in full is what it acknowledged.
pub fn complete_lines(out: impl std::io::Read, mut each: impl FnMut(String)) {
    use std::io::BufRead;
    let mut reader = std::io::BufReader::new(out);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => return,
            Ok(_) if buf.last() != Some(&b'\n') => return,
            Ok(_) => each(String::from_utf8_lossy(&buf).trim_end().to_string()),
        }
    }
}

/// A free loopback port whose cluster bus port (the port + 10000) is free too.
pub(crate) fn cluster_port() -> u16 {
    loop {
        let port = free_port();
        if port < 55_000 && std::net::TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
}
