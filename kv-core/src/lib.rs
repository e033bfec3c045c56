#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

// The contract (the `Store` trait, its vocabulary, `raw`, `retry`, `tls`) lives in
// keyplane-contract, which the backends depend on alone; it is re-exported here at the paths
// it always had.
pub use keyplane_contract::*;

#[doc(hidden)]
pub mod derive_support;
pub mod keyspace;
pub mod layer;
pub mod migrate;
pub mod mirror;
pub mod recipes;
