#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod check;
mod config;
mod core;
mod error;
mod lease;
mod open;
mod range;
mod store;
mod txn;
mod watch;

pub use config::{Durability, RedbConfig};
pub use open::RedbStore;
