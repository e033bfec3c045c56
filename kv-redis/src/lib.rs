#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod config;
mod core;
mod error;
mod lease;
mod range;
mod reconciler;
mod store;
mod txn;
mod watch;

pub use crate::core::reconcile::ReconcileReport;
pub use config::RedisConfig;
pub use store::RedisStore;
