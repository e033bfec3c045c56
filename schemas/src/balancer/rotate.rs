//! Round-robin selection of a group's active key.

use super::cache::Balancer;
use keyplane_core::{ErrorKind, Result, Support};

/// How many times a pick is retried after losing a race on an optimistic backend (etcd
/// plans collection transactions on a snapshot and retries internally first).
const PICK_ATTEMPTS: u32 = 64;

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
    /// A pick that loses too many races on a backend with optimistic transactions (a
    /// retryable `ConditionFailed`: nothing was written) is tried again, up to a bound;
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
        let mut attempt = 0;
        loop {
            match list.rotate().await {
                Err(e)
                    if e.kind() == ErrorKind::ConditionFailed
                        && e.is_retryable()
                        && attempt + 1 < PICK_ATTEMPTS =>
                {
                    attempt += 1
                }
                other => return other,
            }
        }
    }
}
