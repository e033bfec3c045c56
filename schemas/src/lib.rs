#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod balancer;
mod catalog;
pub mod cronix;
pub mod nxc;
pub mod registry;
pub mod tenant;

pub use catalog::{ParsedKey, Schema, all, find, parse_any};
