#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod capabilities;
mod changes;
mod collections;
mod continuation;
pub mod driver;
mod entry;
mod error;
mod front;
mod lease;
mod range;
pub mod raw;
pub mod retry;
mod status;
mod store;
pub mod tls;
mod txn;
mod watch;

pub use capabilities::{Capabilities, ForeignWrites, Retention, Sharding, Support};
pub use changes::{CollectionChange, CollectionEvent, CollectionValue};
pub use collections::{CollectionKind, CollectionOp, CollectionResult};
pub use continuation::Continuation;
pub use entry::Entry;
pub use error::{Error, ErrorKind, Result};
pub use lease::{LeaseGrant, LeaseId, LeaseInfo};
pub use range::{CollectionEntry, KeyRange, RangeOptions, RangeResult};
pub use status::{Member, MemberRole, ServerStatus};
pub use store::{DeletePrefixResult, DeleteResult, PutOptions, PutResult, Store};
pub use txn::{Compare, CompareOp, CompareTarget, OpResult, Txn, TxnOp, TxnResponse};
pub use watch::{Event, WatchBatch, WatchOptions, WatchPosition, WatchStream};
