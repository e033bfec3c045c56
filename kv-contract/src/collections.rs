//! [`CollectionOp`]: the collection operations of the contract, and their key layout.

use crate::capabilities::Capabilities;
use crate::continuation::Continuation;
use crate::error::{Error, Result};
use crate::raw::validate_key;

/// The kinds of collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CollectionKind {
    /// An unordered set of distinct members (Redis SET).
    Set,
    /// Fields with values (Redis HASH).
    Map,
    /// An ordered list of items, duplicates allowed (Redis LIST).
    List,
}

impl CollectionKind {
    /// All kinds, in layout order.
    pub const ALL: [CollectionKind; 3] = [
        CollectionKind::Set,
        CollectionKind::Map,
        CollectionKind::List,
    ];

    /// The tag byte of this kind in the emulation layout.
    pub fn tag(self) -> u8 {
        match self {
            CollectionKind::Set => b's',
            CollectionKind::Map => b'm',
            CollectionKind::List => b'l',
        }
    }

    /// The kind whose [`tag`](Self::tag) is `tag`.
    pub fn from_tag(tag: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.tag() == tag)
    }
}

/// A set, map or list operation. Each is also a transaction op
/// ([`TxnOp::Collection`](crate::TxnOp::Collection)).
///
/// Sets, maps and lists: the collection operations of the contract and the key layout that
/// ordered backends use to emulate them.
///
/// A collection lives at a key, like a Redis SET, HASH or LIST. Redis stores it natively;
/// ordered backends (etcd, sled, memory) store one key per member under a reserved layout that
/// no user key can enter, because user keys never contain NUL (see
/// [`validate_key`]):
///
/// | collection | member key |
/// |---|---|
/// | set `K`, member `m` | `\0s` `K` `\0` `m` (value empty) |
/// | map `K`, field `f` | `\0m` `K` `\0` `f` (value = the field's value) |
/// | list `K`, position `p` | `\0l` `K` `\0` 16 lowercase hex digits of `p` (value = the item) |
///
/// `get` sees plain keys only; a range lists the collections in it, with their kind and size,
/// when asked ([`RangeOptions::with_collections`](crate::RangeOptions::with_collections)); a
/// watch reports every change to them, member by member, when asked
/// ([`WatchOptions::with_collections`](crate::WatchOptions::with_collections), see
/// [`CollectionEvent`](crate::CollectionEvent));
/// `delete(K)` and `delete_prefix(P)` also delete the collections at `K` or under `P`. Using one key both as a
/// plain value and as a collection, or as two kinds of collection, is portable only on ordered
/// backends: Redis reports [`ErrorKind::WrongType`](crate::ErrorKind::WrongType).
///
/// In one transaction branch a set member or map field may be written once, but one list may
/// be written several times (push, remove, rotate): the ops apply in order, each seeing the
/// list the previous one left, all in the one atomic step of the transaction.
///
/// Transactions compare collections too, atomically with their ops on every backend
/// ([`Compare::set_contains`](crate::Compare::set_contains),
/// [`Compare::map_field`](crate::Compare::map_field),
/// [`Compare::size`](crate::Compare::size) and the others of
/// [`CompareTarget`](crate::CompareTarget)): a set member or map field present or absent, a
/// map field's value, how many times an item is in a list, a collection's size. An absent
/// collection has no member and size 0; a collection whose last member was removed is
/// absent. On Redis a collection compare on a key holding another type is `WrongType`, and
/// the transaction writes nothing.
///
/// ```
/// use keyplane_contract::{CollectionOp, Compare, Store, Txn, TxnOp};
/// # async fn example(store: &dyn keyplane_contract::Store) -> keyplane_contract::Result<()> {
/// // Claim a job only while no worker holds it: one winner however many race.
/// let claim = |worker: &str| Txn::new()
///     .when([Compare::map_lacks(b"jobs/42", b"owner")])
///     .and_then([TxnOp::Collection(CollectionOp::MapPut {
///         key: b"jobs/42".to_vec(),
///         field: b"owner".to_vec(),
///         value: worker.as_bytes().to_vec(),
///     })]);
/// assert!(store.txn(claim("w1")).await?.succeeded);
/// assert!(!store.txn(claim("w2")).await?.succeeded);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CollectionOp {
    /// Add a member: `Changed(true)` when it was not there.
    SetAdd {
        /// The set's key.
        key: Vec<u8>,
        /// The member.
        member: Vec<u8>,
    },
    /// Remove a member: `Changed(true)` when it was there.
    SetRemove {
        /// The set's key.
        key: Vec<u8>,
        /// The member.
        member: Vec<u8>,
    },
    /// `Contains(bool)`.
    SetContains {
        /// The set's key.
        key: Vec<u8>,
        /// The member.
        member: Vec<u8>,
    },
    /// `Members` in ascending byte order.
    SetMembers {
        /// The set's key.
        key: Vec<u8>,
    },
    /// One page of members: `Page`. Every member present during the whole scan is returned at
    /// least once; ordered backends return each exactly once, in byte order.
    SetScan {
        /// The set's key.
        key: Vec<u8>,
        /// The previous page's [`CollectionResult::Page`] `next`, `None` for the first page.
        after: Option<Continuation>,
        /// Roughly how many members per page (at least 1).
        limit: usize,
    },
    /// Set a field: `Changed(true)` when the field is new.
    MapPut {
        /// The map's key.
        key: Vec<u8>,
        /// The field.
        field: Vec<u8>,
        /// The field's value.
        value: Vec<u8>,
    },
    /// `Value(Option)` of one field.
    MapGet {
        /// The map's key.
        key: Vec<u8>,
        /// The field.
        field: Vec<u8>,
    },
    /// Delete a field: `Changed(true)` when it was there.
    MapDelete {
        /// The map's key.
        key: Vec<u8>,
        /// The field.
        field: Vec<u8>,
    },
    /// `Fields` in ascending field order.
    MapGetAll {
        /// The map's key.
        key: Vec<u8>,
    },
    /// Append an item at the tail: `Count(new length)`.
    ListPush {
        /// The list's key.
        key: Vec<u8>,
        /// The item.
        value: Vec<u8>,
    },
    /// Insert an item at the head: `Count(new length)` (Redis `LPUSH`).
    ListPushFront {
        /// The list's key.
        key: Vec<u8>,
        /// The item.
        value: Vec<u8>,
    },
    /// Remove every item equal to `value`: `Count(removed)`.
    ListRemove {
        /// The list's key.
        key: Vec<u8>,
        /// The item removed.
        value: Vec<u8>,
    },
    /// `Items` from index `start` to `stop` inclusive; negative indexes count from the tail
    /// (`-1` is the last item), as Redis LRANGE.
    ListRange {
        /// The list's key.
        key: Vec<u8>,
        /// First index.
        start: i64,
        /// Last index, inclusive.
        stop: i64,
    },
    /// Atomically move the head item to the tail and return it: `Value(Some(item))`, or
    /// `Value(None)` for an empty list (Redis `LMOVE key key LEFT RIGHT`).
    ListRotate {
        /// The list's key.
        key: Vec<u8>,
    },
    /// Atomically move the head item to the tail, as [`ListRotate`](Self::ListRotate), and
    /// in the same step read `field` of the map the item moved names: the map at
    /// `map_prefix`, the item, `map_suffix` (Redis `SORT`'s `GET prefix*suffix->field`
    /// pattern): `Rotated { item, value }`. On Redis one script run (`LMOVE key key LEFT
    /// RIGHT`, then `HGET`).
    ///
    /// A round robin over objects that each have a status (the balancer's pick) learns the
    /// status of the object it hands out at the moment it moves it, in one call. The value
    /// is `None` when the map has no `field` or the list is empty. The map is read, never
    /// written. On Redis Cluster `map_prefix` must carry the list's hash tag.
    ListRotateGet {
        /// The list's key.
        key: Vec<u8>,
        /// What the key of the moved item's map starts with, before the item.
        map_prefix: Vec<u8>,
        /// What the key of the moved item's map ends with, after the item.
        map_suffix: Vec<u8>,
        /// The field read of the moved item's map.
        field: Vec<u8>,
    },
    /// `Count(length)`.
    ListLen {
        /// The list's key.
        key: Vec<u8>,
    },
}

