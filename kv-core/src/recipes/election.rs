//! Leader election over any [`Store`], with the semantics of etcd's `concurrency.Election`.
//!
//! Each candidate creates the key `<prefix><lease id in hex>` holding its proposal, attached
//! to its lease, in a txn guarded by `Compare::absent`. Candidates are queued by the create
//! revision of their keys: the leader is the key with the smallest one. A candidate waits for
//! the deletion of the key just before it, so a resigned, revoked or expired leader hands
//! leadership to the next candidate at once. The leader's create revision is its fencing
//! revision: [`fence`](crate::recipes::LeaseHeld::fence) makes a write conditional on still leading.
//!
//! The queue is the one [`Lock`](crate::recipes::Lock) uses: an election named `n` and a lock named
//! `n` share their keys, so they must not be given the same name.

use super::held::{Hold, LeaseHeld};
use super::queue::{Held, Queue, lost};
use crate::Entry;
use crate::LeaseId;
use crate::Store;
use crate::raw::validate_key;
use crate::{ErrorKind, Result};
use crate::{Event, WatchOptions, WatchStream};
use crate::{Txn, TxnOp};
use futures::stream::{BoxStream, StreamExt};
use std::collections::BTreeMap;
use std::sync::Arc;

/// An election on a store. Cheap to create and clone; [`Election::campaign`] runs for it.
///
/// ```
/// # #[tokio::main] async fn main() -> keyplane_core::Result<()> {
/// use keyplane_core::{Store, Txn, TxnOp};
/// use keyplane_core::recipes::{Election, LeaseHeld, LeaseKeeper};
/// use std::{sync::Arc, time::Duration};
///
/// let store: Arc<dyn Store> = Arc::new(keyplane_mem::MemStore::new());
/// let keeper = LeaseKeeper::grant(store.clone(), Duration::from_secs(10)).await?;
/// let election = Election::new(store.clone(), "cronix/dispatcher")?;
/// let leadership = election.campaign(keeper.id(), "scheduler-a").await?;
/// assert_eq!(election.leader().await?.unwrap().value, b"scheduler-a");
/// // Write only while still leading: the fence compares the leader key's create revision.
/// let fenced = Txn::new()
///     .when([leadership.fence()])
///     .and_then([TxnOp::put("cronix/dispatched", "job-7")]);
/// assert!(store.txn(fenced).await?.succeeded);
/// leadership.proclaim("scheduler-a (draining)").await?;
/// leadership.resign().await?;
/// assert!(election.leader().await?.is_none());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Election {
    queue: Queue,
}

/// The leader of an election, as read from the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leader {
    /// The leader's key: `<prefix><lease id in hex>`.
    pub key: Vec<u8>,
    /// The leader's proposal: the value given to [`Election::campaign`], or the latest
    /// [`Leadership::proclaim`].
    pub value: Vec<u8>,
    /// The fencing revision: the leader key's create revision. It grows with every new
    /// leader.
    pub revision: i64,
    /// The revision of the leader's latest proposal.
    pub mod_revision: i64,
    /// The lease the leader holds its key with (`None` only for a key written without one,
    /// by another program).
    pub lease: Option<LeaseId>,
}

impl Leader {
    fn from_entry(entry: Entry) -> Self {
        Leader {
            key: entry.key,
            value: entry.value,
            revision: entry.create_revision,
            mod_revision: entry.mod_revision,
            lease: entry.lease,
        }
    }
}

impl Election {
    /// The election called `name`; its candidates' keys live under `<name>/`, as etcd's do.
    ///
    /// # Errors
    /// `InvalidKey` when `name` is not a valid key.
    pub fn new(store: Arc<dyn Store>, name: impl AsRef<[u8]>) -> Result<Self> {
        let name = name.as_ref();
        validate_key(name)?;
        let mut prefix = name.to_vec();
        prefix.push(b'/');
        Self::with_prefix(store, prefix)
    }

