#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod config;
mod core;
mod decode;
mod error;
mod lease;
mod range;
mod reconcile;
mod reconciler;
mod scripts;
mod store;
mod txn;
mod watch;

pub use config::RedisConfig;
pub use reconcile::ReconcileReport;
pub use store::RedisStore;
