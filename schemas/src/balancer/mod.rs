//! The API-key balancer's M:N cache (Redis, or in memory), at the document's exact keys.
//!
//! ```text
//! key:{id}                 KeyObjectKey   HASH: api_key, status
//! group:{id}:keys:active   ActiveKeysKey  LIST of active key ids, rotated round-robin
//! key:{id}:groups          KeyGroupsKey   SET of group ids (reverse index)
//! ```
//!
//! These are the document's bytes, with nothing in front, so that the library shares a
//! Redis with the Go service that writes them. Several caches in one store each take a root
//! instead ([`Balancer::with_root`]: `gemini:key:7`...), which a
//! [`Namespaced`](keyplane_core::layer::Namespaced) store adds and removes, so the templates stay
//! the document's. On Redis Cluster, [`Balancer::with_cluster_root`] makes the root a hash tag
//! (`{gemini}:key:7`): the whole cache is one co-location group, so that its M:N transactions
//! stay in one slot. Ids are `u64` (the database's `uint` primary keys). The key object is
//! the directory of its reverse index (`key:{id}` / `key:{id}:groups`), the document's own
//! nesting, declared on [`BalancerKeyspace`].
//!
//! A key's status is the document's `active` or `disabled`, which it gives as examples
//! ("例如"): any other status the service writes (`suspended`...) is read as
//! [`KeyStatus::Other`], kept byte for byte, and treated as not active (never listed, never
//! picked); reads never fail on it, and `kvctl lint` reports it. An API key's value is a
//! secret: the `Debug` of [`ApiKeyRecord`], [`LoadedKey`] and [`SourceKey`] shows `***`.
//!
//! Invariant kept by every operation, under any number of concurrent writers in any number
//! of processes: a key is in a group's active list exactly once when it is active and
//! linked to that group, and not at all otherwise ([`load_keys`](Balancer::load_keys) takes
//! keys that are not cached yet, and no one else caches them meanwhile). An operation that
//! writes from what it read (the key's status, its groups) writes in one transaction whose
//! compares pin what it read, and reads again when a concurrent writer changed it (with the
//! shared jittered backoff of [`keyplane_core::retry`], a bounded number of times, then a
//! retryable `ConditionFailed` with nothing written).
//!
//! Operations, on [`Balancer`]: [`put_key`](Balancer::put_key),
//! [`set_status`](Balancer::set_status) (fan-out through the reverse index in one
//! transaction), [`link`](Balancer::link) / [`unlink`](Balancer::unlink),
//! [`remove_key`](Balancer::remove_key) (the document's `removeStoreCacheForKey`: every
//! list, the reverse index and the object in one transaction),
//! [`pick`](Balancer::pick) (atomic round robin), [`load_keys`](Balancer::load_keys)
//! (batched), [`rebuild`](Balancer::rebuild) (the document's `LoadAllKeysToStore` on a
//! warm cache: the cache becomes exactly what one load of the source writes, and what the
//! source no longer has goes), [`remove_group`](Balancer::remove_group),
//! [`repair`](Balancer::repair) (duplicate, stray and missing list entries fixed against
//! the reverse indexes), reads [`key`](Balancer::key), [`active_keys`](Balancer::active_keys),
//! [`groups_of`](Balancer::groups_of); [`write_example`] for a demo dataset.
//!
//! `balancer-load`: [`BalancerSource`] reads the database tables of §2 from JSON (the old
//! 1:N `group_id` column included) and [`BalancerSource::plan`] de-duplicates the API keys
//! by value as §5's migration does, recording each old id's new one; [`Balancer::rebuild`]
//! then makes the cache exactly that source (`kvctl balancer load FILE`).

mod cache;
mod example;
mod guard;
mod keys;
mod links;
mod load;
mod rebuild;
mod remove;
mod rotate;
mod segments;
mod source;
mod status;
mod values;

pub use cache::Balancer;
pub use example::{EXAMPLE_GROUPS, write_example};
pub use keys::{ActiveKeysKey, BalancerKeyspace, KeyGroupsKey, KeyObjectKey};
pub use rebuild::{RebuildReport, RepairReport};
pub use segments::BalancerRoot;
pub use source::{BalancerSource, SourceGroup, SourceKey, SourceMapping, SourcePlan};
pub use values::{API_KEY_FIELD, ApiKeyRecord, KeyStatus, LoadReport, LoadedKey, STATUS_FIELD};

use keyplane_core::keyspace::Schema;

/// The balancer catalog entry.
pub fn schema() -> Schema {
    Schema::of::<BalancerKeyspace>("balancer")
        .with_store("redis")
        .with_summary("API-key balancer M:N cache: key HASH, group active LIST (round robin), reverse index SET")
}
