#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod access;
mod config;
mod core;
mod error;
mod lease;
mod open;
mod range;
mod status;
mod store;
mod txn;
mod watch;

pub use access::{Access, RolePermission};
pub use config::{DEFAULT_MAX_TXN_OPS, DEFAULT_MAX_VALUE_BYTES, EtcdConfig};
pub use open::EtcdStore;
