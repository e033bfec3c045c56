//! The dispatcher: the one scheduler instance, elected among several, that writes the
//! scheduler's keys (job assignments, moves, failover, one-shot triggers).
//!
//! # Keys
//! Each candidate holds the document's lock key `/Cronix/lock/<name>.<lease id in hex>`
//! (for the default name, `/Cronix/lock/dispatcher.694d7a3c1f2b0e05`), with the document's
//! lock value (the empty string), attached to the candidate's lease. The candidate whose key
//! has the smallest create revision is the dispatcher
//! ([`keyplane_core::recipes::Election`] with a prefix of `/Cronix/lock/<name>.`).
//!
//! Why these keys: the document reserves `/Cronix/lock/<key>` for "any module that needs a
//! distributed lock", with an empty value and presence as the lock state. A queue of such
//! keys keeps that meaning (each key is held by its candidate while it lives), decodes as a
//! [`LockKey`] for every reader of the schema, and needs no key the document does not list.
//! A single `/Cronix/lock/dispatcher` key cannot be an election (waiting candidates would
//! poll), and `/Cronix/lock/dispatcher/<lease>` would make a lock a directory, which the
//! document's one-segment lock keys never are.
//!
//! # Fencing
//! Every write of a [`Dispatcher`] carries a compare on its key's create revision, the
//! election's fencing revision. A dispatcher that lost its leadership (lease expired during a
//! pause, key deleted) writes nothing and gets [`CronixError::NotDispatcher`], even if it
//! has not noticed the loss yet.

use super::error::{CronixError, Result};
use super::failover::{self, FailoverReport};
use super::fencing::Fence;
use super::job;
use super::keys::LockKey;
use super::once;
use super::segments::{JobId, LockName};
use super::values::{JobConfig, OnceTarget};
use futures::StreamExt;
use futures::stream::BoxStream;
use keyplane_core::LeaseId;
use keyplane_core::keyspace::{Key, TextSegment, TypedStore};
use keyplane_core::recipes::{Election, Leadership, LeaseKeeper};
use std::time::Duration;
use uuid::Uuid;

/// The most hex digits of a lease id.
const LEASE_HEX: usize = 16;

/// The dispatcher election's default name: candidates hold `/Cronix/lock/dispatcher.<lease>`.
pub const DISPATCHER: &str = "dispatcher";

/// The election of the dispatcher among scheduler instances.
///
/// ```
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use keyplane_schemas::cronix::*;
/// use std::{sync::Arc, time::Duration};
///
/// let store = keyplane_core::keyspace::TypedStore::new(Arc::new(keyplane_mem::MemStore::new()));
/// let election = DispatcherElection::new(&store);
/// let dispatcher = election.campaign(Duration::from_secs(10)).await?;
/// let key = dispatcher.lock_key().encode();
/// assert!(key.starts_with("/Cronix/lock/dispatcher."));
/// assert_eq!(store.store().get(key.as_bytes()).await?.unwrap().value, b""); // the document's lock value
/// assert_eq!(election.leader().await?.unwrap().lock, *dispatcher.lock_key());
/// dispatcher.trigger_once(&JobId::new("report")?, OnceTarget::AllNodes).await?;
/// dispatcher.resign().await?;
/// assert!(election.leader().await?.is_none());
/// # use keyplane_core::keyspace::Key;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DispatcherElection {
    store: TypedStore,
    name: LockName,
    election: Election,
}

/// The current dispatcher, as read from the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatcherLeader {
    /// Its lock key, `/Cronix/lock/<name>.<lease id in hex>`.
    pub lock: LockKey,
    /// Its fencing revision (the lock key's create revision).
    pub revision: i64,
    /// Its lease.
    pub lease: Option<LeaseId>,
}

impl DispatcherElection {
    /// The election named [`DISPATCHER`].
    pub fn new(store: &TypedStore) -> Self {
        let name = LockName::new(DISPATCHER).unwrap_or_else(|_| unreachable!("a valid name"));
        Self::named(store, &name).unwrap_or_else(|_| unreachable!("a short name"))
    }

