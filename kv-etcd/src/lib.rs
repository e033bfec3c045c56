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
#[cfg(feature = "tls")]
#[allow(deprecated)]
pub use config::EtcdTlsConfig;
pub use config::{DEFAULT_MAX_TXN_OPS, DEFAULT_MAX_VALUE_BYTES, EtcdConfig};
#[cfg(feature = "tls")]
pub use keyplane_core::tls::TlsConfig;
pub use open::EtcdStore;