/// The result of a [`CollectionOp`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CollectionResult {
    /// Whether the write changed the collection.
    Changed(bool),
    /// Whether the member is in the set.
    Contains(bool),
    /// Set members, ascending.
    Members(Vec<Vec<u8>>),
    /// One page of a set scan; `next: None` when the scan is complete.
    Page {
        /// Members of this page.
        members: Vec<Vec<u8>>,
        /// Pass back as `after` for the next page; `None` at the end.
        next: Option<Continuation>,
    },
    /// A single value (map field, rotated list item).
    Value(Option<Vec<u8>>),
    /// Map fields and values, ascending by field.
    Fields(Vec<(Vec<u8>, Vec<u8>)>),
    /// List items, head first.
    Items(Vec<Vec<u8>>),
    /// A count (list length, removed items).
    Count(u64),
    /// A rotation's moved item and the field read of its map
    /// ([`CollectionOp::ListRotateGet`]).
    Rotated {
        /// The item moved to the tail; `None` for an empty list.
        item: Option<Vec<u8>>,
        /// The field's value in the moved item's map; `None` when the map has no such
        /// field.
        value: Option<Vec<u8>>,
    },
}

/// The key of a collection op, shared or mutable as the op is borrowed.
macro_rules! op_key {
    ($op:expr) => {
        match $op {
            CollectionOp::SetAdd { key, .. }
            | CollectionOp::SetRemove { key, .. }
            | CollectionOp::SetContains { key, .. }
            | CollectionOp::SetMembers { key }
            | CollectionOp::SetScan { key, .. }
            | CollectionOp::MapPut { key, .. }
            | CollectionOp::MapGet { key, .. }
            | CollectionOp::MapDelete { key, .. }
            | CollectionOp::MapGetAll { key }
            | CollectionOp::ListPush { key, .. }
            | CollectionOp::ListPushFront { key, .. }
            | CollectionOp::ListRemove { key, .. }
            | CollectionOp::ListRange { key, .. }
            | CollectionOp::ListRotate { key }
            | CollectionOp::ListRotateGet { key, .. }
            | CollectionOp::ListLen { key } => key,
        }
    };
}

