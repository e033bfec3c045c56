//! RedbStore under `kill -9`: a child process makes acknowledged writes (puts, two-key
//! transactions, leases and leased puts) and is killed at a random moment, round after round
//! over one database file; after each restart the consistency check passes, no transaction is
//! half applied, what survived is a prefix of the writes, and with the default durability
//! every acknowledged write is there (`keyplane_tests::crash`).
//!
//! The child is the `crash_child` binary of this package (tests/src/bin/).

use keyplane_tests::crash::{
    assert_buffered_writes_flush_while_idle, assert_held_is_clear, kill_rounds,
};
use keyplane_tests::embedded::Engine;
use std::path::Path;

const ROUNDS: usize = 50;

fn child() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_crash_child"))
}

/// Flush-on-commit: an acknowledged write is on disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_sigkill() {
    let acked = kill_rounds(child(), Engine::Redb, "write", ROUNDS, true).await;
    assert!(
        acked > 0,
        "no child acknowledged a write before being killed"
    );
}

/// Buffered: a kill may lose the latest acknowledged writes (those after the last durable
/// commit), never one before a write that survived, never half a transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_writes_survive_sigkill_as_a_prefix() {
    let acked = kill_rounds(child(), Engine::Redb, "write-buffered", 30, false).await;
    assert!(
        acked > 0,
        "no child acknowledged a write before being killed"
    );
}

#[tokio::test]
async fn a_file_held_by_another_process_is_a_clear_error() {
    assert_held_is_clear(child(), Engine::Redb).await;
}

/// Buffered writes are made durable by the flush timer, not only on close: a killed idle
/// writer loses none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_writes_are_durable_after_the_flush_interval() {
    assert_buffered_writes_flush_while_idle(child(), Engine::Redb).await;
}
