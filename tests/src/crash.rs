//! The embedded stores under `kill -9`: a child process (the `crash_child` binary of this
//! package) makes acknowledged writes and is killed at a random moment, round after round
//! over one database; after each kill the parent reopens the database, runs the store's
//! consistency check and checks what survived ([`kill_rounds`]).
//!
//! The child prints `READY` once the store is open, then one `ACK ...` line after each write
//! returns (see its source for the forms); a line the kill cut short is no acknowledgement.

use crate::embedded::Engine;
use crate::harness::complete_lines;
use keyplane_core::{LeaseId, RangeOptions, Store};
use rand::Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The child's database directory.
pub const DIR_VAR: &str = "KV_CHILD_DIR";
/// The child's engine: `redb` or `sled`.
pub const ENGINE_VAR: &str = "KV_CHILD_ENGINE";
/// The child's mode: `write`, `write-buffered`, `hold` or `race`.
pub const MODE_VAR: &str = "KV_CHILD_MODE";
/// The round, which names the child's keys.
pub const ROUND_VAR: &str = "KV_CHILD_ROUND";
/// A bound for the child to start, so a broken child fails the test instead of hanging it.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A running child process and the thread reading its lines.
pub struct ChildProcess {
    child: Child,
    lines: JoinHandle<Vec<String>>,
    /// The child's marker lines (`READY`, `IDLE`), as they arrive.
    markers: mpsc::Receiver<String>,
}

impl ChildProcess {
    /// Starts the child `exe` on `engine`'s database in `dir` and waits until it has opened
    /// the store.
    pub fn start(exe: &Path, engine: Engine, dir: &Path, mode: &str, round: usize) -> Self {
        let mut child = Command::new(exe)
            .env(DIR_VAR, dir)
            .env(ENGINE_VAR, engine.name())
            .env(MODE_VAR, mode)
            .env(ROUND_VAR, round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the child process");
        let mut stderr = child.stderr.take().expect("the child's stderr");
        let (marker_tx, markers) = mpsc::channel();
        let stdout = child.stdout.take().expect("the child's stdout");
        let lines = std::thread::spawn(move || {
            let mut lines = Vec::new();
            complete_lines(stdout, |line| {
                if let Some(marker) = ["READY", "IDLE"].into_iter().find(|m| line.ends_with(m)) {
                    marker_tx.send(marker.to_owned()).ok();
                }
                lines.push(line);
            });
            lines
        });
        if markers.recv_timeout(START_TIMEOUT).is_err() {
            child.kill().ok();
            child.wait().ok();
            let mut said = String::new();
            std::io::Read::read_to_string(&mut stderr, &mut said).ok();
            panic!("the child process did not open the store: {said}");
        }
        // The child's panics, if any, go nowhere once it has started: it is killed anyway.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        ChildProcess {
            child,
            lines,
            markers,
        }
    }

    /// Waits for the child's next marker line (such as `IDLE`) and returns it.
    pub fn next_marker(&self) -> String {
        self.markers
            .recv_timeout(START_TIMEOUT)
            .expect("the child printed its next marker line")
    }

    /// SIGKILLs the child and returns the complete lines it printed.
    pub fn kill(mut self) -> Vec<String> {
        self.child.kill().expect("SIGKILL the child");
        self.child.wait().expect("reap the child");
        self.lines.join().expect("the reader thread")
    }
}

/// Everything the children acknowledged so far.
#[derive(Default)]
struct Acked {
    puts: BTreeMap<String, String>,
    pairs: BTreeMap<String, String>,
    leases: BTreeSet<i64>,
    leased: BTreeMap<String, (i64, String)>,
}

impl Acked {
    /// Records the acknowledgements in `lines`; returns how many of them wrote keys (lease
    /// grants do not bump the revision).
    fn record(&mut self, lines: &[String]) -> usize {
        let mut n = 0;
        for line in lines {
            let Some(pos) = line.find("ACK ") else {
                continue;
            };
            n += usize::from(!line[pos..].starts_with("ACK grant"));
            let words: Vec<&str> = line[pos + 4..].split(' ').collect();
            match words.as_slice() {
                ["put", key, value] => {
                    self.puts.insert(key.to_string(), value.to_string());
                }
                ["pair", pair, value] => {
                    self.pairs.insert(pair.to_string(), value.to_string());
                }
                ["grant", id] => {
                    self.leases.insert(id.parse().expect("a lease id"));
                }
                ["leased", id, key, value] => {
                    let id = id.parse().expect("a lease id");
                    self.leased.insert(key.to_string(), (id, value.to_string()));
                }
                other => panic!("unexpected acknowledgement {other:?}"),
            }
        }
        n
    }

