//! The toolkit of backend implementors: the key rules every backend enforces, the emulation
//! of collections, snapshot reads and change tracking over ordered keys, the reserved key
//! layout collections use, the binary form of collection changes, and the redaction of
//! secrets in connection URLs, the grammar of a store URL's parameters, and Redis Cluster's
//! hash slots.
//!
//! A program that uses a store never needs this module; a crate that implements
//! [`Store`](crate::Store) for a new backend builds on it, as the memory, sled and etcd
//! backends do.

mod codec;
pub mod duration_text;
pub mod emulation;
mod hash_slot;
mod key;
pub mod layout;
mod redact;
mod setters;
mod url_params;

pub use crate::continuation::GroupRevisions;
pub use async_trait::async_trait;
pub use codec::{decode_changes, encode_changes};
pub use hash_slot::{redis_hash_tag, redis_key_slot};
pub use key::{MAX_KEY_LEN, escape_bytes, prefix_end, validate_key, validate_prefix};
pub use redact::{redact_secret, redact_url};
pub use url_params::{
    TLS_URL_PARAMS, UrlSpec, apply_url_params, known_url_params, percent_decode,
    url_param_examples, url_query_pairs,
};
