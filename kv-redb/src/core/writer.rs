//! The single writer: the writer state, the queue of jobs, and a thread that runs them.
//!
//! A write is a job queued ([`Handle::write`]). Whoever commits (the thread, or in a buffered
//! store a caller) takes every job queued (at most [`MAX_GROUP`]), and runs them in one
//! redb write transaction: first the leases that are due expire, then each job plans and
//! applies its writes ([`Section::commit`]) in queue order, each that changes keys at its own
//! revision and seeing the writes of the jobs before it. One commit then makes the group
//! durable together, and each job's caller gets its result after it. A job that fails (a
//! missing lease, a compare on the wrong type) writes nothing and gets its own error; a
//! write that redb refuses fails the whole group, which then writes nothing, and the writer
//! state is read back from the file.
//!
//! Jobs wait in one queue, in submission order. In a durable store the thread runs them. In
//! a buffered store the caller runs them on its own thread ([`Handle::write`]): it queues its
//! job, lets the other ready tasks run once (so writers submitting together queue theirs),
//! and then, unless another caller or the thread holds the writer state (the holder looks at
//! the queue again when it lets go), commits every queued job in one transaction. A buffered
//! commit waits for no disk, so the caller pays its CPU only and saves the two thread
//! switches of a hand-off; writers submitting together still share one transaction.
//!
//! With [`Durability::Buffered`] a transaction commits without an fsync, and the thread makes
//! the commits durable with one durable commit every flush interval (when it is idle, or
//! with the next group once the interval has passed), on [`Handle::flush`], and when the
//! store closes.

use super::section::{Section, expire_due};
use super::state::{Shared, Writer};
use super::tables::Tables;
use crate::config::Durability;
use crate::error::RedbResult;
use keyplane_contract::{Error, ErrorKind, Result};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Most jobs one write transaction runs.
const MAX_GROUP: usize = 256;

/// What a job leaves to do once its transaction is committed (or has failed): answer its
/// caller.
type Reply = Box<dyn FnOnce(Result<()>) + Send>;
/// A write: runs in a [`Section`] and returns how to answer its caller.
type Job = Box<dyn FnOnce(&mut Section<'_, '_>) -> Reply + Send>;

enum Msg {
    /// Jobs are queued.
    Jobs,
    /// A durable commit of everything committed so far.
    Flush(oneshot::Sender<Result<()>>),
    /// A caller committed buffered writes itself: the thread starts its flush timer (also
    /// what the thread does when its timer fires).
    Dirty,
}

/// The writer's state, which the writer thread holds while it runs a group and a caller of a
/// buffered store holds while it runs its own write ([`Handle::submit`]).
struct State {
    w: Writer,
    /// Buffered commits not yet made durable.
    dirty: bool,
    /// When the last durable commit was.
    last_durable: Instant,
}

impl State {
    /// Runs `jobs` in one transaction ([`section`]), `durable` or not, and keeps the account
    /// of what is not yet durable: a durable commit makes everything before it durable, a
    /// buffered one that wrote leaves the store dirty. Whether it wrote.
    fn commit(
        &mut self,
        shared: &Shared,
        jobs: Vec<Job>,
        durable: bool,
        force: bool,
    ) -> Result<bool> {
        let outcome = section(shared, &mut self.w, jobs, durable, force);
        match &outcome {
            Ok(_) if durable => (self.dirty, self.last_durable) = (false, Instant::now()),
            Ok(wrote) => self.dirty |= *wrote,
            Err(_) => {}
        }
        outcome
    }
}

/// Locks `m`, whose data stays whole even if a holder panicked (a panic leaves the
/// transaction uncommitted, and the queue is changed in single steps).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Most groups a caller commits on its own thread before it leaves the rest to the writer
/// thread: a caller is answered without waiting for other callers' writes for long.
const CALLER_ROUNDS: usize = 2;

/// The jobs waiting for a write transaction, in submission order.
struct Queue {
    jobs: VecDeque<Job>,
    /// The writer thread has ended: no job is taken any more.
    closed: bool,
}

/// What the writer thread and the callers share.
struct Inner {
    shared: Arc<Shared>,
    state: Mutex<State>,
    queue: Mutex<Queue>,
    /// The writer thread was told that jobs wait and has not taken them yet.
    signalled: AtomicBool,
    /// Writes in flight through [`Handle::write`].
    in_flight: AtomicUsize,
}

