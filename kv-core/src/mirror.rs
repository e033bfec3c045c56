//! [`Mirror`]: a typed, always-current local copy of a directory or a keyspace, for the
//! programs that read far more than they write (a configuration provider, a resolver cache,
//! service discovery).
//!
//! A mirror lists its range at one revision R (every page pinned to R), then watches from
//! R + 1 and applies each watch batch, one transaction at a time, to a copy of its current
//! view, which it then publishes with one atomic swap. Readers load the published
//! [`MirrorSnapshot`] without locks and never see half a transaction.
//!
//! A view finds a key by hash ([`get`](MirrorSnapshot::get), [`get_raw`](MirrorSnapshot::get_raw):
//! in a view of 100,000 keys, about what a `HashMap` lookup of the same key costs) and keeps
//! the keys in order for [`iter`](MirrorSnapshot::iter), directories
//! ([`iter_prefix`](MirrorSnapshot::iter_prefix)) and secondary indexes. Both are persistent
//! structures sharing each item: copying a view for the next batch costs O(1), and a change
//! copies one path of each.
//!
//! - A watch that cannot resume (`Compacted`, or a connection the backend could not
//!   re-establish) makes the mirror list again ([`MirrorHealth::relists`]); subscribers get the
//!   difference as one [`MirrorCause::Relist`] batch.
//! - [`MirrorBuilder::resync_every`] lists the range again at the revision the mirror claims
//!   to reflect and repairs any difference ([`MirrorHealth::repaired`]); none is expected.
//! - [`Mirror::wait_for`] waits until the mirror reflects a revision (read your own writes,
//!   even a write outside the range); [`MirrorBuilder::heartbeat`] keeps an idle mirror
//!   confirmed current.
//! - Keys that do not parse and values that do not decode are kept apart
//!   ([`MirrorSnapshot::unreadable`]), never dropped silently.
//! - Secondary indexes ([`MirrorBuilder::index`]) are maintained with each view.
//! - [`MirrorBuilder::with_collections`] mirrors the sets, maps and lists of the range too
//!   ([`MirrorSnapshot::set`], [`map`](MirrorSnapshot::map), [`list`](MirrorSnapshot::list)),
//!   kept current by their collection events, in the same views as the plain keys: a
//!   transaction that writes a key and a set shows both or neither. Their contents are read
//!   in read-only transactions after the listing, then the watch replays from the listing's
//!   revision until its [progress mark](crate::WatchOptions::with_progress), so the first
//!   view is consistent at one revision.
//!
//! On Redis, what another program writes with raw commands reaches listings and watches
//! through the store's reconciler (`reconcile_roots`), as for any reader; a collection
//! change event that does not fit the contents held (the view drifted) makes the mirror list
//! again, and a periodic [resync](MirrorBuilder::resync_every) repairs any other drift.
//!
//! ```
//! use keyplane_core::keyspace::{Key, Prefix, Text, TypedStore};
//!
//! #[derive(Key, Debug, Clone, PartialEq)]
//! #[kv(template = "cfg/{service}", value = Text)]
//! struct ConfigKey { service: u64 }
//!
//! #[derive(Prefix, Debug, Clone, PartialEq)]
//! #[kv(template = "cfg/", key = ConfigKey)]
//! struct ConfigDir {}
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> keyplane_core::Result<()> {
//! let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
//! typed.put(&ConfigKey { service: 1 }, &"debug=false".to_string()).await?;
//!
//! let mirror = typed
//!     .mirror(&ConfigDir {})?
//!     .index("value", |_, value: &String| vec![value.clone()])
//!     .start()
//!     .await?;
//! let written = typed.put(&ConfigKey { service: 2 }, &"debug=true".to_string()).await?;
//! let view = mirror.wait_for(written).await?; // read your own write
//! assert_eq!(view.len(), 2);
//! assert_eq!(view.get(&ConfigKey { service: 2 }).unwrap().value, "debug=true");
//! assert_eq!(view.lookup("value", "debug=false").count(), 1);
//! # Ok(()) }
//! ```

mod batch;
mod builder;
mod handle;
mod hashed;
mod item;
mod snapshot;
mod task;
mod typer;

pub use batch::{MirrorBatch, MirrorCause, MirrorHealth};
pub use builder::MirrorBuilder;
pub use handle::{Mirror, MirrorSubscription};
pub use snapshot::MirrorSnapshot;