    /// The election named `name` (for several scheduler groups sharing one store):
    /// candidates hold `/Cronix/lock/<name>.<lease id in hex>`.
    ///
    /// # Errors
    /// [`CronixError::Invalid`] when `name` leaves no room in a lock name (128 bytes) for
    /// `.` and a lease id (16 hex digits).
    pub fn named(store: &TypedStore, name: &LockName) -> Result<Self> {
        let max = <LockName as TextSegment>::rule().max_len() - ".".len() - LEASE_HEX;
        if name.as_str().len() > max {
            return Err(CronixError::Invalid {
                what: "dispatcher election name",
                reason: format!(
                    "at most {max} bytes, so that `.` and a lease id fit in a lock name"
                ),
            });
        }
        let prefix = format!("/Cronix/lock/{name}.");
        let election = Election::with_prefix(store.store().clone(), prefix)?;
        Ok(DispatcherElection {
            store: store.clone(),
            name: name.clone(),
            election,
        })
    }

    /// The election's name.
    pub fn name(&self) -> &LockName {
        &self.name
    }

    /// Runs for dispatcher with a new lease of `ttl` (renewed by the returned dispatcher),
    /// waiting until elected. Dropping the future while it waits withdraws the candidacy.
    ///
    /// # Errors
    /// [`CronixError::Store`] (the lease is revoked then).
    pub async fn campaign(&self, ttl: Duration) -> Result<Dispatcher> {
        let keeper = LeaseKeeper::grant(self.store.store().clone(), ttl).await?;
        match self.election.campaign(keeper.id(), b"").await {
            Ok(leadership) => self.dispatcher(keeper, leadership),
            Err(e) => {
                let _ = keeper.revoke().await;
                Err(e.into())
            }
        }
    }

    /// Runs for dispatcher only if no other instance leads or waits; `None` (the lease
    /// revoked, nothing left in the store) otherwise.
    ///
    /// # Errors
    /// [`CronixError::Store`].
    pub async fn try_campaign(&self, ttl: Duration) -> Result<Option<Dispatcher>> {
        let keeper = LeaseKeeper::grant(self.store.store().clone(), ttl).await?;
        match self.election.try_campaign(keeper.id(), b"").await {
            Ok(Some(leadership)) => self.dispatcher(keeper, leadership).map(Some),
            Ok(None) => {
                keeper.revoke().await?;
                Ok(None)
            }
            Err(e) => {
                let _ = keeper.revoke().await;
                Err(e.into())
            }
        }
    }

    /// The elected dispatcher. Its key is a lock key: the prefix is one's, and `named`
    /// leaves room for the lease id.
    fn dispatcher(&self, keeper: LeaseKeeper, leadership: Leadership) -> Result<Dispatcher> {
        let Some(lock) = lock_key(leadership.key()) else {
            return Err(keyplane_core::Error::internal(
                "the dispatcher's candidate key is not a lock key",
            )
            .into());
        };
        Ok(Dispatcher {
            store: self.store.clone(),
            lock,
            keeper,
            leadership,
        })
    }

    /// The current dispatcher, or `None` when no instance runs.
    ///
    /// # Errors
    /// [`CronixError::Store`].
    pub async fn leader(&self) -> Result<Option<DispatcherLeader>> {
        Ok(self.election.leader().await?.and_then(to_leader))
    }

    /// Follows the dispatcher: the current one first, then each change (`None` while no
    /// instance runs), as [`Election::observe`] does.
    pub fn observe(&self) -> BoxStream<'static, Result<Option<DispatcherLeader>>> {
        self.election
            .observe()
            .map(|item| item.map(|l| l.and_then(to_leader)).map_err(Into::into))
            .boxed()
    }
}

