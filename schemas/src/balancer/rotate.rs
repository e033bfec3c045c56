//! Round-robin selection of a group's active key.

use super::cache::Balancer;
use keyplane_core::retry::{Backoff, retry_if};
use keyplane_core::{ErrorKind, Result, Support};
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

impl Balancer {
    /// Picks group `group`'s next active key: atomically moves the head of its active list to
    /// the tail and returns it (`LMOVE list list LEFT RIGHT` on Redis), so concurrent callers
    /// share the keys evenly. `None` when the group has no active key.
    ///
    /// Where the backend emulates lists (etcd, sled, memory), this cache's picks (clones
    /// included) are queued locally, one in flight at a time: on etcd a rotation is an
    /// optimistic transaction, and a crowd of local picks would mostly keep invalidating
    /// each other. Picks from other processes still race; Redis' native `LMOVE` needs no
    /// queue.
    ///
    /// A pick that loses a race on a backend with optimistic transactions (a retryable
    /// `ConditionFailed`: nothing was written) is tried again with the shared jittered
    /// backoff ([`keyplane_core::retry`]), up to a bound;
    /// other errors are returned as they are, since a retry after an unknown outcome could
    /// skip a key.
    ///
    /// # Errors
    /// Backend errors, including a retryable one after the bound.
    pub async fn pick(&self, group: u64) -> Result<Option<u64>> {
        let list = self.typed.list_at(&self.active_key(group));
        let _queued = match self.typed.store().capabilities().collections {
            Support::Native => None,
            Support::Emulated => Some(self.pick_queue.lock().await),
        };
        let lost_race =
            |e: &keyplane_core::Error| e.kind() == ErrorKind::ConditionFailed && e.is_retryable();
        retry_if(&PICK_RETRY, lost_race, || list.rotate()).await
    }
}
