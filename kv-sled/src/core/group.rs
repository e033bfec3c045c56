//! Group commit: transactions submitted concurrently are planned one after another under the
//! writer mutex, each against the data as the earlier ones of its group left it, and
//! committed together as one sled transaction, flushed once and published once.
//!
//! A transaction is a job on the queue. The caller that queues a job while no leader is
//! active becomes the leader; that decision is made under the queue mutex, so a queued job
//! always has a leader. The leader yields once, so that the writers ready to run queue
//! their jobs too (under flush-on-commit they also queue while a group flushes, and in
//! either durability while the leader waits for room for its write, see
//! [`behind`](super::behind)), then takes the queued jobs (up to [`GROUP_OPS`] ops)
//! and runs them as one group, whose revisions share one log record: each
//! job gets its own compares, results and (when it changes keys) the next revision, and a
//! job whose planning fails gets its error and contributes nothing. Once the group is
//! committed and durable, the leader publishes its last revision, answers every job, and
//! hands the leadership to the caller of the first job still queued, or ends it when
//! none is. Each caller so leads at most the one group that holds its own job, and a write
//! that meets no other pays one extra mutex round and one yield.
//!
//! Cancellation: a leader whose future is dropped while its group flushes finishes that
//! group on the spot (a blocking flush, then publication and the answers, in
//! [`InFlight`]'s drop) and still hands the leadership on ([`Leadership`]'s drop). A job
//! whose caller is gone before its group starts is skipped; a handed-over leadership that
//! finds its caller gone moves on to the next job.

use super::behind::Room;
use super::queue::{GroupState, Job, Leadership, PlanJob, Reply};
use super::writes::{Commits, GroupBase};
use super::{Core, expire_due};
use crate::config::Durability;
use keyplane_contract::{Error, Result, Txn, TxnResponse};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::sync::oneshot;

/// Most ops one group plans (a transaction larger than that is a group of its own). A
/// larger sled transaction costs more per key it writes (its read and write sets, and the
/// garbage its pinned epoch holds back, grow with it), and its readers wait behind it.
const GROUP_OPS: usize = 8192;

impl Core {
    /// Runs a validated transaction as a job of a group and returns its result once the
    /// group is durable (per the durability) and published.
    pub(crate) async fn submit(self: &Arc<Self>, txn: Txn, plan: PlanJob) -> Result<TxnResponse> {
        let (reply, mut answer) = oneshot::channel();
        let lead = {
            let mut waiting = self.group.lock();
            waiting.jobs.push(Job { txn, plan, reply });
            !std::mem::replace(&mut waiting.leader_active, true)
        };
        if lead {
            self.lead(Leadership(Arc::clone(&self.group))).await;
        }
        loop {
            match answer.await {
                Ok(Reply::Done(result)) => return result,
                Ok(Reply::Lead(mut handover)) => {
                    answer = handover
                        .answer
                        .take()
                        .expect("a handover carries its answer");
                    let leadership = handover.leadership.take().expect("and its leadership");
                    self.lead(leadership).await;
                }
                Err(_) => {
                    return Err(Error::internal(
                        "sled store: a queued transaction was dropped unanswered",
                    ));
                }
            }
        }
    }

    /// Runs one group as its leader, then hands the leadership on (when `leadership` drops,
    /// after the group's jobs are answered).
    async fn lead(&self, leadership: Leadership) {
        // Lets the writers that are ready to run queue their jobs first, the callers the
        // last group answered among them: without it, a group commits on the thread that
        // answered the last one before those callers could run again, and groups stay
        // small whenever nothing else (a flush) holds the leader.
        tokio::task::yield_now().await;
        // The jobs stay queued while it waits, and the group grows.
        let room = Room::take().await;
        let mut group = self.run_group(room);
        if group.must_flush {
            group.flushed = Some(self.flush().await);
        }
        drop(group);
        drop(leadership);
    }

    /// Flushes (per the durability) and publishes a section's commits, and then stops
    /// counting it in [`Core::unflushed`] (also when the future is dropped during the flush),
    /// as a group's are ([`InFlight`]).
    pub(crate) async fn finish(&self, commits: Commits) -> Result<()> {
        let must_flush = commits.wrote && self.config.durability == Durability::FlushOnCommit;
        let mut in_flight = InFlight::section(self, commits, must_flush);
        let flushed = if must_flush {
            // Flushing outside the writer mutex lets concurrent writers share one fsync.
            self.flush().await
        } else {
            Ok(())
        };
        in_flight.flushed = Some(flushed.clone());
        flushed
    }

