//! The toolkit of backend implementors: the emulation of collections, snapshot reads and
//! change tracking over ordered keys, the reserved key layout collections use, and the
//! binary form of collection changes.
//!
//! A program that uses a store never needs this module; a crate that implements
//! [`Store`](crate::Store) for a new backend builds on it, as the memory, sled and etcd
//! backends do.

mod codec;
pub mod emulation;
pub mod layout;

pub use crate::redact::redact_secret;
pub use codec::{decode_changes, encode_changes};
pub use layout::list_index_range;
