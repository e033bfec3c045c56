//! The single writer: a thread that owns the writer state and runs every write.
//!
//! A write is a job queued to the thread ([`Handle::write`]). The thread takes the first job
//! waiting and every other job queued behind it (at most [`MAX_GROUP`]), and runs them in one
//! redb write transaction: first the leases that are due expire, then each job plans and
//! applies its writes ([`Section::commit`]) in queue order, each that changes keys at its own
//! revision and seeing the writes of the jobs before it. One commit then makes the group
//! durable together, and each job's caller gets its result after it. A job that fails (a
//! missing lease, a compare on the wrong type) writes nothing and gets its own error; a
//! write that redb refuses fails the whole group, which then writes nothing, and the writer
//! state is read back from the file.
//!
//! A buffered store's write that finds the writer idle (its state free, no job queued) runs
//! on the caller's thread instead, alone in its transaction ([`Handle::submit`]): it waits for
//! no disk, and a lone writer saves two thread switches per write.
//!
//! With [`Durability::Buffered`] a transaction commits without an fsync, and the thread makes
//! the commits durable with one durable commit every flush interval (when it is idle, or
//! with the next group once the interval has passed), on [`Handle::flush`], and when the
//! store closes.

use super::codec::{COMPACT_KEY, REVISION_KEY, attachment_key, decode_entry, encode_events};
use super::state::{Plan, Shared, Writer, now_ms, oldest};
use super::tables::{self, Tables};
use crate::config::Durability;
use crate::error::RedbResult;
use keyplane_contract::raw::emulation::PhysicalWrite;
use keyplane_contract::{Error, ErrorKind, Event, LeaseId, Result};
use redb::ReadableTable;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Most jobs one write transaction runs.
const MAX_GROUP: usize = 256;
/// Log records below the retained history are removed once this many accumulate.
const PRUNE_BATCH: i64 = 256;

/// What a job leaves to do once its transaction is committed (or has failed): answer its
/// caller.
type Reply = Box<dyn FnOnce(Result<()>) + Send>;
/// A write: runs in a [`Section`] and returns how to answer its caller.
type Job = Box<dyn FnOnce(&mut Section<'_, '_>) -> Reply + Send>;

enum Msg {
    Job(Job),
    /// A durable commit of everything committed so far.
    Flush(oneshot::Sender<Result<()>>),
    /// A caller committed buffered writes itself: the thread starts its flush timer.
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

/// Locks `state`, whose data stays whole even if a holder panicked (a panic leaves the
/// transaction uncommitted).
fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The writes of one redb write transaction, as a job sees them.
pub(crate) struct Section<'a, 't> {
    pub(crate) shared: &'a Shared,
    pub(crate) w: &'a mut Writer,
    pub(crate) t: &'a mut Tables<'t>,
    /// A write that redb refused: the transaction is abandoned.
    failed: Option<Error>,
    /// Whether anything was written.
    wrote: bool,
    /// Prune the whole log below the retained history now (an explicit compaction).
    prune_now: bool,
}

impl Section<'_, '_> {
    /// Applies `plan`'s writes to the tables; returns the revision after it (the next
    /// revision when `plan.events` is `Some`).
    pub(crate) fn commit(&mut self, plan: Plan) -> Result<i64> {
        match self.apply(plan) {
            Ok(revision) => Ok(revision),
            Err(err) => {
                self.failed.get_or_insert_with(|| err.clone());
                Err(err)
            }
        }
    }

    fn apply(&mut self, plan: Plan) -> Result<i64> {
        let t = &mut *self.t;
        for write in &plan.kv {
            match write {
                PhysicalWrite::Put { key, value } => {
                    t.kv.insert(key.as_slice(), value.as_slice())
                        .redb("commit")?;
                }
                PhysicalWrite::Delete { key } => {
                    t.kv.remove(key.as_slice()).redb("commit")?;
                }
            }
        }
        for (id, record) in &plan.leases {
            match record {
                Some(record) => t.leases.insert(id, record.encode().as_slice()).map(drop),
                None => t.leases.remove(id).map(drop),
            }
            .redb("commit")?;
        }
        for (key, on) in &plan.attach {
            if *on {
                t.lease_keys.insert(key.as_slice(), ()).redb("commit")?;
            } else {
                t.lease_keys.remove(key.as_slice()).redb("commit")?;
            }
        }
        for (key, value) in &plan.meta {
            t.meta.insert(*key, value).redb("commit")?;
        }
        if let Some(events) = &plan.events {
            let revision = self.w.revision + 1;
            let record = encode_events(events, &plan.deleted);
            t.log.insert(revision, record.as_slice()).redb("commit")?;
            self.w.revision = revision;
        }
        self.wrote = true;
        Ok(self.w.revision)
    }

