//! The conformance suite every backend runs, the real-server harness, and the model-based
//! property test.
#![deny(missing_docs)]

pub mod backends;
pub mod busy;
pub mod chaos;
pub mod conformance;
pub mod crash;
pub mod embedded;
pub mod harness;
pub mod model;

/// The workspace README's example, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
