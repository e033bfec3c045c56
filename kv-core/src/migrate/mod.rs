//! Migrations between key layouts, on any [`Store`](crate::Store).
//!
//! A [`Migration`] names the key ranges of an old layout and maps each old item (a plain key
//! or a set, map or list) to the items of the new layout it becomes. A [`Migrator`] runs it:
//!
//! - [`plan`](Migrator::plan) is a dry run: what would be created, what is already there,
//!   what conflicts with newer data, what cannot be mapped. It writes nothing.
//! - [`apply`](Migrator::apply) writes the new items in batched transactions. Each batch
//!   creates only new items that are absent (compares), requires the old items unchanged
//!   since they were read, and moves the progress checkpoint kept in the store, all in one
//!   transaction. A new item that already holds other data is never overwritten: it is
//!   reported as a conflict. Interrupted, `apply` resumes after the last batch; run again
//!   after completion, it finds nothing to do and writes nothing.
//! - [`verify`](Migrator::verify) checks that every old item has its new twins with the
//!   expected contents.
//! - [`finalize`](Migrator::finalize) deletes the old items, only when asked, and only
//!   those unchanged since they were read and whose twins verify.
//! - [`rollback`](Migrator::rollback), before finalizing, deletes the new items the
//!   migration created, except those changed since, and forgets the progress.
//!
//! The progress lives under a state key (by default `keyplane/migrations/<name>`): the
//! checkpoint, and one record per batch listing the items it created, which is what a
//! rollback undoes.
//!
//! The old layout is best declared as read-only typed keys (`#[kv(read_only)]`, doubled
//! separators allowed), which parse the old keys and which the typed store never writes;
//! [`Migration::rows`] declares which old template becomes which new one.
//!
//! ```
//! # #[tokio::main] async fn main() -> keyplane_core::Result<()> {
//! use keyplane_core::keyspace::{Key, Text};
//! use keyplane_core::migrate::{Item, Mapping, Migration, MigrationRow, Migrator};
//! use keyplane_core::{PutOptions, Result, Store};
//! use std::sync::Arc;
//!
//! /// The old layout, as another program wrote it.
//! #[derive(Key, Debug, Clone, PartialEq)]
//! #[kv(template = "old//users/{id}", value = Text, read_only)]
//! struct OldUser { id: u64 }
//!
//! #[derive(Key, Debug, Clone, PartialEq)]
//! #[kv(template = "users/{id}", value = Text)]
//! struct User { id: u64 }
//!
//! /// `old//users/{id}` becomes `users/{id}`, value unchanged.
//! struct Users;
//! #[keyplane_core::raw::async_trait]
//! impl Migration for Users {
//!     fn name(&self) -> &str { "users" }
//!     fn sources(&self) -> Vec<Vec<u8>> { vec![b"old//users/".to_vec()] }
//!     fn rows(&self) -> Vec<MigrationRow> {
//!         vec![MigrationRow::of::<OldUser, User>("bytes kept")]
//!     }
//!     async fn map(&self, old: &Item, _: &dyn Store) -> Result<Mapping> {
//!         let Ok(key) = OldUser::parse(&String::from_utf8_lossy(&old.key)) else {
//!             return Ok(Mapping::Unmappable("not a key of the old layout".into()));
//!         };
//!         Ok(Mapping::To(vec![Item::new(User { id: key.id }.encode(), old.value.clone())]))
//!     }
//! }
//!
//! let store: Arc<dyn Store> = Arc::new(keyplane_mem::MemStore::new());
//! store.put(b"old//users/7", b"ada", PutOptions::default()).await?;
//! let migrator = Migrator::new(store.clone(), Arc::new(Users));
//! assert_eq!(migrator.plan().await?.created, 1);
//! assert_eq!(migrator.apply().await?.created, 1);
//! assert_eq!(migrator.apply().await?.created, 0); // nothing left to do
//! assert!(migrator.verify().await?.is_clean());
//! assert_eq!(store.get(b"users/7").await?.unwrap().value, b"ada");
//! migrator.finalize().await?;
//! assert!(store.get(b"old//users/7").await?.is_none());
//! # Ok(()) }
//! ```

mod apply;
mod finalize;
mod item;
mod migration;
mod migrator;
mod plan;
mod report;
mod rollback;
mod state;
mod verify;

pub use item::{Item, Value};
pub use migration::{Mapping, Migration, MigrationRow};
pub use migrator::Migrator;
pub use report::{
    ApplyReport, Conflict, FinalizeReport, Phase, RollbackReport, Unmapped, VerifyReport,
};