    /// The election whose candidates' keys are `<prefix><lease id in hex>`, for layouts that
    /// name candidates otherwise than as children of a directory (for instance
    /// `locks/dispatcher.<lease>`, siblings of other keys). Only keys that are the prefix
    /// followed by hexadecimal digits are candidates.
    ///
    /// # Errors
    /// `InvalidKey` when `prefix` is not a valid key.
    pub fn with_prefix(store: Arc<dyn Store>, prefix: impl Into<Vec<u8>>) -> Result<Self> {
        Ok(Election {
            queue: Queue::new(store, prefix.into())?,
        })
    }

    /// The prefix of the candidates' keys.
    pub fn prefix(&self) -> &[u8] {
        &self.queue.prefix
    }

    /// Runs for leader with `lease`, proposing `value`, and waits until elected.
    ///
    /// Leadership lasts until [`Leadership::resign`], until the [`Leadership`] is dropped, or
    /// until `lease` ends (revoked or expired); [`Leadership::lost`] tells when that happens
    /// without a resignation. Dropping this future while it waits withdraws the candidacy.
    ///
    /// # Errors
    /// `LeaseNotFound` when the lease does not exist; `AlreadyExists` when this lease is
    /// already a candidate in this election (etcd resumes such a campaign; here the first
    /// campaign keeps the key, so two handles never both believe they lead); `LockLost` when
    /// the lease ended while waiting; backend errors.
    pub async fn campaign(&self, lease: LeaseId, value: impl AsRef<[u8]>) -> Result<Leadership> {
        let held = self.queue.join_and_wait(lease, value.as_ref()).await?;
        tracing::debug!(key = %crate::raw::escape_bytes(&held.key), "elected");
        Ok(Leadership::new(held))
    }

    /// Runs for leader only if no other candidate leads or waits: `None` (and nothing left
    /// in the store) otherwise.
    ///
    /// # Errors
    /// As [`Election::campaign`].
    pub async fn try_campaign(
        &self,
        lease: LeaseId,
        value: impl AsRef<[u8]>,
    ) -> Result<Option<Leadership>> {
        Ok(self
            .queue
            .try_join(lease, value.as_ref())
            .await?
            .map(Leadership::new))
    }

    /// The current leader, or `None` when nobody runs.
    ///
    /// # Errors
    /// Backend errors.
    pub async fn leader(&self) -> Result<Option<Leader>> {
        let (candidates, _) = self.queue.contenders(false).await?;
        Ok(candidates.into_iter().next().map(Leader::from_entry))
    }

    /// Follows the leadership: yields the current leader first, then every change of
    /// leader or of the leader's proposal, in order, each once. `None` means nobody leads.
    ///
    /// The stream is a listing at one revision followed by a watch from the next; it lists
    /// again when the watch's history is compacted or the watch ends, so it never misses the
    /// latest leader (intermediate ones may then be skipped, as with any compacted history).
    /// It ends only with an error it could not recover from.
    pub fn observe(&self) -> BoxStream<'static, Result<Option<Leader>>> {
        let state = Observer {
            queue: self.queue.clone(),
            candidates: BTreeMap::new(),
            watch: None,
            last: None,
            started: false,
            failed: false,
        };
        futures::stream::unfold(state, |mut state| async move {
            if state.failed {
                return None;
            }
            match state.next().await {
                Ok(leader) => Some((Ok(leader), state)),
                Err(e) => {
                    state.failed = true;
                    Some((Err(e), state))
                }
            }
        })
        .boxed()
    }
}

impl std::fmt::Debug for Election {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Election")
            .field("prefix", &crate::raw::escape_bytes(self.prefix()))
            .finish()
    }
}

/// The state of [`Election::observe`]: every candidate by create revision, and the watch.
struct Observer {
    queue: Queue,
    candidates: BTreeMap<i64, Leader>,
    watch: Option<WatchStream>,
    /// The last leader yielded (`Some(None)` for "nobody").
    last: Option<Option<Leader>>,
    started: bool,
    failed: bool,
}

