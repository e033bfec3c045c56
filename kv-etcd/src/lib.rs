#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod collections;
mod config;
mod error;
mod lease;
mod mirror;
mod namespace;
mod range;
mod stamp;
mod store;
#[cfg(feature = "tls")]
mod tls;
mod txn;
mod watch;

#[cfg(feature = "tls")]
pub use config::EtcdTlsConfig;
pub use config::{DEFAULT_MAX_TXN_OPS, DEFAULT_MAX_VALUE_BYTES, EtcdConfig};
pub use mirror::PrefixMirror;
pub use store::EtcdStore;
