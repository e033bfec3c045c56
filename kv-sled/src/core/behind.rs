//! The bound on sled writes that are not on disk yet, across the stores of the process.
//!
//! Every sled transaction or batch seals sled's I/O buffer twice, and each sealed buffer is
//! a task for sled's process-wide I/O pool (a write and a `sync_file_range`). A buffered
//! write does not wait for those tasks, so without a bound the writes run ahead of the disk
//! and the pool's queue grows with them. Then sled 0.34 can deadlock: when the log file
//! grows again after it shrank, the writer waits, holding sled's segment lock, for the
//! shrink's truncation task, which is queued behind write tasks that each end by taking
//! that lock. Once every pool thread holds one of them, nothing runs the truncation; the
//! pool only grows when a new task arrives, and every writer waits behind the stuck one.
//! Sixteen buffered writers stopped a store this way within a minute.
//!
//! So every writer section and group first takes [`Room`] for its write: it waits while the
//! stores of the process have [`MAX_UNFLUSHED`] sled writes or more that no finished flush
//! covers. Each store counts its writes in its [`Backlog`] until a flush covers them: under
//! `FlushOnCommit` the writer's own flush, under buffered durability the store's
//! [`Flusher`] thread, which flushes as writes commit. A section that makes more than one
//! write (leases that expire together, a compaction's pruning batches) flushes before each
//! later write instead, as these take no room of their own. At most a few writes are then
//! unflushed at any time, two buffers each, below the pool's seven standing threads, so one
//! of them is always free to run a truncation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, LazyLock, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use tokio::sync::Notify;

/// Most unflushed sled writes in the process before a writer waits. A writer that takes
/// room may add a pruning batch to its transaction: three writes, six buffers, one below
/// sled's seven standing I/O threads.
pub(crate) const MAX_UNFLUSHED: usize = 2;

/// The sled writes of every store in this process that no finished flush covers, and the
/// room taken for writes about to commit.
static PROCESS: LazyLock<Pool> = LazyLock::new(Pool::default);

/// A count of unflushed writes and the room taken for more, shared by the stores that
/// count in it: [`PROCESS`] for every store (a test counts in one of its own).
#[derive(Default)]
pub(crate) struct Pool {
    /// Unflushed writes, and room taken for writes about to commit.
    unflushed: AtomicUsize,
    /// Notified whenever `unflushed` goes down.
    room: Notify,
}

impl Pool {
    /// Counts `writes` more.
    fn raise(&self, writes: usize) {
        self.unflushed.fetch_add(writes, Ordering::AcqRel);
    }

    /// Counts `writes` fewer, and wakes the writers waiting for room. Only what was raised
    /// can be released: a release of more would wrap the count, and every writer would
    /// wait for room that never comes.
    fn release(&self, writes: u64) {
        if writes > 0 {
            let writes = usize::try_from(writes).unwrap_or(usize::MAX);
            let before = self.unflushed.fetch_sub(writes, Ordering::AcqRel);
            debug_assert!(
                before >= writes,
                "{writes} unflushed writes released, {before} counted"
            );
            self.room.notify_waiters();
        }
    }

    /// [`Room::take`] in this pool.
    async fn take(&'static self) -> Room {
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            // Registered before the check, so a flush that ends in between still wakes it.
            notified.as_mut().enable();
            let now = self.unflushed.load(Ordering::Acquire);
            if now < MAX_UNFLUSHED {
                if self
                    .unflushed
                    .compare_exchange(now, now + 1, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    return Room {
                        pool: self,
                        held: true,
                    };
                }
                continue;
            }
            notified.await;
        }
    }
}

/// Room for one more unflushed write, counted in its [`Pool`] until the write it was taken
/// for commits (then its store's [`Backlog`] counts it) or it is dropped unused.
pub(crate) struct Room {
    pool: &'static Pool,
    held: bool,
}

impl Room {
    /// Waits until the process has fewer than [`MAX_UNFLUSHED`] unflushed writes and takes
    /// room for one more. Cancel-safe: room is only taken when it returns.
    pub(crate) async fn take() -> Room {
        PROCESS.take().await
    }
}

impl Drop for Room {
    fn drop(&mut self) {
        if self.held {
            self.pool.release(1);
        }
    }
}

/// A store's sled writes that no finished flush covers yet.
pub(crate) struct Backlog {
    /// Where its writes are counted with those of the other stores.
    pool: &'static Pool,
    state: Mutex<State>,
    /// Wakes the store's [`Flusher`]: a write was committed, or the store closes.
    wake: Condvar,
}

#[derive(Default)]
struct State {
    /// Sled writes committed so far.
    committed: u64,
    /// Committed writes that a finished flush covers.
    flushed: u64,
    closed: bool,
}

impl Default for Backlog {
    fn default() -> Self {
        Backlog::in_pool(&PROCESS)
    }
}