impl Observer {
    fn leader(&self) -> Option<Leader> {
        self.candidates.values().next().cloned()
    }

    /// Lists the candidates and watches from the listing's next revision.
    async fn list(&mut self) -> Result<()> {
        let (candidates, revision) = self.queue.contenders(false).await?;
        self.candidates = candidates
            .into_iter()
            .map(|e| (e.create_revision, Leader::from_entry(e)))
            .collect();
        let watch = WatchOptions::prefix(&self.queue.prefix).from_revision(revision + 1);
        self.watch = Some(self.queue.store.watch(watch).await?);
        Ok(())
    }

    /// Applies one event to the candidates.
    fn apply(&mut self, event: Event) {
        match event {
            Event::Put { entry, .. } if self.queue.is_contender(&entry.key) => {
                self.candidates.retain(|_, c| c.key != entry.key);
                self.candidates
                    .insert(entry.create_revision, Leader::from_entry(entry));
            }
            Event::Delete { key, .. } => self.candidates.retain(|_, c| c.key != key),
            Event::Put { .. } | Event::Collection(_) => {}
        }
    }

    /// The next leader that differs from the last one yielded.
    async fn next(&mut self) -> Result<Option<Leader>> {
        if !self.started {
            self.started = true;
            self.list().await?;
            let leader = self.leader();
            self.last = Some(leader.clone());
            return Ok(leader);
        }
        loop {
            let item = match self.watch.as_mut() {
                Some(watch) => watch.next().await,
                None => None,
            };
            match item {
                Some(Ok(batch)) => {
                    for event in batch.events {
                        self.apply(event);
                    }
                }
                Some(Err(e)) if !matches!(e.kind(), ErrorKind::Compacted { .. }) => {
                    return Err(e);
                }
                // Compacted, or the watch ended: list again.
                Some(Err(_)) | None => self.list().await?,
            }
            let leader = self.leader();
            if self.last.as_ref() != Some(&leader) {
                self.last = Some(leader.clone());
                return Ok(leader);
            }
        }
    }
}

/// Leadership won by [`Election::campaign`]. Resigned by [`Leadership::resign`], or in the
/// background when dropped.
///
/// Its key, lease, fencing revision (the leader key's create revision, which grows with every
/// new leader), fence and loss come from [`LeaseHeld`].
pub struct Leadership {
    held: Held,
    hold: Hold,
}

impl LeaseHeld for Leadership {
    fn hold(&self) -> &Hold {
        &self.hold
    }
}

impl Leadership {
    fn new(held: Held) -> Self {
        let hold = held.hold("the leader key was deleted");
        Leadership { held, hold }
    }

    /// Replaces the leader's proposal with `value`, only while still leading (one txn
    /// fenced on the key's create revision; the key stays on its lease). Returns the write's
    /// revision.
    ///
    /// # Errors
    /// `LockLost` when the leadership was lost (nothing is written); backend errors.
    pub async fn proclaim(&self, value: impl AsRef<[u8]>) -> Result<i64> {
        let resp = self
            .held
            .store
            .txn(
                Txn::new()
                    .when([self.fence()])
                    .and_then([TxnOp::put_with_lease(
                        &self.held.key,
                        value.as_ref(),
                        self.held.lease,
                    )]),
            )
            .await?;
        if resp.succeeded {
            Ok(resp.revision)
        } else {
            Err(lost(
                &self.held.key,
                "the leadership was lost before proclaim",
            ))
        }
    }

    /// Gives up the leadership: deletes the leader key, which elects the next candidate.
    ///
    /// # Errors
    /// `LockLost` when the leadership had already been lost; backend errors.
    pub async fn resign(self) -> Result<()> {
        self.held
            .release("the leadership was lost before resigning")
            .await
    }
}

impl std::fmt::Debug for Leadership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leadership")
            .field("key", &crate::raw::escape_bytes(self.key()))
            .field("revision", &self.revision())
            .field("lease", &self.lease())
            .field("lost", &self.is_lost())
            .finish()
    }
}