    /// Takes the queued jobs and commits them as one group; the flush, the publication and
    /// the answers are left to the returned [`InFlight`].
    fn run_group(&self, room: Room) -> InFlight<'_> {
        let jobs = self.group.take(GROUP_OPS);
        let mut commits = Commits::default();
        let mut answers = Vec::with_capacity(jobs.len());
        {
            let mut w = self.lock_writer();
            w.room = Some(room);
            let base = expire_due(self, &mut w, &mut commits).and_then(|()| {
                GroupBase::new(&self.trees.data, jobs.iter().flat_map(Job::written))
            });
            match base {
                Err(err) => {
                    answers.extend(jobs.into_iter().map(|job| (job.reply, Err(err.clone()))));
                }
                Ok(tree) => {
                    let mut group = GroupState::new(&tree, self.revision());
                    for job in jobs {
                        // Its caller is gone: nobody waits for it, so it is not run.
                        if job.reply.is_closed() {
                            continue;
                        }
                        let result = (job.plan)(&w, &mut group, &job.txn);
                        answers.push((job.reply, result));
                    }
                    let writes = group.into_writes();
                    if !writes.is_empty()
                        && let Err(err) = self.apply(&mut w, writes, &mut commits)
                    {
                        // Nothing of the group was written, and what its jobs read may be
                        // another job's write.
                        for (_, result) in &mut answers {
                            if result.is_ok() {
                                *result = Err(err.clone());
                            }
                        }
                    }
                }
            }
            // Room the group did not use goes back.
            w.room = None;
        }
        // A job that wrote nothing may have read another writer's commit that is not on
        // disk yet (see `Core::settle`).
        let must_flush = self.config.durability == Durability::FlushOnCommit
            && (commits.wrote || self.unflushed.load(Ordering::SeqCst) > 0);
        InFlight {
            core: self,
            answers,
            commits,
            must_flush,
            flushed: None,
        }
    }
}

/// A committed group, or another writer section, not yet answered. Dropped, it finishes the
/// flush (blocking, when the future that was flushing was dropped: watchers never stall on a
/// cancelled write), publishes the revision, stops counting the section in
/// [`Core::unflushed`] and answers the group's jobs.
pub(crate) struct InFlight<'a> {
    core: &'a Core,
    answers: Vec<(oneshot::Sender<Reply>, Result<TxnResponse>)>,
    commits: Commits,
    must_flush: bool,
    /// The flush's outcome, once it is done.
    pub(crate) flushed: Option<Result<()>>,
}

impl<'a> InFlight<'a> {
    /// A writer section without jobs (leases, compaction): `must_flush` when it wrote under
    /// `FlushOnCommit`.
    pub(crate) fn section(core: &'a Core, commits: Commits, must_flush: bool) -> Self {
        InFlight {
            core,
            answers: Vec::new(),
            commits,
            must_flush,
            flushed: None,
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let core = self.core;
        let flushed = match self.flushed.take() {
            Some(flushed) => flushed,
            None if self.must_flush => {
                let flushed = core.flush_blocking();
                if let Err(err) = &flushed {
                    tracing::warn!(error = %err, "sled store: flushing a cancelled write failed");
                }
                flushed
            }
            None => Ok(()),
        };
        // Published even when the flush failed: the revision is committed and readable, and
        // holding it back would stall every watch.
        core.publish(self.commits.revision);
        if self.commits.counted {
            core.unflushed.fetch_sub(1, Ordering::SeqCst);
        }
        for (reply, result) in self.answers.drain(..) {
            let result = match (&flushed, result) {
                (Err(err), Ok(_)) => Err(err.clone()),
                (_, result) => result,
            };
            // A caller that is gone no longer needs its answer.
            let _ = reply.send(Reply::Done(result));
        }
    }
}

// The tests hold the writer mutex on the test's own thread, across awaits, to stop groups
// at a known point while the runtime's workers queue transactions.
#[cfg(test)]
#[allow(clippy::await_holding_lock)]
mod tests {
    use super::*;
    use crate::config::SledConfig;
    use crate::core::Writer;
    use crate::core::queue::Queue;
    use futures::StreamExt;
    use keyplane_contract::{Compare, CompareOp, ErrorKind, LeaseId, TxnOp, WatchOptions};
    use std::sync::MutexGuard;
    use std::time::Duration;

    impl Queue {
        fn len(&self) -> usize {
            self.lock().jobs.len()
        }

        /// A leader has taken every queued job.
        fn taken(&self) -> bool {
            let waiting = self.lock();
            waiting.leader_active && waiting.jobs.is_empty()
        }
    }

    fn open(dir: &tempfile::TempDir) -> Arc<Core> {
        crate::core::open::open(SledConfig::new(dir.path()), None)
            .unwrap()
            .0
    }

    fn put(key: &str, value: &str) -> Txn {
        Txn::new().and_then([TxnOp::put(key, value)])
    }

    fn spawn_txn(core: &Arc<Core>, txn: Txn) -> tokio::task::JoinHandle<Result<TxnResponse>> {
        let core = core.clone();
        tokio::spawn(async move { crate::txn::txn(&core, txn).await })
    }

    /// Waits until `n` jobs are queued.
    async fn queued(core: &Core, n: usize) {
        while core.group.len() < n {
            tokio::task::yield_now().await;
        }
    }

    type Task = tokio::task::JoinHandle<Result<TxnResponse>>;

    /// Holds the writer mutex while a first transaction leads a group of its own, blocked
    /// on the mutex: the transactions submitted until the guard is dropped form the next
    /// group, in order. Returns the guard and the first transaction's task.
    async fn hold_groups(core: &Arc<Core>) -> (MutexGuard<'_, Writer>, Task) {
        let writer = core.lock_writer();
        let first = spawn_txn(core, put("group/first", "0"));
        while !core.group.taken() {
            tokio::task::yield_now().await;
        }
        (writer, first)
    }

