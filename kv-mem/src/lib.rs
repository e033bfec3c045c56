#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod mem;

pub use mem::{MemConfig, MemStore};
#[cfg(feature = "sled")]
mod sled;
#[cfg(feature = "sled")]
pub use self::sled::{Durability, SledConfig, SledStore};
