#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod bulk;
mod bulk_delete;
mod capabilities;
pub mod changes;
pub mod collections;
mod continuation;
#[doc(hidden)]
pub mod derive_support;
mod election;
mod entry;
mod error;
pub mod intercept;
mod keeper;
pub mod keyspace;
pub mod layer;
mod lease;
mod lock;
pub mod migrate;
pub mod mirror;
mod namespace;
mod queue;
mod range;
pub mod raw;
mod redact;
pub mod retry;
mod store;
pub mod tls;
mod txn;
mod watch;

pub use bulk::{BulkLoader, BulkProgress, BulkReport};
pub use bulk_delete::delete_prefix_in_batches;
pub use capabilities::{Capabilities, ForeignWrites, Retention, Sharding, Support};
pub use changes::{CollectionChange, CollectionEvent, CollectionValue};
pub use collections::{CollectionKind, CollectionOp, CollectionResult};
pub use continuation::{Continuation, GroupRevisions};
pub use election::{Election, Leader, Leadership};
pub use entry::{Entry, MAX_KEY_LEN, escape_bytes, prefix_end, validate_key, validate_prefix};
pub use error::{Error, ErrorKind, Result};
pub use keeper::LeaseKeeper;
pub use keyspace::{Key, Keyspace, Prefix, Segment, Separator};
pub use layer::StoreExt;
pub use lease::{LeaseGrant, LeaseId, LeaseInfo};
pub use lock::{Lock, LockGuard};
pub use mirror::{
    Mirror, MirrorBatch, MirrorBuilder, MirrorCause, MirrorHealth, MirrorSnapshot,
    MirrorSubscription,
};
pub use namespace::Namespaced;
pub use range::{CollectionEntry, KeyRange, RangeOptions, RangeResult};
pub use redact::redact_url;
pub use store::{DeletePrefixResult, DeleteResult, PutOptions, PutResult, Store};
pub use txn::{Compare, CompareOp, CompareTarget, OpResult, Txn, TxnOp, TxnResponse};
pub use watch::{Event, WatchBatch, WatchOptions, WatchPosition, WatchStream};

pub use async_trait::async_trait;
