//! [`CollectionEvent`] and [`CollectionChange`]: what a watch reports of collections.

use crate::collections::CollectionKind;
use crate::error::{Error, ErrorKind, Result};
use std::collections::{BTreeMap, BTreeSet};

/// One change to one collection, reported by a watch that asks for collections.
///
/// Collection events: what a watch that asks for collections
/// ([`WatchOptions::with_collections`](crate::WatchOptions::with_collections)) reports when a
/// set, map or list changes, and how to replay them.
///
/// Every change a transaction makes to a collection is one [`CollectionChange`], in the order
/// of the transaction's ops, in the same [`WatchBatch`](crate::WatchBatch) (so at the same
/// revision) as the plain events of that transaction; a batch lists its plain events first,
/// then its collection events. A write that changes nothing (adding a present member,
/// putting a field's current value, rotating an empty list) reports nothing.
///
/// A transaction that leaves a collection empty reports one
/// [`CollectionChange::Deleted`] for it instead of its member changes, whether the
/// collection went with `delete`/`delete_prefix` or its last members were removed one by
/// one: a collection without members does not exist, on every backend. A collection deleted
/// and written again in one transaction reports `Deleted` followed by the writes.
///
/// The events are enough to replay a collection exactly: start from its contents at revision
/// R (a read at R, or empty), apply every change of the revisions after R in order with
/// [`CollectionValue::apply`], and the result is the collection's contents at the last
/// revision applied. A consistent start on every backend is a read-only transaction of
/// collection reads (`SetMembers`, `MapGetAll`, `ListRange`): its response's revision is the
/// revision R it read at, and a watch from R + 1 continues exactly where it left off.
///
/// ```
/// use futures::StreamExt;
/// use keyplane_contract::{CollectionChange, CollectionOp, Event, Store, WatchOptions};
/// # async fn example(store: &dyn keyplane_contract::Store) -> keyplane_contract::Result<()> {
/// let mut watch = store.watch(WatchOptions::prefix("realms/").with_collections()).await?;
/// store.collection(CollectionOp::SetAdd {
///     key: b"realms/eu".to_vec(),
///     member: b"alipay".to_vec(),
/// }).await?;
/// let batch = watch.next().await.unwrap()?;
/// let Event::Collection(event) = &batch.events[0] else { unreachable!() };
/// assert_eq!(event.key, b"realms/eu");
/// assert_eq!(event.change, CollectionChange::SetAdd { member: b"alipay".to_vec() });
/// # Ok(()) }
/// ```
///
/// On Redis, a collection another program changes directly (a raw `SADD`) is not reported:
/// only the changes made through the store are logged.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CollectionEvent {
    /// The collection's key.
    pub key: Vec<u8>,
    /// The collection's kind.
    pub kind: CollectionKind,
    /// What changed.
    pub change: CollectionChange,
}

/// What changed in a collection.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CollectionChange {
    /// A member was added to a set.
    SetAdd {
        /// The member.
        member: Vec<u8>,
    },
    /// A member was removed from a set.
    SetRemove {
        /// The member.
        member: Vec<u8>,
    },
    /// A map field was set.
    MapPut {
        /// The field.
        field: Vec<u8>,
        /// Its new value.
        value: Vec<u8>,
        /// Its value before, `None` for a new field.
        prev: Option<Vec<u8>>,
    },
    /// A map field was deleted.
    MapDelete {
        /// The field.
        field: Vec<u8>,
        /// Its value before the delete.
        prev: Vec<u8>,
    },
    /// An item was appended at the tail of a list.
    ListPush {
        /// The item.
        item: Vec<u8>,
    },
    /// An item was inserted at the head of a list.
    ListPushFront {
        /// The item.
        item: Vec<u8>,
    },
    /// Every item equal to `item` was removed from a list.
    ListRemove {
        /// The item removed.
        item: Vec<u8>,
        /// How many were removed (at least 1).
        count: u64,
    },
    /// The head item of a list moved to its tail.
    ListRotate {
        /// The item that moved.
        item: Vec<u8>,
    },
    /// The collection no longer exists: it was deleted, or the transaction removed its last
    /// members.
    Deleted,
}

impl CollectionChange {
    /// The kind of collection this change applies to; `None` for [`CollectionChange::Deleted`],
    /// which applies to every kind.
    pub fn kind(&self) -> Option<CollectionKind> {
        match self {
            CollectionChange::SetAdd { .. } | CollectionChange::SetRemove { .. } => {
                Some(CollectionKind::Set)
            }
            CollectionChange::MapPut { .. } | CollectionChange::MapDelete { .. } => {
                Some(CollectionKind::Map)
            }
            CollectionChange::ListPush { .. }
            | CollectionChange::ListPushFront { .. }
            | CollectionChange::ListRemove { .. }
            | CollectionChange::ListRotate { .. } => Some(CollectionKind::List),
            CollectionChange::Deleted => None,
        }
    }
}

