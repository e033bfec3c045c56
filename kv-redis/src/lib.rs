#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod access;
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
pub use access::{RECONCILER_COMMANDS, REQUIRED_COMMANDS};
pub use config::RedisConfig;
#[cfg(feature = "tls")]
pub use config::RedisTlsConfig;
pub use store::RedisStore;