impl Inner {
    /// Up to [`MAX_GROUP`] jobs, oldest first.
    fn take(&self) -> Vec<Job> {
        let mut queue = lock(&self.queue);
        let n = queue.jobs.len().min(MAX_GROUP);
        queue.jobs.drain(..n).collect()
    }

    fn waiting(&self) -> bool {
        !lock(&self.queue).jobs.is_empty()
    }
}

/// The way to the writer thread; dropping it lets the thread run the jobs still queued, make
/// the buffered commits durable, and end; the drop waits for that.
pub(crate) struct Handle {
    inner: Arc<Inner>,
    /// Wakes the writer thread: jobs wait, a flush is asked for, buffered commits wait to be
    /// made durable.
    wake: Option<mpsc::Sender<Msg>>,
    thread: Option<JoinHandle<()>>,
}

impl Handle {
    /// Starts the writer thread with the state recovered at open.
    pub(crate) fn start(shared: Arc<Shared>, w: Writer) -> Result<Handle> {
        let (wake, msgs) = mpsc::channel();
        let inner = Arc::new(Inner {
            shared,
            state: Mutex::new(State {
                w,
                dirty: false,
                last_durable: Instant::now(),
            }),
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                closed: false,
            }),
            signalled: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
        });
        let thread_inner = inner.clone();
        let thread = std::thread::Builder::new()
            .name("keyplane-redb-writer".into())
            .spawn(move || run(&thread_inner, &msgs))
            .map_err(|e| {
                Error::new(
                    ErrorKind::Backend,
                    "redb: starting the writer thread failed",
                )
                .with_source(e)
            })?;
        Ok(Handle {
            inner,
            wake: Some(wake),
            thread: Some(thread),
        })
    }

    fn buffered(&self) -> bool {
        matches!(
            self.inner.shared.config.durability,
            Durability::Buffered { .. }
        )
    }

    /// Runs `f` as a job of the next write transaction; its result once that is committed.
    ///
    /// In a buffered store a caller first lets the other ready tasks run once, so that writers
    /// submitting together (on one runtime thread as on several) queue their jobs; then, if
    /// its job is still queued, it commits every queued job in one transaction, unless another
    /// caller or the writer thread is committing already, which then takes them. On a
    /// multi-thread runtime a write that is the only one in flight skips the wait: there a
    /// yield costs a lone writer a fifth of its rate, and its tasks overlap without it.
    pub(crate) async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Section<'_, '_>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let in_flight = InFlight::new(&self.inner.in_flight);
        let alone = in_flight.alone;
        let rx = self.enqueue(f)?;
        if self.buffered() {
            if !alone || on_current_thread() {
                // A caller that gives up here leaves its job to the writer thread.
                let mut pending = LeftToThread(Some(self));
                tokio::task::yield_now().await;
                pending.0 = None;
            }
            // A caller whose job went with another's group leaves the next group to the
            // next caller, so that it is as large as the writers are many.
            if rx.is_empty() {
                self.commit_queued();
            }
        }
        rx.await.map_err(|_| stopped())?
    }

    /// Queues `f` as [`Handle::write`] does, now; the future that answers it does not borrow
    /// the store, so a task that holds the store weakly (the lease expiry) lets it close
    /// while it waits.
    pub(crate) fn submit<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Section<'_, '_>) -> Result<T> + Send + 'static,
    ) -> impl Future<Output = Result<T>> + Send + 'static {
        let rx = self.enqueue(f);
        if rx.is_ok() && self.buffered() {
            self.commit_queued();
        }
        async move { rx?.await.map_err(|_| stopped())? }
    }

    /// Queues `f`; a durable store's writer thread is woken for it.
    fn enqueue<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Section<'_, '_>) -> Result<T> + Send + 'static,
    ) -> Result<oneshot::Receiver<Result<T>>> {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |section| {
            let out = f(section);
            Box::new(move |committed: Result<()>| {
                let _ = tx.send(committed.and(out));
            })
        });
        {
            let mut queue = lock(&self.inner.queue);
            if queue.closed {
                return Err(stopped());
            }
            queue.jobs.push_back(job);
        }
        if !self.buffered() {
            self.signal();
        }
        Ok(rx)
    }

    /// Tells the writer thread that jobs wait, unless it was told already.
    fn signal(&self) {
        if !self.inner.signalled.swap(true, Ordering::AcqRel) {
            self.send(Msg::Jobs);
        }
    }

    /// Commits the queued jobs on the caller's thread, in a buffered store: a buffered commit
    /// waits for no disk, so this costs the caller its CPU only, and saves the two thread
    /// switches of a hand-off to the writer thread. Every caller that finds the writer state
    /// held leaves its job to the holder, which looks at the queue again once it let go of
    /// the state; after [`CALLER_ROUNDS`] groups a caller leaves what is still queued to the
    /// writer thread.
    fn commit_queued(&self) {
        let inner = &*self.inner;
        for _ in 0..CALLER_ROUNDS {
            let mut state = match inner.state.try_lock() {
                Ok(state) => state,
                Err(TryLockError::Poisoned(state)) => state.into_inner(),
                Err(TryLockError::WouldBlock) => return,
            };
            let jobs = inner.take();
            if jobs.is_empty() {
                // A caller that queued meanwhile and found the state held left its job
                // to this holder: the queue is looked at again below, once let go.
                break;
            }
            let was_dirty = state.dirty;
            let _ = state.commit(&inner.shared, jobs, false, false);
            let woke = !was_dirty && state.dirty;
            drop(state);
            if woke {
                // The thread sleeps without a deadline while nothing is buffered.
                self.send(Msg::Dirty);
            }
        }
        if inner.waiting() {
            self.signal();
        }
    }

    /// Makes every write committed so far durable (a no-op wait under flush-on-commit).
    pub(crate) async fn flush(&self) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        if !self.send(Msg::Flush(tx)) {
            return Err(stopped());
        }
        rx.await.map_err(|_| stopped())?
    }

    /// Whether the thread is there to get `msg`.
    fn send(&self, msg: Msg) -> bool {
        self.wake.as_ref().is_some_and(|q| q.send(msg).is_ok())
    }
}