/// The contents of one collection, to replay [`CollectionChange`]s onto.
///
/// ```
/// use keyplane_contract::{CollectionChange, CollectionValue};
///
/// let mut list = CollectionValue::List(vec![b"a".to_vec(), b"b".to_vec(), b"a".to_vec()]);
/// list.apply(&CollectionChange::ListRotate { item: b"a".to_vec() })?;
/// list.apply(&CollectionChange::ListRemove { item: b"b".to_vec(), count: 1 })?;
/// assert_eq!(list, CollectionValue::List(vec![b"a".to_vec(), b"a".to_vec()]));
/// list.apply(&CollectionChange::Deleted)?;
/// assert!(list.is_empty());
/// # Ok::<(), keyplane_contract::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CollectionValue {
    /// A set's members.
    Set(BTreeSet<Vec<u8>>),
    /// A map's fields.
    Map(BTreeMap<Vec<u8>, Vec<u8>>),
    /// A list's items, head first.
    List(Vec<Vec<u8>>),
}

impl CollectionValue {
    /// An empty collection of `kind`.
    pub fn empty(kind: CollectionKind) -> Self {
        match kind {
            CollectionKind::Set => CollectionValue::Set(BTreeSet::new()),
            CollectionKind::Map => CollectionValue::Map(BTreeMap::new()),
            CollectionKind::List => CollectionValue::List(Vec::new()),
        }
    }

    /// The kind of this collection.
    pub fn kind(&self) -> CollectionKind {
        match self {
            CollectionValue::Set(_) => CollectionKind::Set,
            CollectionValue::Map(_) => CollectionKind::Map,
            CollectionValue::List(_) => CollectionKind::List,
        }
    }

    /// Whether it has no member (a collection that does not exist).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many members, fields or items it has.
    pub fn len(&self) -> usize {
        match self {
            CollectionValue::Set(s) => s.len(),
            CollectionValue::Map(m) => m.len(),
            CollectionValue::List(l) => l.len(),
        }
    }

    /// Applies one change.
    ///
    /// # Errors
    /// `WrongType` when the change is for another kind of collection; `Corrupted` when it
    /// contradicts the contents (removing a member that is not there, rotating an item that
    /// is not the head...): the events were applied to the wrong starting point.
    pub fn apply(&mut self, change: &CollectionChange) -> Result<()> {
        let mismatch = || {
            Error::new(
                ErrorKind::Corrupted,
                "a collection change does not fit the contents it is applied to",
            )
        };
        if let Some(kind) = change.kind()
            && kind != self.kind()
        {
            return Err(Error::new(
                ErrorKind::WrongType,
                "a collection change is for another kind of collection",
            )
            .with_context("change", format!("{kind:?}"))
            .with_context("collection", format!("{:?}", self.kind())));
        }
        match (self, change) {
            (value, CollectionChange::Deleted) => *value = CollectionValue::empty(value.kind()),
            (CollectionValue::Set(s), CollectionChange::SetAdd { member }) => {
                if !s.insert(member.clone()) {
                    return Err(mismatch());
                }
            }
            (CollectionValue::Set(s), CollectionChange::SetRemove { member }) => {
                if !s.remove(member) {
                    return Err(mismatch());
                }
            }
            (CollectionValue::Map(m), CollectionChange::MapPut { field, value, prev }) => {
                if m.insert(field.clone(), value.clone()) != *prev {
                    return Err(mismatch());
                }
            }
            (CollectionValue::Map(m), CollectionChange::MapDelete { field, prev }) => {
                if m.remove(field).as_ref() != Some(prev) {
                    return Err(mismatch());
                }
            }
            (CollectionValue::List(l), CollectionChange::ListPush { item }) => l.push(item.clone()),
            (CollectionValue::List(l), CollectionChange::ListPushFront { item }) => {
                l.insert(0, item.clone());
            }
            (CollectionValue::List(l), CollectionChange::ListRemove { item, count }) => {
                let before = l.len();
                l.retain(|i| i != item);
                if (before - l.len()) as u64 != *count {
                    return Err(mismatch());
                }
            }
            (CollectionValue::List(l), CollectionChange::ListRotate { item }) => {
                if l.first() != Some(item) {
                    return Err(mismatch());
                }
                let head = l.remove(0);
                l.push(head);
            }
            _ => return Err(mismatch()),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_checks_the_contents() {
        let mut set = CollectionValue::empty(CollectionKind::Set);
        set.apply(&CollectionChange::SetAdd {
            member: b"a".to_vec(),
        })
        .unwrap();
        assert!(
            set.apply(&CollectionChange::SetAdd {
                member: b"a".to_vec()
            })
            .is_err()
        );
        assert_eq!(
            set.apply(&CollectionChange::ListPush {
                item: b"a".to_vec()
            })
            .unwrap_err()
            .kind(),
            ErrorKind::WrongType
        );
        let mut map = CollectionValue::empty(CollectionKind::Map);
        map.apply(&CollectionChange::MapPut {
            field: b"f".to_vec(),
            value: b"1".to_vec(),
            prev: None,
        })
        .unwrap();
        assert!(
            map.apply(&CollectionChange::MapPut {
                field: b"f".to_vec(),
                value: b"2".to_vec(),
                prev: None,
            })
            .is_err()
        );
        let mut list = CollectionValue::List(vec![b"b".to_vec(), b"a".to_vec()]);
        assert!(
            list.apply(&CollectionChange::ListRotate {
                item: b"a".to_vec()
            })
            .is_err()
        );
    }
}
