//! The conformance suite.
#![deny(missing_docs)]
