//! Typed keyspaces of five real systems.
#![deny(missing_docs)]
