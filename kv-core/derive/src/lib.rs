//! Derive macros for `kv-core`: keys, prefixes and keyspaces declared from templates.
#![deny(missing_docs)]
