//! [`Writers`]: other tasks writing a store as fast as they can, for the tests of reads on a
//! busy store.
//!
//! The writers run in the test's process, so each yields after every write, as a network
//! client does while it waits for its answer, and each stops after [`WRITES_PER_WRITER`]
//! writes, so that all of them together stay well inside every backend's default retention:
//! a read that fails beside them fails for the store being busy, not for reading a revision
//! the store let go.

use keyplane_core::{PutOptions, Store};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::watch;

/// Writing tasks.
pub const WRITERS: u64 = 8;
/// The most writes of one writer.
pub const WRITES_PER_WRITER: u64 = 1_000;
/// Names each writer cycles through: overwrites, deletes and creations of a bounded set.
pub const NAMES_PER_WRITER: u64 = 10;

/// [`WRITERS`] tasks under a root, each cycling over its own [`NAMES_PER_WRITER`] names
/// `{root}w{writer}-{nn}` (put, put, delete), until stopped or their last write.
pub struct Writers {
    stop: Arc<AtomicBool>,
    written: watch::Receiver<u64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Writers {
    /// Starts the writers on the current runtime, writing keys under `root`.
    ///
    /// # Panics
    /// A writer panics on a failed write (its task's panic reaches [`Writers::stop`]).
    pub fn start(store: &Arc<dyn Store>, root: &[u8]) -> Writers {
        let stop = Arc::new(AtomicBool::new(false));
        let (count, written) = watch::channel(0u64);
        let count = Arc::new(count);
        let tasks = (0..WRITERS)
            .map(|w| {
                let (store, stop, count) = (store.clone(), stop.clone(), count.clone());
                let root = root.to_vec();
                tokio::spawn(async move {
                    for i in 0..WRITES_PER_WRITER {
                        if stop.load(Ordering::Relaxed) {
                            return;
                        }
                        let mut k = root.clone();
                        k.extend_from_slice(format!("w{w}-{:02}", i % NAMES_PER_WRITER).as_bytes());
                        if i % 3 == 2 {
                            store.delete(&k).await.expect("a writer's delete");
                        } else {
                            let value = format!("{w}:{i}");
                            store
                                .put(&k, value.as_bytes(), PutOptions::default())
                                .await
                                .expect("a writer's put");
                        }
                        count.send_modify(|n| *n += 1);
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        Writers {
            stop,
            written,
            tasks,
        }
    }

    /// Waits until the writers have written `more` times since the last wait (or have all
    /// finished), so that the next read overlaps their writes.
    pub async fn advance(&mut self, more: u64) {
        let target = *self.written.borrow_and_update() + more;
        let _ = self.written.wait_for(|n| *n >= target).await;
    }

    /// The count of writes so far, to wait on beside [`Writers::advance`].
    pub fn counter(&self) -> watch::Receiver<u64> {
        self.written.clone()
    }

    /// Fails the test when the writers have run out of writes: `step`, just done, may then
    /// have succeeded only once the store was quiet.
    ///
    /// # Panics
    /// When every writer has made its last write.
    pub fn assert_running(&self, step: &str) {
        assert!(
            *self.written.borrow() < WRITERS * WRITES_PER_WRITER,
            "the writers ran out before {step} was done"
        );
    }

    /// Stops the writers and waits for them.
    ///
    /// # Panics
    /// When a writer panicked.
    pub async fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for task in self.tasks {
            task.await.expect("a writer task");
        }
    }
}