    /// Every acknowledged write is in `store`.
    async fn verify(&self, store: &dyn Store) {
        for (key, value) in &self.puts {
            let entry = store.get(key.as_bytes()).await.unwrap();
            let entry = entry.unwrap_or_else(|| panic!("acknowledged put of {key} is lost"));
            assert_eq!(entry.value, value.as_bytes(), "{key}");
        }
        for (pair, value) in &self.pairs {
            for half in ["a", "b"] {
                let key = format!("{pair}/{half}");
                let entry = store.get(key.as_bytes()).await.unwrap();
                let entry = entry.unwrap_or_else(|| panic!("acknowledged txn lost {key}"));
                assert_eq!(entry.value, value.as_bytes(), "{key}");
            }
        }
        for id in &self.leases {
            store
                .lease_time_to_live(LeaseId(*id))
                .await
                .unwrap_or_else(|e| panic!("acknowledged lease {id:x} is lost: {e}"));
        }
        for (key, (id, value)) in &self.leased {
            let entry = store.get(key.as_bytes()).await.unwrap();
            let entry = entry.unwrap_or_else(|| panic!("acknowledged leased put {key} is lost"));
            assert_eq!(
                (entry.lease, entry.value.as_slice()),
                (Some(LeaseId(*id)), value.as_bytes())
            );
            let info = store.lease_time_to_live(LeaseId(*id)).await.unwrap();
            assert_eq!(info.keys, vec![key.as_bytes().to_vec()]);
        }
    }
}

/// Every transaction wrote a pair of keys: both halves are present or neither is.
async fn assert_no_partial_pair(store: &dyn Store) {
    let page = store.range(RangeOptions::prefix("p/")).await.unwrap();
    let mut halves: BTreeMap<Vec<u8>, Vec<Vec<u8>>> = BTreeMap::new();
    for entry in page.entries {
        let split = entry.key.len() - 2;
        halves
            .entry(entry.key[..split].to_vec())
            .or_default()
            .push(entry.key[split..].to_vec());
    }
    for (pair, found) in halves {
        assert_eq!(
            found,
            [b"/a".to_vec(), b"/b".to_vec()],
            "partial transaction {}",
            String::from_utf8_lossy(&pair)
        );
    }
}

/// The writes of `round` that survived are a prefix of the child's writes: write `i` (its
/// keys `c/`, `p/` or `l/` `round/i`) is there only if every write before it is. A crash
/// may lose the latest writes, never one in the middle.
async fn assert_prefix(store: &dyn Store, round: usize) {
    let mut found = BTreeSet::new();
    for kind in ["c", "p", "l"] {
        let prefix = format!("{kind}/{round}/");
        let page = store
            .range(RangeOptions::prefix(prefix.as_bytes()))
            .await
            .unwrap();
        assert!(!page.more(), "one page holds a round's writes");
        for entry in page.entries {
            let rest = &entry.key[prefix.len()..];
            let index = String::from_utf8_lossy(rest);
            let index = index.split('/').next().unwrap_or_default();
            found.insert(index.parse::<u64>().expect("a write's index"));
        }
    }
    if let Some(last) = found.last() {
        assert_eq!(
            found.len() as u64,
            last + 1,
            "round {round}: write {last} survived, but not every write before it: {found:?}"
        );
    }
}

