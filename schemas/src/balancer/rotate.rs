//! Round-robin selection of a group's active key, each key's status read in the same atomic
//! step as its rotation.

use super::cache::{Balancer, Seen};
use super::values::{KeyStatus, STATUS_FIELD};
use keyplane_core::keyspace::{ListHandle, SegmentCodec};
use keyplane_core::retry::{Backoff, retry_if};
use keyplane_core::{CompareOp, Error, ErrorKind, Result, Support};
use std::sync::LazyLock;
use std::time::Duration;

/// How a pick that lost a race on an optimistic backend is tried again (etcd plans
/// collection transactions on a snapshot and retries internally first): jittered backoff
/// from 50 µs up to 5 ms, at most 64 attempts within 5 s.
static PICK_RETRY: LazyLock<Backoff> = LazyLock::new(|| {
    Backoff::default()
        .initial(Duration::from_micros(50))
        .max_delay(Duration::from_millis(5))
        .deadline(Some(Duration::from_secs(5)))
        .max_attempts(64)
});

/// The most keys whose statuses a pick reads with its rotation: a group's whole list, up to
/// this many keys (within the backend's transaction size, see [`Balancer::pick_window`]).
const WINDOW: usize = 64;

/// The groups whose members a cache remembers for its picks; past it, it starts afresh.
const GROUPS_REMEMBERED: usize = 4096;

/// What one rotation found, read in the same step.
struct Turn {
    /// The key moved from the head to the tail; `None` for an empty list.
    moved: Option<u64>,
    /// The status of each member the rotation was planned with (`None`: no object).
    statuses: Vec<Option<KeyStatus>>,
    /// The list's first keys after the rotation, for a list longer than the window.
    window: Option<Vec<u64>>,
}

impl Balancer {
    /// Picks group `group`'s next active key: atomically moves the head of its active list to
    /// the tail and returns it, so concurrent callers share the keys evenly. `None` when the
    /// group has no active key.
    ///
    /// The rotation and the read of the status of every key it may move are one transaction
    /// (on Redis one script run: `LMOVE` and an `HGET` of each key's status), so a key is
    /// handed out only if it is active at the moment it is moved. Another program may list a
    /// key that is not active (a raw `RPUSH`, a status changed with `HSET` in place, an
    /// object deleted): such a key is skipped, moved to the tail like any other, and stays
    /// listed until [`repair`](Self::repair) (`kvctl lint` reports it). The statuses read are
    /// those of the list's members as the cache last saw them (shared by clones): the whole
    /// list up to 64 keys, else its first keys. A moved key that was not among them
    /// (another writer listed it since, or concurrent picks moved more keys than the window
    /// holds) has its status unknown: it loses that turn, and the pick reads the list again.
    ///
    /// Where the backend emulates lists (etcd, sled, memory), this cache's picks (clones
    /// included) are queued locally, one in flight at a time: on etcd a rotation is an
    /// optimistic transaction, and a crowd of local picks would mostly keep invalidating
    /// each other. Picks from other processes still race.
    ///
    /// A pick that loses a race on a backend with optimistic transactions (a retryable
    /// `ConditionFailed`: nothing was written) is tried again with the shared jittered
    /// backoff ([`keyplane_core::retry`]), up to a bound;
    /// other errors are returned as they are, since a retry after an unknown outcome could
    /// skip a key.
    ///
    /// # Errors
    /// `WrongType` when a listed key's object is not a HASH; a retryable `ConditionFailed`
    /// when other writers kept changing the list faster than the pick could read it; backend
    /// errors, including a retryable one after the bound.
    pub async fn pick(&self, group: u64) -> Result<Option<u64>> {
        let list = self.active(group);
        let _queued = match self.typed.store().capabilities().collections {
            Support::Native => None,
            Support::Emulated => Some(self.pick_queue.lock().await),
        };
        let window = self.pick_window();
        let mut known = self.members_seen(group);
        // Each turn moves one key: a list of `window` keys none of which is active, read
        // again after a turn whose key was unknown, ends within these.
        for _ in 0..window * 4 + 8 {
            let seen = match known.take() {
                Some(seen) => seen,
                None => self.read_members(&list, window).await?,
            };
            if seen.len == 0 {
                self.remember_members(group, None);
                return Ok(None);
            }
            let lost_race = |e: &Error| e.kind() == ErrorKind::ConditionFailed && e.is_retryable();
            let turn = retry_if(&PICK_RETRY, lost_race, || {
                self.rotate_checked(&list, &seen, window)
            })
            .await?;
            // The list's length changed since it was read: another writer listed or
            // unlisted keys, which the next turn reads first.
            let Some(turn) = turn else { continue };
            let Some(moved) = turn.moved else {
                self.remember_members(group, None);
                return Ok(None);
            };
            let Some(at) = seen.members.iter().position(|id| *id == moved) else {
                // Beyond the keys read (a long list), or listed in place of another.
                self.remember_members(group, None);
                continue;
            };
            let next = match turn.window {
                Some(first) => Seen {
                    members: distinct(first),
                    len: seen.len,
                },
                None => seen.clone(),
            };
            if turn.statuses[at].as_ref().is_some_and(KeyStatus::is_active) {
                self.remember_members(group, Some(next));
                return Ok(Some(moved));
            }
            let any_active = turn
                .statuses
                .iter()
                .any(|s| s.as_ref().is_some_and(KeyStatus::is_active));
            if !any_active && self.none_active(&list, &seen.members, window).await? {
                self.remember_members(group, Some(seen));
                return Ok(None);
            }
            self.remember_members(group, Some(next.clone()));
            known = Some(next);
        }
        Err(Error::new(
            ErrorKind::ConditionFailed,
            "concurrent writers kept changing the group's active list; try again",
        )
        .with_context("operation", "pick")
        .with_context("group", group)
        .set_retryable(true))
    }