/// Whether the caller runs on a current-thread runtime, whose tasks overlap only where one
/// waits.
fn on_current_thread() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread)
}

/// A write in flight, from its submission until its caller has its answer (not only until
/// it is committed: writers that loop find each other in flight, and group).
struct InFlight<'a> {
    count: &'a AtomicUsize,
    /// No other write was in flight when this one was submitted.
    alone: bool,
}

impl<'a> InFlight<'a> {
    fn new(count: &'a AtomicUsize) -> Self {
        let alone = count.fetch_add(1, Ordering::AcqRel) == 0;
        InFlight { count, alone }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A queued job whose caller gave up before committing it: the writer thread takes it.
struct LeftToThread<'a>(Option<&'a Handle>);

impl Drop for LeftToThread<'_> {
    fn drop(&mut self) {
        if let Some(handle) = self.0 {
            handle.signal();
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        drop(self.wake.take());
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::error!("redb store: the writer thread panicked");
        }
    }
}

fn stopped() -> Error {
    Error::new(
        ErrorKind::Unavailable,
        "the redb store's writer stopped before the write was committed; it was not applied",
    )
    .set_retryable(false)
    .set_unapplied(true)
}

/// Closes the queue when the writer thread ends, however it ends: the jobs still queued are
/// dropped, which answers their callers that the writer stopped.
struct CloseOnExit<'a>(&'a Inner);

impl Drop for CloseOnExit<'_> {
    fn drop(&mut self) {
        let dropped = {
            let mut queue = lock(&self.0.queue);
            queue.closed = true;
            std::mem::take(&mut queue.jobs)
        };
        drop(dropped);
    }
}

