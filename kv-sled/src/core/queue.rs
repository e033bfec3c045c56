//! The queue of a group commit: the jobs waiting for a group, the leadership that runs them,
//! and the state of a group being planned (see [`group`](super::group) for how groups run).

use super::codec::{LOG_RECORD_BYTES, append_events, encode_events};
use super::writes::{GroupBase, Plan, Writer, Writes};
use keyplane_contract::raw::emulation::Overlay;
use keyplane_contract::{Result, Txn, TxnOp, TxnResponse};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::oneshot;

/// Plans one job: runs its compares and ops against the group's state and adds its writes
/// to the group. Called under the writer mutex.
pub(crate) type PlanJob = fn(&Writer, &mut GroupState<'_>, &Txn) -> Result<TxnResponse>;

/// The data a job of a group sees: the data tree overlaid with the writes of the jobs
/// planned before it in the group.
pub(crate) type GroupData<'a> = Overlay<'a, GroupBase<'a>>;

/// The queue of jobs waiting for a group, and whether a leader is active.
#[derive(Default)]
pub(crate) struct Queue(Mutex<Waiting>);

#[derive(Default)]
pub(crate) struct Waiting {
    pub(crate) jobs: Vec<Job>,
    pub(crate) leader_active: bool,
}

pub(crate) struct Job {
    pub(crate) txn: Txn,
    pub(crate) plan: PlanJob,
    pub(crate) reply: oneshot::Sender<Reply>,
}

pub(crate) enum Reply {
    /// The job's result, sent once its group is durable and published.
    Done(Result<TxnResponse>),
    /// The job is still queued and its caller now leads the next group.
    Lead(Handover),
}

/// A leadership handed to a waiting caller, with the channel its own job is answered on.
pub(crate) struct Handover {
    pub(crate) answer: Option<oneshot::Receiver<Reply>>,
    pub(crate) leadership: Option<Leadership>,
}

impl Drop for Handover {
    fn drop(&mut self) {
        // Closed first, so that the leadership, handing itself on, skips this job.
        drop(self.answer.take());
        drop(self.leadership.take());
    }
}

impl Queue {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Waiting> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the jobs of the next group: the queued ones, oldest first, while their ops add
    /// up to at most `ops` (always one at least). The rest wait for the group after it.
    pub(crate) fn take(&self, ops: usize) -> Vec<Job> {
        let mut waiting = self.lock();
        let mut total = 0;
        let count = waiting
            .jobs
            .iter()
            .take_while(|job| {
                total += job.weight();
                total <= ops
            })
            .count()
            .max(1);
        let count = count.min(waiting.jobs.len());
        waiting.jobs.drain(..count).collect()
    }
}

impl Job {
    /// The keys its ops write (in either branch).
    pub(crate) fn written(&self) -> impl Iterator<Item = &[u8]> {
        let txn = &self.txn;
        txn.success
            .iter()
            .chain(&txn.failure)
            .filter_map(|op| match op {
                TxnOp::Put { key, .. } | TxnOp::Delete { key } => Some(key.as_slice()),
                _ => None,
            })
    }

    /// How many ops its group may have to plan and write for it.
    fn weight(&self) -> usize {
        let txn = &self.txn;
        1 + txn.compares.len() + txn.success.len().max(txn.failure.len())
    }
}

/// The state of a group being planned: the data as its jobs so far left it, and their
/// writes to the other trees (their revisions' events in as few log records as
/// [`LOG_RECORD_BYTES`] allows).
pub(crate) struct GroupState<'a> {
    data: GroupData<'a>,
    leases: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    meta: Vec<(&'static [u8], Vec<u8>)>,
    log: Vec<(i64, Vec<u8>)>,
    revision: i64,
}

impl<'a> GroupState<'a> {
    pub(crate) fn new(data: &'a GroupBase<'a>, revision: i64) -> Self {
        GroupState {
            data: Overlay::new(data),
            leases: BTreeMap::new(),
            meta: Vec::new(),
            log: Vec::new(),
            revision,
        }
    }

    /// The data as the jobs planned so far left it.
    pub(crate) fn data(&self) -> &GroupData<'a> {
        &self.data
    }

    /// The revision after the jobs planned so far.
    pub(crate) fn revision(&self) -> i64 {
        self.revision
    }

    /// Adds a job's writes to the group, after those of the earlier jobs; returns the
    /// revision after it (the next revision when it has events).
    pub(crate) fn add(&mut self, plan: Plan) -> i64 {
        self.data.record(plan.data);
        self.leases.extend(plan.leases);
        self.meta.extend(plan.meta);
        if let Some(events) = plan.events {
            self.revision += 1;
            match self.log.last_mut() {
                Some((last, record)) if record.len() < LOG_RECORD_BYTES => {
                    *last = self.revision;
                    append_events(record, &events, &plan.deleted);
                }
                _ => self
                    .log
                    .push((self.revision, encode_events(&events, &plan.deleted))),
            }
        }
        self.revision
    }

    pub(crate) fn into_writes(self) -> Writes {
        Writes {
            data: self.data.into_writes(),
            leases: self.leases,
            meta: self.meta,
            log: self.log,
        }
    }
}

/// The leadership of the queue. Dropped, it hands itself to the caller of the first job
/// still waiting, or ends when there is none.
pub(crate) struct Leadership(pub(crate) Arc<Queue>);

impl Drop for Leadership {
    fn drop(&mut self) {
        let (reply, answer) = {
            let mut waiting = self.0.lock();
            waiting.jobs.retain(|job| !job.reply.is_closed());
            let Some(first) = waiting.jobs.first_mut() else {
                waiting.leader_active = false;
                return;
            };
            let (reply, answer) = oneshot::channel();
            (std::mem::replace(&mut first.reply, reply), answer)
        };
        let handover = Handover {
            answer: Some(answer),
            leadership: Some(Leadership(self.0.clone())),
        };
        // When that caller is gone, dropping the refused handover closes its job's channel
        // and the leadership it carries moves on to the next job by itself.
        drop(reply.send(Reply::Lead(handover)));
    }
}
