//! RedisStore.
#![deny(missing_docs)]