/// The writer thread's loop: when woken, runs the queued jobs in groups under the writer
/// state's lock until none is left; a buffered store's commits are made durable every flush
/// interval, when asked, and at the end.
fn run(inner: &Inner, msgs: &mpsc::Receiver<Msg>) {
    let _close = CloseOnExit(inner);
    let shared = &*inner.shared;
    let state = &inner.state;
    let interval = match shared.config.durability {
        Durability::Buffered { flush_interval } => Some(flush_interval),
        _ => None,
    };
    loop {
        let deadline = {
            let st = lock(state);
            #[cfg(test)]
            std::thread::sleep(Duration::from_micros(
                shared.deadline_hold_us.load(Ordering::Relaxed),
            ));
            interval
                .filter(|_| st.dirty)
                .map(|i| i.saturating_sub(st.last_durable.elapsed()))
        };
        // A caller that found the state held just now left its job to this thread, which
        // runs it before it sleeps.
        let first = match deadline {
            _ if inner.waiting() => Msg::Jobs,
            Some(wait) => match msgs.recv_timeout(wait.max(Duration::from_millis(1))) {
                Ok(msg) => msg,
                Err(mpsc::RecvTimeoutError::Timeout) => Msg::Dirty,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            },
            None => match msgs.recv() {
                Ok(msg) => msg,
                Err(_) => break,
            },
        };
        let mut flushes = Vec::new();
        let mut next = Some(first);
        while let Some(msg) = next.take().or_else(|| msgs.try_recv().ok()) {
            if let Msg::Flush(tx) = msg {
                flushes.push(tx);
            }
        }
        inner.signalled.store(false, Ordering::Release);
        loop {
            let mut st = lock(state);
            let jobs = inner.take();
            // A buffered store's group is durable when asked to be or when the interval
            // passed.
            let force =
                interval.is_some_and(|i| !flushes.is_empty() || st.last_durable.elapsed() >= i);
            let durable = interval.is_none() || force;
            if jobs.is_empty() && !(force && st.dirty) && flushes.is_empty() {
                // As after a commit: a job queued while the state was held is this
                // thread's.
                drop(st);
                if inner.waiting() {
                    continue;
                }
                break;
            }
            let outcome = st.commit(shared, jobs, durable, force);
            drop(st);
            for tx in flushes.drain(..) {
                let _ = tx.send(outcome.as_ref().map(drop).map_err(Clone::clone));
            }
            // Jobs queued while the state was held were left to this thread.
            if !inner.waiting() {
                break;
            }
        }
    }
    // The store is closing: the jobs still queued run, then the buffered commits are made
    // durable.
    loop {
        let mut st = lock(state);
        let jobs = inner.take();
        if jobs.is_empty() {
            if st.dirty
                && let Err(err) = st.commit(shared, Vec::new(), true, true)
            {
                tracing::error!(error = %err, "redb store: the closing durable commit failed");
            }
            break;
        }
        // Its outcome was given to the jobs' callers.
        let _ = st.commit(shared, jobs, interval.is_none(), false);
    }
}

/// Runs `jobs` (and the expiry of due leases) in one write transaction, `durable` or not,
/// commits it when it wrote or when `force`d (a durable commit of the buffered ones before
/// it), publishes the new revision and answers each job; whether it wrote.
fn section(
    shared: &Shared,
    w: &mut Writer,
    jobs: Vec<Job>,
    durable: bool,
    force: bool,
) -> Result<bool> {
    let mut replies = Vec::with_capacity(jobs.len());
    let outcome = run_jobs(shared, w, jobs, (durable, force), &mut replies);
    match &outcome {
        Ok(_) => {
            shared
                .compact_floor
                .store(w.compact_floor, Ordering::Release);
            shared.revision.store(w.revision, Ordering::Release);
            shared.publish(w.revision);
        }
        Err(err) => {
            tracing::warn!(error = %err, "redb store: a write transaction failed");
            match super::open::recover(&shared.db) {
                Ok(recovered) => *w = recovered,
                Err(err) => {
                    tracing::error!(error = %err, "redb store: rereading the state failed");
                }
            }
        }
    }
    let committed = outcome.as_ref().map(drop).map_err(Clone::clone);
    for reply in replies {
        reply(committed.clone());
    }
    outcome
}

fn run_jobs(
    shared: &Shared,
    w: &mut Writer,
    jobs: Vec<Job>,
    (durable, force): (bool, bool),
    replies: &mut Vec<Reply>,
) -> Result<bool> {
    let mut txn = shared.db.begin_write().redb("commit")?;
    let durability = if durable {
        redb::Durability::Immediate
    } else {
        redb::Durability::None
    };
    txn.set_durability(durability).redb("commit")?;
    let wrote = {
        let mut t = Tables::open(&txn)?;
        let mut s = Section {
            shared,
            w,
            t: &mut t,
            failed: None,
            wrote: false,
            prune_now: false,
        };
        // A lease that fails to expire fails the group: its writes would be undone.
        let expired = expire_due(&mut s);
        for job in jobs {
            replies.push(job(&mut s));
        }
        expired?;
        if let Some(err) = s.failed.take() {
            return Err(err);
        }
        s.finish()?;
        s.wrote
    };
    if wrote || force {
        txn.commit().redb("commit")?;
        #[cfg(test)]
        shared.commits.fetch_add(1, Ordering::Relaxed);
    } else {
        txn.abort().redb("commit")?;
    }
    Ok(wrote)
}

#[cfg(test)]
mod tests;