impl CollectionOp {
    /// The read of a whole collection of `kind` at `key`: its members (`SMEMBERS`), fields
    /// (`HGETALL`) or items (`LRANGE 0 -1`).
    pub fn read_all(key: impl Into<Vec<u8>>, kind: CollectionKind) -> Self {
        let key = key.into();
        match kind {
            CollectionKind::Set => CollectionOp::SetMembers { key },
            CollectionKind::Map => CollectionOp::MapGetAll { key },
            CollectionKind::List => CollectionOp::ListRange {
                key,
                start: 0,
                stop: -1,
            },
        }
    }

    /// The key of the collection the op works on.
    pub fn key(&self) -> &[u8] {
        op_key!(self)
    }

    /// The key of the collection the op works on, to change (a layer that rewrites keys, as
    /// a namespace does).
    pub fn key_mut(&mut self) -> &mut Vec<u8> {
        op_key!(self)
    }

    /// The kind of collection the op works on.
    pub fn kind(&self) -> CollectionKind {
        match self {
            CollectionOp::SetAdd { .. }
            | CollectionOp::SetRemove { .. }
            | CollectionOp::SetContains { .. }
            | CollectionOp::SetMembers { .. }
            | CollectionOp::SetScan { .. } => CollectionKind::Set,
            CollectionOp::MapPut { .. }
            | CollectionOp::MapGet { .. }
            | CollectionOp::MapDelete { .. }
            | CollectionOp::MapGetAll { .. } => CollectionKind::Map,
            CollectionOp::ListPush { .. }
            | CollectionOp::ListPushFront { .. }
            | CollectionOp::ListRemove { .. }
            | CollectionOp::ListRange { .. }
            | CollectionOp::ListRotate { .. }
            | CollectionOp::ListRotateGet { .. }
            | CollectionOp::ListLen { .. } => CollectionKind::List,
        }
    }

    /// For set and map ops that address one member or field: the kind tag and that member.
    pub fn member(&self) -> Option<(u8, &[u8])> {
        match self {
            CollectionOp::SetAdd { member, .. }
            | CollectionOp::SetRemove { member, .. }
            | CollectionOp::SetContains { member, .. } => Some((b's', member)),
            CollectionOp::MapPut { field, .. }
            | CollectionOp::MapGet { field, .. }
            | CollectionOp::MapDelete { field, .. } => Some((b'm', field)),
            _ => None,
        }
    }

    /// Whether the op may write.
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            CollectionOp::SetAdd { .. }
                | CollectionOp::SetRemove { .. }
                | CollectionOp::MapPut { .. }
                | CollectionOp::MapDelete { .. }
                | CollectionOp::ListPush { .. }
                | CollectionOp::ListPushFront { .. }
                | CollectionOp::ListRemove { .. }
                | CollectionOp::ListRotate { .. }
                | CollectionOp::ListRotateGet { .. }
        )
    }

    /// The key prefix of the collections the op reads besides its own (the maps of a
    /// [`ListRotateGet`](Self::ListRotateGet), all named `map_prefix`, an item,
    /// `map_suffix`); `None` for every other op.
    pub fn other_prefix(&self) -> Option<&[u8]> {
        match self {
            CollectionOp::ListRotateGet { map_prefix, .. } => Some(map_prefix),
            _ => None,
        }
    }

    /// The prefix of [`other_prefix`](Self::other_prefix), to change (a layer that rewrites
    /// keys, as a namespace does).
    pub fn other_prefix_mut(&mut self) -> Option<&mut Vec<u8>> {
        match self {
            CollectionOp::ListRotateGet { map_prefix, .. } => Some(map_prefix),
            _ => None,
        }
    }

    /// Checks the collection key, the value size and the scan limit.
    ///
    /// # Errors
    /// `InvalidKey`, `InvalidValue` or `InvalidArgument`.
    pub fn validate(&self, caps: &Capabilities) -> Result<()> {
        validate_key(self.key())?;
        if let CollectionOp::ListRotateGet {
            map_prefix,
            map_suffix,
            ..
        } = self
        {
            // What every map key holds besides its item.
            validate_key(&[&map_prefix[..], b"_", map_suffix].concat())?;
        }
        match self {
            CollectionOp::MapPut { value, .. }
            | CollectionOp::ListPush { value, .. }
            | CollectionOp::ListPushFront { value, .. } => caps.validate_value(value),
            CollectionOp::SetAdd { member, .. } => caps.validate_value(member),
            CollectionOp::SetScan { limit: 0, .. } => Err(Error::invalid_argument(
                "a set scan limit must be at least 1",
            )),
            _ => Ok(()),
        }
    }
}
