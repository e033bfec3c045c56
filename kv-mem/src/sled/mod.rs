//! The embedded, persistent backend on sled.

mod check;
mod codec;
mod config;
mod error;
mod inner;
mod lease;
mod open;
mod range;
mod store;
mod txn;
mod watch;

pub use config::{Durability, SledConfig};
pub use store::SledStore;