    /// The first `window` keys of `list` and its length, read together.
    async fn read_members(
        &self,
        list: &ListHandle<SegmentCodec<u64>>,
        window: usize,
    ) -> Result<Seen> {
        let mut txn = self.typed.txn();
        let items = txn.list_range(list, 0, window as i64 - 1);
        let len = txn.list_len(list);
        let outcome = txn.commit().await?;
        Ok(Seen {
            members: distinct(outcome.collection(&items)?),
            len: outcome.collection(&len)?,
        })
    }

    /// One rotation of `list` and, in the same transaction, the status of each member
    /// `seen` holds, provided the list still has the length `seen` read (`None` when it
    /// has not: nothing was written); for a list longer than the window, its first keys
    /// after the rotation too.
    async fn rotate_checked(
        &self,
        list: &ListHandle<SegmentCodec<u64>>,
        seen: &Seen,
        window: usize,
    ) -> Result<Option<Turn>> {
        let mut txn = self.typed.txn();
        txn.when_list_len(
            list,
            CompareOp::Equal,
            i64::try_from(seen.len).unwrap_or(i64::MAX),
        );
        let moved = txn.list_rotate(list);
        let field = STATUS_FIELD.to_string();
        let statuses: Vec<_> = seen
            .members
            .iter()
            .map(|id| txn.map_get(&self.object(*id), &field))
            .collect();
        let long = usize::try_from(seen.len).map_or(true, |len| len > window);
        let first = long.then(|| txn.list_range(list, 0, window as i64 - 1));
        let outcome = txn.commit().await?;
        if !outcome.succeeded {
            return Ok(None);
        }
        Ok(Some(Turn {
            moved: outcome.collection(&moved)?,
            statuses: statuses
                .iter()
                .map(|s| Ok(outcome.collection(s)?.map(KeyStatus::from)))
                .collect::<Result<_>>()?,
            window: first.map(|f| outcome.collection(&f)).transpose()?,
        }))
    }

    /// Whether `list` holds no active key: read in one transaction with the statuses of
    /// `members`, it holds only some of them (fewer than the window), none active.
    async fn none_active(
        &self,
        list: &ListHandle<SegmentCodec<u64>>,
        members: &[u64],
        window: usize,
    ) -> Result<bool> {
        let mut txn = self.typed.txn();
        let items = txn.list_range(list, 0, window as i64 - 1);
        let field = STATUS_FIELD.to_string();
        let statuses: Vec<_> = members
            .iter()
            .map(|id| txn.map_get(&self.object(*id), &field))
            .collect();
        let outcome = txn.commit().await?;
        let items = outcome.collection(&items)?;
        if items.len() >= window || items.iter().any(|id| !members.contains(id)) {
            return Ok(false);
        }
        for (id, status) in members.iter().zip(&statuses) {
            let active = outcome
                .collection(status)?
                .is_some_and(|s| KeyStatus::from(s).is_active());
            if active && items.contains(id) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// How many keys' statuses a pick reads with its rotation: [`WINDOW`], within the
    /// backend's transaction size (each read counted three ops where collections are
    /// emulated, which guard and stamp every collection a transaction touches).
    fn pick_window(&self) -> usize {
        let caps = self.typed.store().capabilities();
        let per_key = match caps.collections {
            Support::Native => 1,
            Support::Emulated => 3,
        };
        (caps.max_txn_ops.saturating_sub(2 * per_key) / per_key).clamp(1, WINDOW)
    }

    /// The members of group `group`'s list as this cache last saw them.
    fn members_seen(&self, group: u64) -> Option<Seen> {
        let seen = self.pick_members.lock().unwrap_or_else(|e| e.into_inner());
        seen.get(&group).cloned()
    }

    /// Remembers the members of group `group`'s list (`None`: forgets them).
    fn remember_members(&self, group: u64, members: Option<Seen>) {
        let mut seen = self.pick_members.lock().unwrap_or_else(|e| e.into_inner());
        match members {
            Some(members) => {
                if seen.len() >= GROUPS_REMEMBERED && !seen.contains_key(&group) {
                    seen.clear();
                }
                seen.insert(group, members);
            }
            None => {
                seen.remove(&group);
            }
        }
    }
}

/// `items` without repeats, in their order.
fn distinct(items: Vec<u64>) -> Vec<u64> {
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    items.into_iter().filter(|id| seen.insert(*id)).collect()
}
