//! A typed hierarchical key-value layer for etcd, Redis, an embedded store and memory, in one
//! dependency.
//!
//! This crate re-exports the store contract and the keyspace DSL of `keyplane-core` at its root
//! (so `keyplane::Store`, `keyplane::keyspace::Key`, `#[derive(keyplane::keyspace::Key)]` work
//! without naming `keyplane-core`), the backends as modules behind features, and [`open()`] to
//! open any of them from a URL:
//!
//! | Feature | Module | URL |
//! |---|---|---|
//! | (always) | [`mem`] | `mem://` |
//! | `redb` (default) | [`redb`] | `redb://PATH` (a database file) |
//! | `sled` | `sled` | `sled://PATH` (a directory) |
//! | `etcd` | `etcd` | `etcd://HOST:PORT[,HOST:PORT...][?options]` |
//! | `redis` | `redis` | `redis://HOST:PORT/DB`, `rediss://...` with `tls`, `redis+cluster://HOST:PORT[,HOST:PORT...]`, `rediss+cluster://...` with `tls`, `redis+sentinel://HOST:PORT[,HOST:PORT...]/MASTER[/DB]`, `rediss+sentinel://...` with `tls` |
//!
//! `tls` adds TLS to the network backends that are enabled, `encryption` the `Encrypted`
//! codec, `proptest` the strategies of [`keyspace`]. The `etcd` feature needs `protoc` at build
//! time (`etcd-client` compiles protobufs): on `PATH` or named by `PROTOC`, with protobuf's
//! well-known types (Debian and Ubuntu: `apt-get install protobuf-compiler libprotobuf-dev`).
//! Without `etcd`, nothing here needs it.
//!
//! ```
//! use keyplane::keyspace::{Key, Text, TypedStore};
//!
//! /// `app/{service}/config`: one text value per service.
//! #[derive(Key, Debug, Clone, PartialEq, Eq)]
//! #[kv(template = "app/{service}/config", value = Text)]
//! struct ConfigKey {
//!     service: u32,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> keyplane::Result<()> {
//! let store = TypedStore::new(keyplane::open("mem://").await?);
//! let key = ConfigKey { service: 7 };
//! store.put(&key, &"debug=false".to_string()).await?;
//! assert_eq!(key.encode(), "app/7/config");
//! assert_eq!(store.get(&key).await?.as_deref(), Some("debug=false"));
//! # Ok(()) }
//! ```

// The facade mirrors keyplane-core's layout one-to-one: the contract at the root, each layer
// in its module (`keyspace`, `layer`, `mirror`, `recipes`, `retry`, `tls`, `migrate`, and
// `raw`, the implementors' toolkit), each name on one path.
pub use keyplane_core::*;

mod open;

pub use open::{Backend, OpenOptions, open};

/// The in-process store: [`MemStore`](mem::MemStore), the reference backend.
pub mod mem {
    pub use keyplane_mem::{MemConfig, MemStore};
}

/// The embedded, persistent store, the default: [`RedbStore`](redb::RedbStore), one redb
/// database file.
#[cfg(feature = "redb")]
pub mod redb {
    pub use keyplane_redb::{Durability, RedbConfig, RedbStore};
}

/// The embedded, persistent store on sled 0.34: `SledStore`, for stores made with it (`kvctl
/// copy` moves one to redb).
#[cfg(feature = "sled")]
pub mod sled {
    pub use keyplane_sled::{Durability, SledConfig, SledStore};
}

/// The etcd store: `EtcdStore`, its configuration and the etcd-specific helpers. (TLS
/// settings are [`tls::TlsConfig`], shared by every network backend.)
#[cfg(feature = "etcd")]
pub mod etcd {
    pub use keyplane_etcd::*;
}

/// The Redis store: `RedisStore`, its configuration and reconciling. (TLS settings are
/// [`tls::TlsConfig`], shared by every network backend.)
#[cfg(feature = "redis")]
pub mod redis {
    pub use keyplane_redis::*;
}