    /// Moves the explicit compaction point to `revision` and prunes the log below it with
    /// this transaction.
    pub(crate) fn compact_to(&mut self, revision: i64) -> Result<()> {
        let mut plan = Plan::default();
        plan.meta.push((COMPACT_KEY, revision));
        self.commit(plan)?;
        self.w.compact_floor = revision;
        self.prune_now = true;
        Ok(())
    }

    /// The revision counter and the log's pruning, once every job has run.
    fn finish(&mut self) -> Result<()> {
        if !self.wrote {
            return Ok(());
        }
        let w = &mut *self.w;
        self.t
            .meta
            .insert(REVISION_KEY, w.revision)
            .redb("commit")?;
        let oldest = oldest(
            w.revision,
            w.compact_floor,
            self.shared.config.history_retention,
        );
        let batch = if self.prune_now { 1 } else { PRUNE_BATCH };
        if oldest - w.log_floor >= batch {
            self.t
                .log
                .retain_in(w.log_floor..oldest, |_, _| false)
                .redb("commit")?;
            w.log_floor = oldest;
        }
        Ok(())
    }
}

/// The queue to the writer thread; dropping it lets the thread finish the queue, make the
/// buffered commits durable, and end; the drop waits for that.
pub(crate) struct Handle {
    queue: Option<mpsc::Sender<Msg>>,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
    state: Arc<Mutex<State>>,
    /// Jobs sent to the thread that it has not taken yet.
    queued: Arc<AtomicUsize>,
    /// Writes submitted and not yet answered: a write runs on its caller's thread only when
    /// it is the only one, so that concurrent writers are grouped by the thread.
    in_flight: Arc<AtomicUsize>,
}

impl Handle {
    /// Starts the writer thread with the state recovered at open.
    pub(crate) fn start(shared: Arc<Shared>, w: Writer) -> Result<Handle> {
        let (queue, jobs) = mpsc::channel();
        let state = Arc::new(Mutex::new(State {
            w,
            dirty: false,
            last_durable: Instant::now(),
        }));
        let queued = Arc::new(AtomicUsize::new(0));
        let (thread_shared, thread_state, thread_queued) =
            (shared.clone(), state.clone(), queued.clone());
        let thread = std::thread::Builder::new()
            .name("keyplane-redb-writer".into())
            .spawn(move || run(&thread_shared, &thread_state, &thread_queued, &jobs))
            .map_err(|e| {
                Error::new(
                    ErrorKind::Backend,
                    "redb: starting the writer thread failed",
                )
                .with_source(e)
            })?;
        Ok(Handle {
            queue: Some(queue),
            thread: Some(thread),
            shared,
            state,
            queued,
            in_flight: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// Runs `f` as a job of the next write transaction; its result once that is committed.
    pub(crate) async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Section<'_, '_>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.submit(f).await
    }

    /// Queues `f` as [`Handle::write`] does, now; the future that answers it does not borrow
    /// the store, so a task that holds the store weakly (the lease expiry) lets it close
    /// while it waits.
    pub(crate) fn submit<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Section<'_, '_>) -> Result<T> + Send + 'static,
    ) -> impl Future<Output = Result<T>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let alone = self.in_flight.fetch_add(1, Ordering::AcqRel) == 0;
        let in_flight = self.in_flight.clone();
        let job: Job = Box::new(move |section| {
            let out = f(section);
            Box::new(move |committed: Result<()>| {
                in_flight.fetch_sub(1, Ordering::AcqRel);
                let _ = tx.send(committed.and(out));
            })
        });
        let inlined = if alone { self.inline(job) } else { Err(job) };
        let sent = match inlined {
            Ok(()) => Ok(()),
            Err(job) => {
                self.queued.fetch_add(1, Ordering::AcqRel);
                let sent = self.send(Msg::Job(job));
                if sent.is_err() {
                    // The thread is gone and the job with it: it is answered by no one.
                    self.queued.fetch_sub(1, Ordering::AcqRel);
                    self.in_flight.fetch_sub(1, Ordering::AcqRel);
                }
                sent
            }
        };
        async move {
            sent?;
            rx.await.map_err(|_| stopped())?
        }
    }

    /// Runs `job` on the caller's thread, in a buffered store whose writer is idle: no
    /// other write is in flight, the writer state is free and no job waits for the thread. A buffered commit waits for no
    /// disk, so running it here costs the caller its CPU only, and saves the two thread
    /// switches of a hand-off to the writer thread, which a lone writer would pay on every
    /// write. The job's caller is answered before this returns. `Err(job)` when the job
    /// must go to the thread: a durable store, a busy writer, or jobs already queued (they
    /// go first).
    fn inline(&self, job: Job) -> std::result::Result<(), Job> {
        if !matches!(self.shared.config.durability, Durability::Buffered { .. })
            || self.queued.load(Ordering::Acquire) > 0
        {
            return Err(job);
        }
        let Ok(mut state) = self.state.try_lock() else {
            return Err(job);
        };
        let was_dirty = state.dirty;
        if let Ok(true) = section(&self.shared, &mut state.w, vec![job], false, false) {
            state.dirty = true;
        }
        let woke = !was_dirty && state.dirty;
        drop(state);
        if woke {
            // The thread sleeps without a deadline while nothing is buffered.
            let _ = self.send(Msg::Dirty);
        }
        Ok(())
    }