/// Kills a child of `engine` in `mode` at a random moment, `rounds` times over one database,
/// and checks the database after each kill: the consistency check passes, no transaction is
/// half there, what survived of the round is a prefix of its writes, and the revision never
/// goes back; with `durable`, also that every acknowledged write is there. `exe` is the
/// `crash_child` binary. Returns the number of acknowledged writes.
pub async fn kill_rounds(
    exe: &Path,
    engine: Engine,
    mode: &str,
    rounds: usize,
    durable: bool,
) -> usize {
    let dir = tempfile::TempDir::new().expect("a temp dir");
    let mut acked = Acked::default();
    let mut revision = 0;
    let mut rng = rand::rng();
    let mut total = 0;
    for round in 0..rounds {
        let child = ChildProcess::start(exe, engine, dir.path(), mode, round);
        // The kill lands at a random moment of the child's stream of writes.
        std::thread::sleep(Duration::from_millis(rng.random_range(1..40)));
        let lines = child.kill();
        let acks = if durable {
            acked.record(&lines)
        } else {
            Acked::default().record(&lines)
        };
        total += acks;

        let store = engine
            .open_checked(dir.path())
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        acked.verify(&*store).await;
        assert_no_partial_pair(&*store).await;
        assert_prefix(&*store, round).await;
        // What this process read after the previous kill was on disk: it is never lost.
        let now = store.revision().await.unwrap();
        assert!(
            now >= revision,
            "revision went back from {revision} to {now}"
        );
        if durable && acks > 0 {
            assert!(
                now > revision,
                "round {round} acknowledged writes at no new revision"
            );
        }
        revision = now;
    }
    eprintln!(
        "{} {mode}: {total} acknowledged writes over {rounds} kills, at revision {revision}",
        engine.name()
    );
    total
}

/// A buffered writer's writes become durable within the flush interval while the store stays
/// open: a child (mode `write-buffered-idle`) makes 200 acknowledged puts with a 5 ms
/// flush interval, then stays idle ten intervals and says `IDLE`; killed then, every write
/// it acknowledged is there. `exe` is the `crash_child` binary.
pub async fn assert_buffered_writes_flush_while_idle(exe: &Path, engine: Engine) {
    let dir = tempfile::TempDir::new().expect("a temp dir");
    let child = ChildProcess::start(exe, engine, dir.path(), "write-buffered-idle", 0);
    assert_eq!(child.next_marker(), "IDLE");
    let lines = child.kill();
    let mut acked = Acked::default();
    assert_eq!(acked.record(&lines), 200, "the child's writes");
    let store = engine
        .open_checked(dir.path())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    acked.verify(&*store).await;
}

/// Opens `engine`'s database in `dir` while a child holds it: the error is `Unavailable`,
/// not retryable, and says the database is in use.
pub async fn assert_held_is_clear(exe: &Path, engine: Engine) {
    let dir = tempfile::TempDir::new().expect("a temp dir");
    let holder = ChildProcess::start(exe, engine, dir.path(), "hold", 0);
    let err = match engine.open(dir.path()).await {
        Ok(_) => panic!("{} opened a database another process holds", engine.name()),
        Err(err) => err,
    };
    holder.kill();
    assert_eq!(err.kind(), keyplane_core::ErrorKind::Unavailable, "{err}");
    assert!(!err.is_retryable());
    assert!(
        err.to_string().contains(engine.held_message()),
        "unclear message: {err}"
    );
}

/// The crash tests of one embedded engine, for a test file of this package (the child is its
/// `crash_child` binary): `crash_suite!(Engine::Redb, 30)` makes
/// - `acknowledged_writes_survive_sigkill`: 50 rounds flushed on commit, every acknowledged
///   write kept;
/// - `buffered_writes_survive_sigkill_as_a_prefix`: that many rounds buffered, what survived
///   a prefix of the writes, never half a transaction;
/// - `a_store_held_by_another_process_is_a_clear_error`;
/// - `buffered_writes_are_durable_after_the_flush_interval`: a killed idle writer loses none.
#[macro_export]
macro_rules! crash_suite {
    ($engine:expr, $buffered_rounds:expr) => {
        fn child() -> &'static std::path::Path {
            std::path::Path::new(env!("CARGO_BIN_EXE_crash_child"))
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn acknowledged_writes_survive_sigkill() {
            let acked = $crate::crash::kill_rounds(child(), $engine, "write", 50, true).await;
            assert!(
                acked > 0,
                "no child acknowledged a write before being killed"
            );
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn buffered_writes_survive_sigkill_as_a_prefix() {
            let acked = $crate::crash::kill_rounds(
                child(),
                $engine,
                "write-buffered",
                $buffered_rounds,
                false,
            )
            .await;
            assert!(
                acked > 0,
                "no child acknowledged a write before being killed"
            );
        }

        #[tokio::test]
        async fn a_store_held_by_another_process_is_a_clear_error() {
            $crate::crash::assert_held_is_clear(child(), $engine).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn buffered_writes_are_durable_after_the_flush_interval() {
            $crate::crash::assert_buffered_writes_flush_while_idle(child(), $engine).await;
        }
    };
}
