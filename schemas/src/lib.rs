#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod catalog;
pub mod tenant;
pub mod registry;
pub mod cronix;
pub mod nxc;
pub mod balancer;

pub use catalog::{ParsedKey, Schema, all, find, parse_any};
