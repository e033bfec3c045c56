//! The conformance suite.
#![deny(missing_docs)]

pub mod harness;
