//! Recipes: what programs build on the contract, the way etcd's `concurrency` package builds
//! on its client. Each works on any [`Store`](crate::Store) and needs nothing but the
//! contract.
//!
//! - [`LeaseKeeper`]: keeps a lease alive in the background and says when it is lost.
//! - [`Lock`] and [`LockGuard`]: a distributed lock with a fencing revision.
//! - [`Election`], [`Leader`] and [`Leadership`]: leader election with etcd's semantics.
//! - [`BulkLoader`]: many keys in bounded transactions, several in flight, with progress.
//! - [`delete_prefix_in_batches`]: deleting a prefix too large for one atomic step.
//!
//! A lock and an election are both built on one queue of contenders, ordered by the create
//! revisions of their keys.

mod bulk;
mod bulk_delete;
mod election;
mod keeper;
mod lock;
mod queue;

pub use bulk::{BulkLoader, BulkProgress, BulkReport};
pub use bulk_delete::delete_prefix_in_batches;
pub use election::{Election, Leader, Leadership};
pub use keeper::LeaseKeeper;
pub use lock::{Lock, LockGuard};