    /// Submits `txns` one after another into the held group.
    async fn queue(core: &Arc<Core>, txns: Vec<Txn>) -> Vec<Task> {
        let mut tasks = Vec::new();
        for txn in txns {
            tasks.push(spawn_txn(core, txn));
            queued(core, tasks.len()).await;
        }
        tasks
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_job_gets_its_error_and_the_rest_of_its_group_commits() {
        let dir = tempfile::tempdir().unwrap();
        let core = open(&dir);
        let missing = LeaseId(0x7777);
        let (writer, first) = hold_groups(&core).await;
        let rest = queue(
            &core,
            vec![
                put("group/a", "1"),
                Txn::new().and_then([TxnOp::put_with_lease("group/b", "1", missing)]),
                // Sees the put of `group/a` planned before it in the group.
                Txn::new()
                    .when([Compare::version("group/a", CompareOp::Equal, 1)])
                    .and_then([TxnOp::put("group/c", "1"), TxnOp::get("group/a")]),
                // Changes nothing: answers at the revision the group reached before it.
                Txn::new().when([Compare::absent("group/a")]),
                put("group/a", "2"),
            ],
        )
        .await;
        drop(writer);
        assert_eq!(first.await.unwrap().unwrap().revision, 1);
        let mut results = Vec::new();
        for task in rest {
            results.push(task.await.unwrap());
        }
        assert_eq!(results[0].as_ref().unwrap().revision, 2);
        assert_eq!(
            results[1].as_ref().unwrap_err().kind(),
            ErrorKind::LeaseNotFound
        );
        let cas = results[2].as_ref().unwrap();
        assert!(cas.succeeded);
        assert_eq!(cas.revision, 3);
        let read = cas.results[1].clone();
        assert!(
            matches!(read, keyplane_contract::OpResult::Get(Some(e)) if e.value == b"1" && e.mod_revision == 2)
        );
        let none = results[3].as_ref().unwrap();
        assert!(!none.succeeded);
        assert_eq!(none.revision, 3);
        assert_eq!(results[4].as_ref().unwrap().revision, 4);

        assert_eq!(core.revision(), 4);
        let a = crate::range::get(&core, b"group/a").unwrap().unwrap();
        assert_eq!(
            (a.value.as_slice(), a.version, a.create_revision),
            (&b"2"[..], 2, 2)
        );
        assert!(crate::range::get(&core, b"group/b").unwrap().is_none());
        crate::check::check(&core).unwrap();
        let mut watch =
            crate::watch::watch(&core, WatchOptions::prefix("group/").from_revision(1)).unwrap();
        for revision in 1..=4 {
            let batch = watch.next().await.unwrap().unwrap();
            assert_eq!(batch.revision, revision);
            assert_eq!(batch.events.len(), 1);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_leader_dropped_while_it_flushes_finishes_its_group_and_hands_over() {
        let dir = tempfile::tempdir().unwrap();
        let core = open(&dir);
        let mut watch =
            crate::watch::watch(&core, WatchOptions::prefix("group/").from_revision(1)).unwrap();
        let (writer, leader) = hold_groups(&core).await;
        let followers: Vec<_> = (0..8)
            .map(|i| spawn_txn(&core, put(&format!("group/f{i}"), "1")))
            .collect();
        queued(&core, followers.len()).await;
        // Cancelled at its next await: the flush of its group.
        leader.abort();
        drop(writer);
        assert!(leader.await.unwrap_err().is_cancelled());
        let mut revisions = Vec::new();
        for follower in followers {
            revisions.push(follower.await.unwrap().unwrap().revision);
        }
        revisions.sort_unstable();
        assert_eq!(revisions, (2..=9).collect::<Vec<_>>());
        for revision in 1..=9 {
            let batch = tokio::time::timeout(Duration::from_secs(10), watch.next())
                .await
                .expect("every revision is published")
                .unwrap()
                .unwrap();
            assert_eq!(batch.revision, revision);
        }
        // The leadership was not left behind.
        let after = crate::txn::txn(&core, put("group/after", "1"))
            .await
            .unwrap();
        assert_eq!(after.revision, 10);
        assert_eq!(core.unflushed.load(Ordering::SeqCst), 0);
        crate::check::check(&core).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn jobs_whose_callers_are_gone_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let core = open(&dir);
        let (writer, first) = hold_groups(&core).await;
        let mut tasks = queue(&core, vec![put("group/gone", "1"), put("group/kept", "1")])
            .await
            .into_iter();
        let (gone, kept) = (tasks.next().unwrap(), tasks.next().unwrap());
        gone.abort();
        assert!(gone.await.unwrap_err().is_cancelled());
        drop(writer);
        assert_eq!(first.await.unwrap().unwrap().revision, 1);
        assert_eq!(kept.await.unwrap().unwrap().revision, 2);
        assert!(crate::range::get(&core, b"group/gone").unwrap().is_none());
    }
}
