//! What a backend does natively, what it emulates, and its limits.

use crate::error::{Error, ErrorKind, Result};
use std::time::Duration;

/// Whether a feature is served by the backend itself or emulated by this layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Support {
    /// The backend's own mechanism.
    Native,
    /// Built by this layer over the backend's primitives.
    Emulated,
}

/// How much watch history a backend keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Retention {
    /// The last `n` revisions.
    Revisions(u64),
    /// Until compacted explicitly or by the server's own policy (etcd).
    UntilCompacted,
}

/// How writes made by other programs, straight to the backend's data, reach this store.
///
/// Point reads, compares, writes and deletes always act on what the backend holds, whoever
/// wrote it; this says when ranges and watches see another program's write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ForeignWrites {
    /// At once: the backend's own history records every write (etcd), or no other program
    /// can write the data (the in-process and embedded stores).
    Immediate,
    /// Once reconciled: the store's own writes at once, another program's writes after a
    /// reconciler has brought them into the store's index and event log, usually within
    /// milliseconds where the server reports changes, and at the latest within `interval`
    /// (`None`: only when a reconcile is run explicitly).
    Reconciled {
        /// The longest a foreign write waits for the periodic pass.
        interval: Option<Duration>,
    },
}

/// How far one transaction, range or watch may reach, and what a revision counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sharding {
    /// One store: one revision sequence over every key, and a transaction, range or watch
    /// may cover any keys.
    Unsharded,
    /// Co-location groups, each named by its keys' Redis Cluster hash tag (the bytes between
    /// a key's first `{` and the next `}`): every key needs one; a transaction stays within
    /// one group (`InvalidArgument` otherwise, nothing sent); each group counts its own
    /// revisions, and what spans the whole store (its revision, leases, compaction) is each
    /// group's own store's (a Redis Cluster store: `RedisStore::group`).
    ///
    /// Ranges and watches may span groups, per group:
    /// - a range names the revision each group was read at in
    ///   [`RangeResult::groups`](crate::RangeResult::groups) (its `revision` is `0`), merges
    ///   the groups' keys in key order and reads every later page of the same groups at the
    ///   same revisions: one consistent view per group, none across groups. It cannot be
    ///   pinned to one revision;
    /// - a watch delivers each group's batches in that group's order, each carrying its
    ///   [`group`](crate::WatchBatch::group) and the group's revision, interleaving groups as
    ///   they come; it starts from now or from [group starts](crate::WatchOptions::group_starts)
    ///   (a [`WatchPosition`](crate::WatchPosition) taken from a range or from delivered
    ///   batches), never from one revision; a group that appears later is delivered from its
    ///   first revision.
    ///
    /// A range or watch within one group is exact, and names that group too.
    HashTagGroups,
}

/// A backend's features and limits. Every backend implements the whole contract; this says how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// The backend's name (`"memory"`, `"sled"`, `"redb"`, `"etcd"`, `"redis"`).
    pub backend: &'static str,
    /// Most compares, and most ops per branch, in one transaction.
    pub max_txn_ops: usize,
    /// Largest value accepted, in bytes.
    pub max_value_bytes: usize,
    /// Longest key accepted, in bytes: [`MAX_KEY_LEN`](crate::raw::MAX_KEY_LEN) on every backend,
    /// less under a namespaced store (keyplane-core's `layer::Namespaced`) (its prefix takes the rest).
    pub max_key_bytes: usize,
    /// TTLs are rounded up to a multiple of this.
    pub ttl_granularity: Duration,
    /// How much of the event history is kept: how far back a watch may resume and a read
    /// may be pinned ([`RangeOptions::at_revision`](crate::RangeOptions::at_revision)).
    /// The same word as the backends' `history_retention` settings that set it.
    pub history_retention: Retention,
    /// Transactions.
    pub txn: Support,
    /// Leases.
    pub leases: Support,
    /// Watches.
    pub watch: Support,
    /// Sets, maps and lists.
    pub collections: Support,
    /// Whether acknowledged writes survive a restart of the process or server.
    pub persistent: bool,
    /// When ranges and watches see writes made by other programs.
    pub foreign_writes: ForeignWrites,
    /// How far a transaction, range or watch may reach.
    pub sharding: Sharding,
}

impl Capabilities {
    /// Checks a value's size against [`Capabilities::max_value_bytes`].
    ///
    /// # Errors
    /// `InvalidValue` when the value is too large.
    pub fn validate_value(&self, value: &[u8]) -> Result<()> {
        if value.len() > self.max_value_bytes {
            return Err(Error::new(
                ErrorKind::InvalidValue,
                format!(
                    "a value of {} bytes exceeds the {} backend's limit of {} bytes",
                    value.len(),
                    self.backend,
                    self.max_value_bytes
                ),
            ));
        }
        Ok(())
    }

    /// Rounds a requested TTL up to the backend's granularity.
    ///
    /// # Errors
    /// `InvalidArgument` for a zero TTL.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # let caps = keyplane_contract::Capabilities { ttl_granularity: Duration::from_secs(1),
    /// #   ..kv_mem_like() };
    /// # fn kv_mem_like() -> keyplane_contract::Capabilities { keyplane_contract::Capabilities {
    /// #   backend: "doc", max_txn_ops: 128, max_value_bytes: 1 << 20, max_key_bytes: 4096,
    /// #   ttl_granularity: Duration::from_millis(1),
    /// #   history_retention: keyplane_contract::Retention::Revisions(1000),
    /// #   txn: keyplane_contract::Support::Native, leases: keyplane_contract::Support::Native,
    /// #   watch: keyplane_contract::Support::Native, collections: keyplane_contract::Support::Native,
    /// #   persistent: false, foreign_writes: keyplane_contract::ForeignWrites::Immediate,
    /// #   sharding: keyplane_contract::Sharding::Unsharded } }
    /// assert_eq!(caps.round_ttl(Duration::from_millis(1500)).unwrap(), Duration::from_secs(2));
    /// ```
    pub fn round_ttl(&self, ttl: Duration) -> Result<Duration> {
        if ttl.is_zero() {
            return Err(Error::invalid_argument(
                "a lease TTL must be greater than zero",
            ));
        }
        let g = self.ttl_granularity.as_nanos().max(1);
        let n = ttl.as_nanos().div_ceil(g) * g;
        Ok(Duration::from_nanos(u64::try_from(n).unwrap_or(u64::MAX)))
    }
}
