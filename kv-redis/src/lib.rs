#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod access;
mod con;
mod config;
mod core;
mod error;
mod lease;
mod open;
mod range;
mod reconcile;
mod status;
mod store;
mod txn;
mod watch;

pub use access::{
    CLUSTER_COMMANDS, MASTER_COMMANDS, RECONCILER_COMMANDS, REQUIRED_COMMANDS, SENTINEL_COMMANDS,
};
pub use config::RedisConfig;
pub use open::RedisStore;
pub use reconcile::ReconcileReport;

/// The Lua function library the store loads into Redis 7 (see [`RedisConfig::functions`]):
/// `#!lua name=keyplane_<version>` and its functions, for an administrator to load once
/// (`redis-cli -x FUNCTION LOAD < library.lua`) where the store's ACL user may call the
/// library but not load it. The version is the first 12 hex digits of the SHA-1 of the
/// library's text, so that stores built from different versions of this crate share a
/// server, each with its own library.
///
/// ```
/// assert!(keyplane_redis::function_library().starts_with("#!lua name=keyplane_"));
/// ```
pub fn function_library() -> &'static str {
    &crate::core::scripts::library().code
}