    /// Makes every write committed so far durable (a no-op wait under flush-on-commit).
    pub(crate) async fn flush(&self) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        self.send(Msg::Flush(tx))?;
        rx.await.map_err(|_| stopped())?
    }

    fn send(&self, msg: Msg) -> Result<()> {
        self.queue
            .as_ref()
            .and_then(|q| q.send(msg).ok())
            .ok_or_else(stopped)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        drop(self.queue.take());
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

/// The writer thread's loop: each message, with the messages queued behind it, runs as one
/// group under the writer state's lock; a buffered store's commits are made durable every
/// flush interval, when asked, and at the end.
fn run(shared: &Shared, state: &Mutex<State>, queued: &AtomicUsize, queue: &mpsc::Receiver<Msg>) {
    let interval = match shared.config.durability {
        Durability::Buffered { flush_interval } => Some(flush_interval),
        _ => None,
    };
    loop {
        let deadline = {
            let st = lock(state);
            interval
                .filter(|_| st.dirty)
                .map(|i| i.saturating_sub(st.last_durable.elapsed()))
        };
        let first = match deadline {
            Some(wait) => match queue.recv_timeout(wait.max(Duration::from_millis(1))) {
                Ok(msg) => msg,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let mut st = lock(state);
                    let due = interval.is_some_and(|i| st.last_durable.elapsed() >= i);
                    if st.dirty && due && section(shared, &mut st.w, Vec::new(), true, true).is_ok()
                    {
                        (st.dirty, st.last_durable) = (false, Instant::now());
                    }
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            },
            None => match queue.recv() {
                Ok(msg) => msg,
                Err(_) => break,
            },
        };
        let mut jobs = Vec::new();
        let mut flushes = Vec::new();
        let mut next = Some(first);
        for _ in 0..MAX_GROUP {
            match next.take().or_else(|| queue.try_recv().ok()) {
                Some(Msg::Job(job)) => jobs.push(job),
                Some(Msg::Flush(tx)) => flushes.push(tx),
                Some(Msg::Dirty) => {}
                None => break,
            }
        }
        if jobs.is_empty() && flushes.is_empty() {
            continue;
        }
        let mut st = lock(state);
        queued.fetch_sub(jobs.len(), Ordering::AcqRel);
        // A buffered store's group is durable when asked to be or when the interval passed.
        let force = interval.is_some_and(|i| !flushes.is_empty() || st.last_durable.elapsed() >= i);
        let durable = interval.is_none() || force;
        let outcome = section(shared, &mut st.w, jobs, durable, force);
        match &outcome {
            Ok(_) if durable => (st.dirty, st.last_durable) = (false, Instant::now()),
            Ok(wrote) => st.dirty |= *wrote,
            Err(_) => {}
        }
        drop(st);
        for tx in flushes {
            let _ = tx.send(outcome.as_ref().map(drop).map_err(Clone::clone));
        }
    }
    let mut st = lock(state);
    if st.dirty
        && let Err(err) = section(shared, &mut st.w, Vec::new(), true, true)
    {
        tracing::error!(error = %err, "redb store: the closing durable commit failed");
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
    } else {
        txn.abort().redb("commit")?;
    }
    Ok(wrote)
}

/// Removes a lease and deletes its keys, in one revision when it has keys.
pub(crate) fn remove_lease(s: &mut Section<'_, '_>, id: i64) -> Result<()> {
    let mut plan = Plan::default();
    let mut events = Vec::new();
    plan.leases.insert(id, None);
    for key in tables::attached_keys(&s.t.lease_keys, id)? {
        plan.attach.insert(attachment_key(id, &key), false);
        let prev = match s.t.kv.get(key.as_slice()).redb("lease_expiry")? {
            Some(bytes) => decode_entry(&key, bytes.value(), false)?,
            None => continue,
        };
        if prev.lease != Some(LeaseId(id)) {
            continue;
        }
        plan.kv.push(PhysicalWrite::Delete { key: key.clone() });
        events.push(Event::Delete {
            key,
            prev: Some(prev),
        });
    }
    if !events.is_empty() {
        plan.events = Some(events);
    }
    s.commit(plan)?;
    s.w.leases.remove(id);
    Ok(())
}

/// Expires every lease whose deadline has passed, each in its own revision.
fn expire_due(s: &mut Section<'_, '_>) -> Result<()> {
    for id in s.w.leases.due(now_ms()) {
        remove_lease(s, id)?;
    }
    Ok(())
}
