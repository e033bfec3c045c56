//! The conformance suite every backend runs, the real-server harness, and the model-based
//! property test.
#![deny(missing_docs)]

pub mod backends;
pub mod conformance;
pub mod harness;
pub mod model;
