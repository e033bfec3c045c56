//! SledStore under `kill -9`: a child process makes acknowledged writes and is killed at a
//! random moment, 50 times over one database; after each restart every acknowledged write is
//! there, no transaction is half applied, what survived is a prefix of the writes and the
//! consistency check passes (`keyplane_tests::crash`).
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_sigkill() {
    let acked = kill_rounds(child(), Engine::Sled, "write", ROUNDS, true).await;
    assert!(
        acked > 0,
        "no child acknowledged a write before being killed"
    );
}

/// Buffered durability may lose the latest acknowledged writes, never half a transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_writes_are_never_half_applied_after_sigkill() {
    let acked = kill_rounds(child(), Engine::Sled, "write-buffered", 20, false).await;
    assert!(
        acked > 0,
        "no child acknowledged a write before being killed"
    );
}

#[tokio::test]
async fn a_directory_held_by_another_process_is_a_clear_error() {
    assert_held_is_clear(child(), Engine::Sled).await;
}

/// Buffered writes are made durable by the flush timer, not only on close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_writes_are_durable_after_the_flush_interval() {
    assert_buffered_writes_flush_while_idle(child(), Engine::Sled).await;
}
