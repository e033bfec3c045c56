//! A value a reader saw survives a crash: SledStore commits a transaction in memory under
//! its writer mutex and flushes outside it (so concurrent writers share one fsync), and
//! readers could see the commit before the flush; a `kill -9` in between lost a value a
//! reader had already returned. Under `Durability::FlushOnCommit` a read that runs while a
//! write is between its commit and its flush now flushes before answering.
//!
//! RedbStore makes the same promise by design (a redb read sees only committed transactions,
//! and a flush-on-commit transaction is committed once it is durable): checked the same way.
//!
//! The child (`crash_child`, mode `race`) has one writer count up one key and three readers
//! print each new value they read; it is killed at a random moment. After the kill, the
//! stored value must be at least the highest value any reader saw.

use keyplane_tests::crash::{DIR_VAR, ENGINE_VAR, MODE_VAR, ROUND_VAR};
use keyplane_tests::embedded::Engine;
use keyplane_tests::harness::complete_lines;
use rand::Rng;
use std::process::{Command, Stdio};
use std::time::Duration;

const ROUNDS: usize = 40;

/// Runs the child of `round` for `millis` ms, kills it, and returns the highest value a
/// reader printed on a complete line.
fn race(engine: Engine, dir: &std::path::Path, round: usize, millis: u64) -> u64 {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crash_child"))
        .env(DIR_VAR, dir)
        .env(ENGINE_VAR, engine.name())
        .env(MODE_VAR, "race")
        .env(ROUND_VAR, round.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the child");
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut highest = 0;
        complete_lines(stdout, |line| {
            if let Some(n) = line
                .strip_prefix("READ ")
                .and_then(|n| n.parse::<u64>().ok())
            {
                highest = highest.max(n);
            }
        });
        highest
    });
    std::thread::sleep(Duration::from_millis(millis));
    child.kill().expect("SIGKILL the child");
    child.wait().unwrap();
    reader.join().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_read_survives_a_kill_on_sled() {
    a_value_read_survives_a_kill(Engine::Sled).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_read_survives_a_kill_on_redb() {
    a_value_read_survives_a_kill(Engine::Redb).await;
}

async fn a_value_read_survives_a_kill(engine: Engine) {
    let dir = tempfile::TempDir::new().unwrap();
    let mut rng = rand::rng();
    let mut lost = Vec::new();
    for round in 0..ROUNDS {
        let read = tokio::task::block_in_place(|| {
            race(engine, dir.path(), round, rng.random_range(100..400))
        });
        let store = engine.open(dir.path()).await.unwrap();
        let key = format!("race/{round}");
        let stored: u64 = store
            .get(key.as_bytes())
            .await
            .unwrap()
            .map_or(0, |e| String::from_utf8_lossy(&e.value).parse().unwrap());
        if stored < read {
            lost.push(format!(
                "round {round}: a reader saw {read}, the store kept {stored}"
            ));
        }
    }
    assert!(
        lost.is_empty(),
        "values read and then lost by a kill -9:\n{}",
        lost.join("\n")
    );
}
