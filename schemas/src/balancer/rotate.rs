//! Round-robin selection of a group's active key, the moved key's status read in the same
//! atomic step as its rotation.

use super::cache::Balancer;
use super::values::{KeyStatus, STATUS_FIELD};
use keyplane_core::keyspace::{ItemMaps, ListHandle, SegmentCodec, Text};
use keyplane_core::retry::{Backoff, retry_if};
use keyplane_core::{Error, ErrorKind, Result, Support};
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

/// The most keys whose statuses a pick reads together to prove that none is active: a group's
/// whole list, up to this many keys (within the backend's transaction size, see
/// [`Balancer::pick_window`]).
const WINDOW: usize = 64;

impl Balancer {
    /// Picks group `group`'s next active key: atomically moves the head of its active list to
    /// the tail and returns it, so concurrent callers share the keys evenly. `None` when the
    /// group has no active key.
    ///
    /// The rotation and the read of the moved key's status are one step
    /// ([`ListHandle::rotate_get`]: on Redis one script run, `LMOVE` then `HGET` of
    /// `key:{id}`'s status, the pattern of `SORT ... GET key:*->status`), so a key is
    /// handed out only if it is active at the moment it is moved. Another program may list
    /// a key that is not active (a raw `RPUSH`, a status changed with `HSET` in place, an
    /// object deleted): such a key is skipped, moved to the tail like any other, and stays
    /// listed until [`repair`](Self::repair) (`kvctl lint` reports it); the pick then moves
    /// the next key. Once it has skipped as many keys as the list holds, it reads the list
    /// and their statuses together, and answers `None` if none is active.
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
    /// when the list kept holding keys that are not active (a list of more than 64 keys
    /// none of which is active cannot be proven so in one read), or other writers kept
    /// changing it faster than the pick could read it; backend errors, including a
    /// retryable one after the bound.
    pub async fn pick(&self, group: u64) -> Result<Option<u64>> {
        let list = self.active(group);
        let _queued = match self.typed.store().capabilities().collections {
            Support::Native => None,
            Support::Emulated => Some(self.pick_queue.lock().await),
        };
        let window = self.pick_window();
        let field = STATUS_FIELD.to_string();
        let objects = self.pick_objects(&list)?;
        let lost_race = |e: &Error| e.kind() == ErrorKind::ConditionFailed && e.is_retryable();
        // Keys moved in a row that were not active, and the list's first keys once one was.
        let mut skipped = 0;
        let mut members: Option<Vec<u64>> = None;
        for _ in 0..window * 4 + 8 {
            let turn =
                retry_if(&PICK_RETRY, lost_race, || list.rotate_get(objects, &field)).await?;
            let Some((moved, status)) = turn else {
                return Ok(None);
            };
            if status.is_some_and(|s| KeyStatus::from(s).is_active()) {
                return Ok(Some(moved));
            }
            let known = match &members {
                Some(known) => known,
                None => members.insert(self.read_members(&list, window).await?),
            };
            skipped += 1;
            if skipped >= known.len().max(1) {
                skipped = 0;
                if self.none_active(&list, known, window).await? {
                    return Ok(None);
                }
                members = None;
            }
        }
        Err(Error::new(
            ErrorKind::ConditionFailed,
            "the group's active list kept holding keys that are not active, or changing; \
             try again",
        )
        .with_context("operation", "pick")
        .with_context("group", group)
        .set_retryable(true))
    }

    /// The maps a pick's rotation reads the moved key's status of: key `id`'s object is at
    /// `key:{id}`, the map the list's item names. Made once per cache (clones share it).
    fn pick_objects(&self, list: &ListHandle<SegmentCodec<u64>>) -> Result<&ItemMaps<Text, Text>> {
        if let Some(objects) = self.pick_objects.get() {
            return Ok(objects);
        }
        let objects = ItemMaps::of(list, (&1, self.object(1)), (&2, &self.object(2)))?;
        Ok(self.pick_objects.get_or_init(|| objects))
    }

    /// The first `window` keys of `list`, without repeats.
    async fn read_members(
        &self,
        list: &ListHandle<SegmentCodec<u64>>,
        window: usize,
    ) -> Result<Vec<u64>> {
        Ok(distinct(list.range(0, window as i64 - 1).await?))
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

    /// How many keys' statuses a pick reads together: [`WINDOW`], within the
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
}

/// `items` without repeats, in their order.
fn distinct(items: Vec<u64>) -> Vec<u64> {
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    items.into_iter().filter(|id| seen.insert(*id)).collect()
}