/// The document's lock key a candidate holds, parsed.
fn lock_key(key: &[u8]) -> Option<LockKey> {
    std::str::from_utf8(key)
        .ok()
        .and_then(|k| LockKey::parse(k).ok())
}

fn to_leader(leader: keyplane_core::recipes::Leader) -> Option<DispatcherLeader> {
    Some(DispatcherLeader {
        lock: lock_key(&leader.key)?,
        revision: leader.revision,
        lease: leader.lease,
    })
}

/// The elected dispatcher: its lease kept alive, and every write fenced on its leadership.
#[derive(Debug)]
pub struct Dispatcher {
    store: TypedStore,
    lock: LockKey,
    keeper: LeaseKeeper,
    leadership: Leadership,
}

impl Dispatcher {
    /// The lock key it holds.
    pub fn lock_key(&self) -> &LockKey {
        &self.lock
    }

    /// Its fencing revision (the lock key's create revision), greater than every earlier
    /// dispatcher's.
    pub fn revision(&self) -> i64 {
        self.leadership.revision()
    }

    /// Its lease.
    pub fn lease(&self) -> LeaseId {
        self.keeper.id()
    }

    /// Whether the leadership has been lost (the key deleted, or its lease ended).
    pub fn is_lost(&self) -> bool {
        self.leadership.is_lost()
    }

    /// Resolves when the leadership is lost without a resignation; the instance should stop
    /// dispatching and campaign again.
    pub async fn lost(&self) -> CronixError {
        self.leadership.lost().await.into()
    }

    fn fence(&self) -> Fence<'_> {
        Fence::new(
            &self.lock,
            self.leadership.fence(),
            self.leadership.revision(),
        )
    }

    /// [`assign_job`](super::assign_job), fenced on the leadership.
    ///
    /// # Errors
    /// As `assign_job`, and [`CronixError::NotDispatcher`] (nothing written).
    pub async fn assign_job(&self, node: Uuid, job: &JobId, config: &JobConfig) -> Result<i64> {
        job::assign(&self.store, node, job, config, Some(&self.fence())).await
    }

    /// Removes job `job` from `node`, fenced on the leadership; returns whether it was
    /// assigned there.
    ///
    /// # Errors
    /// [`CronixError::NotDispatcher`] (nothing written); [`CronixError::Store`].
    pub async fn remove_job(&self, node: Uuid, job: &JobId) -> Result<bool> {
        job::remove(&self.store, node, job, Some(&self.fence())).await
    }

    /// [`move_job`](super::move_job), fenced on the leadership.
    ///
    /// # Errors
    /// As `move_job`, and [`CronixError::NotDispatcher`] (nothing written).
    pub async fn move_job(&self, job: &JobId, from: Uuid, to: Uuid) -> Result<i64> {
        job::move_to(&self.store, job, from, to, Some(&self.fence())).await
    }

    /// [`fail_over`](super::fail_over), each move fenced on the leadership.
    ///
    /// # Errors
    /// As `fail_over`, and [`CronixError::NotDispatcher`] (no further move is made).
    pub async fn fail_over(&self, dead: Uuid, targets: &[Uuid]) -> Result<FailoverReport> {
        failover::run(&self.store, dead, targets, Some(&self.fence())).await
    }

    /// [`trigger_once`](super::trigger_once), fenced on the leadership.
    ///
    /// # Errors
    /// As `trigger_once`, and [`CronixError::NotDispatcher`] (nothing written).
    pub async fn trigger_once(&self, job: &JobId, target: OnceTarget) -> Result<i64> {
        once::trigger(&self.store, job, target, Some(&self.fence())).await
    }

    /// Resigns (the next candidate is elected at once) and revokes the lease.
    ///
    /// # Errors
    /// [`CronixError::Store`], including a leadership already lost.
    pub async fn resign(self) -> Result<()> {
        let resigned = self.leadership.resign().await;
        self.keeper.revoke().await?;
        Ok(resigned?)
    }
}
