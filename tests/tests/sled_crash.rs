//! SledStore under `kill -9`: a child process makes acknowledged writes and is killed at a
//! random moment, 50 times over one database; after each restart every acknowledged write is
//! there, no transaction is half applied and the consistency check passes.
//!
//! The child is the `sled_crash_child` binary of this package (tests/src/bin/).

use keyplane_core::{ErrorKind, LeaseId, RangeOptions, Store};
use keyplane_sled::{SledConfig, SledStore};
use keyplane_tests::harness::complete_lines;
use rand::Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;
use tempfile::TempDir;

const ROUNDS: usize = 50;
const DIR_VAR: &str = "KV_SLED_CHILD_DIR";
const MODE_VAR: &str = "KV_SLED_CHILD_MODE";
const ROUND_VAR: &str = "KV_SLED_CHILD_ROUND";
/// A bound for the child to start, so a broken child fails the test instead of hanging it.
const START_TIMEOUT: Duration = Duration::from_secs(60);

struct ChildProcess {
    child: Child,
    lines: JoinHandle<Vec<String>>,
}

impl ChildProcess {
    /// Starts the child and waits until it has opened the store.
    fn start(dir: &Path, mode: &str, round: usize) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sled_crash_child"))
            .env(DIR_VAR, dir)
            .env(MODE_VAR, mode)
            .env(ROUND_VAR, round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the child process");
        let (ready_tx, ready_rx) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        let lines = std::thread::spawn(move || read_lines(stdout, ready_tx));
        if ready_rx.recv_timeout(START_TIMEOUT).is_err() {
            child.kill().ok();
            panic!("the child process did not open the store");
        }
        ChildProcess { child, lines }
    }

    /// SIGKILLs the child and returns the complete lines it printed.
    fn kill(mut self) -> Vec<String> {
        self.child.kill().expect("SIGKILL the child");
        self.child.wait().unwrap();
        self.lines.join().unwrap()
    }
}

/// The complete lines the child printed (a line cut by the kill is not an acknowledgement).
fn read_lines(stdout: ChildStdout, ready: mpsc::Sender<()>) -> Vec<String> {
    let mut lines = Vec::new();
    complete_lines(stdout, |line| {
        if line.ends_with("READY") {
            ready.send(()).ok();
        }
        lines.push(line);
    });
    lines
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
                    self.leases.insert(id.parse().unwrap());
                }
                ["leased", id, key, value] => {
                    self.leased
                        .insert(key.to_string(), (id.parse().unwrap(), value.to_string()));
                }
                other => panic!("unexpected acknowledgement {other:?}"),
            }
        }
        n
    }

    async fn verify(&self, store: &SledStore) {
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
async fn assert_no_partial_pair(store: &SledStore) {
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

/// Kills a child of `mode` at a random moment, `rounds` times over one database, and checks
/// the database after each kill; with `durable`, also that every acknowledged write is there.
async fn kill_rounds(mode: &str, rounds: usize, durable: bool) {
    let dir = TempDir::new().unwrap();
    let mut acked = Acked::default();
    let mut revision = 0;
    let mut rng = rand::rng();
    let mut total = 0;
    for round in 0..rounds {
        let child = ChildProcess::start(dir.path(), mode, round);
        // The kill lands at a random moment of the child's stream of writes.
        std::thread::sleep(Duration::from_millis(rng.random_range(1..40)));
        let lines = child.kill();
        let acks = if durable {
            acked.record(&lines)
        } else {
            Acked::default().record(&lines)
        };
        total += acks;

        let store = SledStore::open(SledConfig::new(dir.path())).await.unwrap();
        store.check_consistency().unwrap();
        acked.verify(&store).await;
        assert_no_partial_pair(&store).await;
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
    assert!(
        total > 0,
        "no child acknowledged a write before being killed"
    );
    eprintln!("{mode}: {total} acknowledged writes over {rounds} kills, at revision {revision}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_sigkill() {
    kill_rounds("write", ROUNDS, true).await;
}

/// Buffered durability may lose the latest acknowledged writes, never half a transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_writes_are_never_half_applied_after_sigkill() {
    kill_rounds("write-buffered", 20, false).await;
}

#[tokio::test]
async fn a_directory_held_by_another_process_is_a_clear_error() {
    let dir = TempDir::new().unwrap();
    let holder = ChildProcess::start(dir.path(), "hold", 0);
    let err = SledStore::open(SledConfig::new(dir.path()))
        .await
        .unwrap_err();
    holder.kill();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(!err.is_retryable());
    assert!(
        err.to_string().contains("in use by another process"),
        "unclear message: {err}"
    );
}
