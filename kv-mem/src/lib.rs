#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod config;
mod core;
mod lease;
mod open;
mod range;
mod store;
mod txn;
mod watch;

pub use config::MemConfig;
pub use open::MemStore;