impl Backlog {
    /// A backlog whose writes count in `pool`.
    fn in_pool(pool: &'static Pool) -> Self {
        Backlog {
            pool,
            state: Mutex::default(),
            wake: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a committed sled write until a flush covers it; `room` is the room taken for
    /// it, if any (a pruning batch, or a section's second write, takes none).
    ///
    /// A write without room is counted in the pool under the same lock that makes it
    /// visible to a flush: a flush reads the store's count under that lock, so it can only
    /// release a write the pool already counts. (Raised after the lock, a flush in between
    /// released it first: the count wrapped, a writer that saw it full waited, and the raise
    /// that undid the wrap woke nobody.)
    pub(crate) fn committed(&self, room: Option<Room>) {
        {
            let mut state = self.lock();
            state.committed += 1;
            match room {
                Some(mut room) => room.held = false,
                None => self.pool.raise(1),
            }
        }
        self.wake.notify_one();
    }

    /// Flushes `db`, then counts the writes committed before the flush began as covered:
    /// every flush of the store goes through it. Also when the flush fails: it leaves
    /// sled's error set and every later write fails with it, and no writer may wait for a
    /// flush that cannot come.
    pub(crate) fn flush(&self, db: &sled::Db) -> sled::Result<()> {
        let target = self.target();
        let flushed = db.flush();
        self.flushed(target);
        flushed.map(drop)
    }

    /// The writes that a flush beginning now covers.
    fn target(&self) -> u64 {
        self.lock().committed
    }

    /// A flush that began at `target` ended.
    fn flushed(&self, target: u64) {
        let done = {
            let mut state = self.lock();
            let done = target.saturating_sub(state.flushed);
            state.flushed = state.flushed.max(target);
            done
        };
        self.pool.release(done);
    }

    /// The store's writes not covered yet.
    pub(crate) fn unflushed(&self) -> u64 {
        let state = self.lock();
        state.committed - state.flushed
    }
}

impl Drop for Backlog {
    fn drop(&mut self) {
        // The store is closed (sled's close flushes); its writes hold no other store back.
        let state = self.lock();
        self.pool.release(state.committed - state.flushed);
    }
}

/// The flushing thread of a buffered store; stopped and joined when dropped.
pub(crate) struct Flusher {
    backlog: Arc<Backlog>,
    thread: Option<JoinHandle<()>>,
}

impl Flusher {
    /// Starts a thread that flushes `db` while `backlog` has writes to cover.
    pub(crate) fn start(db: sled::Db, backlog: Arc<Backlog>) -> std::io::Result<Self> {
        let thread = std::thread::Builder::new()
            .name("keyplane-sled-flush".into())
            .spawn({
                let backlog = backlog.clone();
                move || flush_while_behind(&db, &backlog)
            })?;
        Ok(Flusher {
            backlog,
            thread: Some(thread),
        })
    }
}

impl Drop for Flusher {
    fn drop(&mut self) {
        self.backlog.lock().closed = true;
        self.backlog.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            // At most one flush in progress to wait for.
            let _ = thread.join();
        }
    }
}

/// The thread's loop: flushes while some committed write is not covered, until the store
/// closes.
fn flush_while_behind(db: &sled::Db, backlog: &Backlog) {
    loop {
        {
            let mut state = backlog.lock();
            while state.committed == state.flushed && !state.closed {
                state = backlog
                    .wake
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if state.closed {
                return;
            }
        }
        if let Err(err) = backlog.flush(db) {
            tracing::warn!(error = %err, "sled store: a background flush failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Durability, SledConfig};
    use keyplane_contract::{Txn, TxnOp};
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    /// A thread that samples a store's unflushed writes until asked for the most it saw.
    struct Sampler {
        done: Arc<AtomicBool>,
        thread: std::thread::JoinHandle<u64>,
    }

    impl Sampler {
        fn start(backlog: &Arc<Backlog>) -> Sampler {
            let (backlog, done) = (backlog.clone(), Arc::new(AtomicBool::new(false)));
            let thread = std::thread::spawn({
                let done = done.clone();
                move || {
                    let mut most = 0;
                    while !done.load(Ordering::Acquire) {
                        most = most.max(backlog.unflushed());
                        std::thread::yield_now();
                    }
                    most
                }
            });
            Sampler { done, thread }
        }

        fn most(self) -> u64 {
            self.done.store(true, Ordering::Release);
            self.thread.join().unwrap()
        }
    }

    /// Sixteen writers for a while on a store whose every 256th revision also prunes (a
    /// second write in its group), while another thread samples the store's unflushed
    /// writes. Returns the most it saw.
    async fn most_unflushed(durability: Durability) -> u64 {
        let dir = tempfile::tempdir().unwrap();
        let config = SledConfig::new(dir.path())
            .durability(durability)
            .history_retention(100);
        let core = crate::core::open::open(config, None).unwrap().0;
        let until = Instant::now() + Duration::from_millis(1500);
        let writers: Vec<_> = (0..16)
            .map(|t| {
                let core = core.clone();
                tokio::spawn(async move {
                    let mut i = 0u64;
                    while Instant::now() < until {
                        let txn = Txn::new()
                            .and_then([TxnOp::put(format!("behind/{t}/{}", i % 50), "v")]);
                        crate::txn::txn(&core, txn).await.unwrap();
                        i += 1;
                    }
                    i
                })
            })
            .collect();
        let sampler = Sampler::start(&core.backlog);
        let mut puts = 0;
        for writer in writers {
            puts += writer.await.unwrap();
        }
        let most = sampler.most();
        assert!(puts > 300, "only {puts} puts");
        // Every write is flushed in the end.
        tokio::time::timeout(Duration::from_secs(10), async {
            while core.backlog.unflushed() > 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("every committed write is flushed");
        crate::check::check(&core).unwrap();
        most
    }

    // A group takes room while fewer than MAX_UNFLUSHED writes are unflushed in the process,
    // then adds its transaction and at most one pruning batch.
    const MOST: u64 = MAX_UNFLUSHED as u64 + 1;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn buffered_writers_wait_for_the_disk_to_catch_up() {
        let most = most_unflushed(Durability::Buffered {
            flush_interval: Duration::from_secs(1),
        })
        .await;
        assert!(most <= MOST, "{most} writes were unflushed at once");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn flush_on_commit_writers_count_their_writes_until_their_flush() {
        let most = most_unflushed(Durability::FlushOnCommit).await;
        assert!(most <= MOST, "{most} writes were unflushed at once");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn leases_that_expire_together_wait_for_the_disk_between_their_writes() {
        for durability in [
            Durability::FlushOnCommit,
            Durability::Buffered {
                flush_interval: Duration::from_secs(1),
            },
        ] {
            let dir = tempfile::tempdir().unwrap();
            let config = SledConfig::new(dir.path()).durability(durability);
            // No expiry task: the leases expire in the section of the next write, one sled
            // transaction each.
            let core = crate::core::open::open(config, None).unwrap().0;
            for i in 0..40 {
                let lease = crate::lease::grant(&core, Duration::from_secs(1))
                    .await
                    .unwrap();
                let txn = Txn::new().and_then([TxnOp::put_with_lease(
                    format!("lease/{i}"),
                    "v",
                    lease.id,
                )]);
                crate::txn::txn(&core, txn).await.unwrap();
            }
            // Until the leases' deadline has passed.
            tokio::time::sleep(Duration::from_millis(1100)).await;
            let sampler = Sampler::start(&core.backlog);
            let txn = Txn::new().and_then([TxnOp::put("lease/after", "v")]);
            crate::txn::txn(&core, txn).await.unwrap();
            let most = sampler.most();
            assert!(crate::range::get(&core, b"lease/0").unwrap().is_none());
            assert!(
                most <= MOST,
                "{most} writes were unflushed at once ({durability:?})"
            );
        }
    }

    /// Writes counted without room (a pruning batch, a section's second write) on one
    /// thread, while another flushes as fast as it can: a flush must never release a write
    /// that its pool does not count yet, or the count wraps (the pool's release asserts it)
    /// and, back from the wrap with no release, wakes no writer that saw it full.
    #[test]
    fn a_flush_releases_only_writes_already_counted_in_the_pool() {
        let pool: &'static Pool = Box::leak(Box::default());
        let backlog = Arc::new(Backlog::in_pool(pool));
        let done = Arc::new(AtomicBool::new(false));
        let flusher = std::thread::spawn({
            let (backlog, done) = (backlog.clone(), done.clone());
            move || {
                while !done.load(Ordering::Acquire) {
                    let target = backlog.target();
                    backlog.flushed(target);
                }
            }
        });
        for _ in 0..200_000 {
            backlog.committed(None);
        }
        done.store(true, Ordering::Release);
        let flushed = flusher.join();
        assert!(
            flushed.is_ok(),
            "a flush released a write its pool did not count yet"
        );
        let target = backlog.target();
        backlog.flushed(target);
        assert_eq!(pool.unflushed.load(Ordering::Acquire), 0);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn room_goes_back_when_it_is_not_used_and_when_its_store_closes() {
        // Taken and dropped unused, over and over: it would run out if any were kept.
        for _ in 0..100 {
            drop(Room::take().await);
        }
        let backlog = Backlog::default();
        for _ in 0..10 {
            backlog.committed(Some(Room::take().await));
            let target = backlog.target();
            backlog.flushed(target);
        }
        // Writes counted without room (pruning) and never flushed: the close gives them back.
        for _ in 0..MAX_UNFLUSHED + 3 {
            backlog.committed(None);
        }
        assert_eq!(backlog.unflushed(), MAX_UNFLUSHED as u64 + 3);
        drop(backlog);
        tokio::time::timeout(Duration::from_secs(10), Room::take())
            .await
            .expect("a closed store holds no room");
    }
}
