//! MemStore.
#![deny(missing_docs)]
