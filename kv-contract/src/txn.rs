//! Transactions: compares, then a success or a failure branch of operations.

use crate::capabilities::Capabilities;
use crate::collections::{CollectionKind, CollectionOp, CollectionResult};
use crate::entry::Entry;
use crate::error::{Error, ErrorKind, Result};
use crate::lease::LeaseId;
use crate::raw::{validate_key, validate_prefix};

/// How a compare relates the stored attribute to the given one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompareOp {
    /// Stored `==` given.
    Equal,
    /// Stored `!=` given.
    NotEqual,
    /// Stored `>` given.
    Greater,
    /// Stored `<` given.
    Less,
}

impl CompareOp {
    /// Applies the comparison to `stored` and `given`.
    pub fn holds<T: Ord + ?Sized>(self, stored: &T, given: &T) -> bool {
        match self {
            CompareOp::Equal => stored == given,
            CompareOp::NotEqual => stored != given,
            CompareOp::Greater => stored > given,
            CompareOp::Less => stored < given,
        }
    }
}

/// The attribute of a key a compare looks at.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CompareTarget {
    /// Number of writes since creation (0 when absent).
    Version(i64),
    /// Revision that created the key (0 when absent).
    CreateRevision(i64),
    /// Revision of the last write (0 when absent).
    ModRevision(i64),
    /// The value's bytes. A compare on the value of an absent key is always false.
    Value(Vec<u8>),
    /// The lease the key is attached to (`0` for none; absent keys have none).
    Lease(i64),
    /// How many times `member` is in the collection of `kind` at the key: 0 or 1 for a set
    /// member or a map field, the number of equal items for a list (0 when the collection
    /// is absent).
    Member {
        /// The kind of collection.
        kind: CollectionKind,
        /// The set member, map field or list item.
        member: Vec<u8>,
        /// The count compared with.
        count: i64,
    },
    /// The value of field `field` of the map at the key, in byte order. A compare on an
    /// absent field is always false, as on an absent key's value.
    Field {
        /// The map field.
        field: Vec<u8>,
        /// The value compared with.
        value: Vec<u8>,
    },
    /// The number of members, fields or items of the collection of `kind` at the key (0
    /// when absent: a collection exists while it has one).
    Size {
        /// The kind of collection.
        kind: CollectionKind,
        /// The size compared with.
        size: i64,
    },
}

impl CompareTarget {
    /// The kind of collection the target looks at, `None` for a plain key's attribute.
    pub fn collection_kind(&self) -> Option<CollectionKind> {
        match self {
            CompareTarget::Member { kind, .. } | CompareTarget::Size { kind, .. } => Some(*kind),
            CompareTarget::Field { .. } => Some(CollectionKind::Map),
            _ => None,
        }
    }
}

/// One condition of a transaction, with etcd's semantics.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Compare {
    /// The key compared.
    pub key: Vec<u8>,
    /// The attribute and the value it is compared with.
    pub target: CompareTarget,
    /// The comparison.
    pub op: CompareOp,
}

impl Compare {
    /// A compare of `key`'s `target` with `op`.
    pub fn new(key: impl AsRef<[u8]>, op: CompareOp, target: CompareTarget) -> Self {
        Compare {
            key: key.as_ref().to_vec(),
            target,
            op,
        }
    }

    /// Holds when the key exists.
    pub fn exists(key: impl AsRef<[u8]>) -> Self {
        Self::new(key, CompareOp::Greater, CompareTarget::Version(0))
    }

    /// Holds when the key does not exist.
    pub fn absent(key: impl AsRef<[u8]>) -> Self {
        Self::new(key, CompareOp::Equal, CompareTarget::Version(0))
    }

    /// Holds when the key's version is `op` `version`.
    pub fn version(key: impl AsRef<[u8]>, op: CompareOp, version: i64) -> Self {
        Self::new(key, op, CompareTarget::Version(version))
    }

    /// Holds when the key's mod revision is `op` `revision` (0 = absent).
    pub fn mod_revision(key: impl AsRef<[u8]>, op: CompareOp, revision: i64) -> Self {
        Self::new(key, op, CompareTarget::ModRevision(revision))
    }

    /// Holds when the key's create revision is `op` `revision` (0 = absent).
    pub fn create_revision(key: impl AsRef<[u8]>, op: CompareOp, revision: i64) -> Self {
        Self::new(key, op, CompareTarget::CreateRevision(revision))
    }

    /// Holds when the key exists and its value is `op` `value` (byte order).
    pub fn value(key: impl AsRef<[u8]>, op: CompareOp, value: impl AsRef<[u8]>) -> Self {
        Self::new(key, op, CompareTarget::Value(value.as_ref().to_vec()))
    }

    /// Holds when the set at `key` holds `member`.
    pub fn set_contains(key: impl AsRef<[u8]>, member: impl AsRef<[u8]>) -> Self {
        Self::member(key, CollectionKind::Set, member, CompareOp::Equal, 1)
    }

    /// Holds when the set at `key` does not hold `member` (or there is no set).
    pub fn set_lacks(key: impl AsRef<[u8]>, member: impl AsRef<[u8]>) -> Self {
        Self::member(key, CollectionKind::Set, member, CompareOp::Equal, 0)
    }

    /// Holds when the map at `key` has field `field`.
    pub fn map_has(key: impl AsRef<[u8]>, field: impl AsRef<[u8]>) -> Self {
        Self::member(key, CollectionKind::Map, field, CompareOp::Equal, 1)
    }

    /// Holds when the map at `key` has no field `field` (or there is no map).
    pub fn map_lacks(key: impl AsRef<[u8]>, field: impl AsRef<[u8]>) -> Self {
        Self::member(key, CollectionKind::Map, field, CompareOp::Equal, 0)
    }

    /// Holds when the map at `key` has field `field` and its value is `op` `value` (byte
    /// order).
    pub fn map_field(
        key: impl AsRef<[u8]>,
        field: impl AsRef<[u8]>,
        op: CompareOp,
        value: impl AsRef<[u8]>,
    ) -> Self {
        let target = CompareTarget::Field {
            field: field.as_ref().to_vec(),
            value: value.as_ref().to_vec(),
        };
        Self::new(key, op, target)
    }

    /// Holds when the number of times `member` is in the collection of `kind` at `key` is
    /// `op` `count`: see [`CompareTarget::Member`].
    pub fn member(
        key: impl AsRef<[u8]>,
        kind: CollectionKind,
        member: impl AsRef<[u8]>,
        op: CompareOp,
        count: i64,
    ) -> Self {
        let target = CompareTarget::Member {
            kind,
            member: member.as_ref().to_vec(),
            count,
        };
        Self::new(key, op, target)
    }

    /// Holds when the size of the collection of `kind` at `key` is `op` `size` (a list's
    /// length, a set's or map's number of members or fields; 0 when absent).
    ///
    /// ```
    /// use keyplane_contract::{CollectionKind, CollectionOp, Compare, CompareOp, Store, Txn, TxnOp};
    /// # async fn example(store: &dyn keyplane_contract::Store) -> keyplane_contract::Result<()> {
    /// store.collection(CollectionOp::ListPush { key: b"q".to_vec(), value: b"a".to_vec() }).await?;
    /// // Push only while the queue is shorter than 2.
    /// let push = || TxnOp::Collection(CollectionOp::ListPush { key: b"q".to_vec(), value: b"b".to_vec() });
    /// let bounded = || Txn::new()
    ///     .when([Compare::size(b"q", CollectionKind::List, CompareOp::Less, 2)])
    ///     .and_then([push()]);
    /// assert!(store.txn(bounded()).await?.succeeded);
    /// assert!(!store.txn(bounded()).await?.succeeded);
    /// # Ok(()) }
    /// ```
    pub fn size(key: impl AsRef<[u8]>, kind: CollectionKind, op: CompareOp, size: i64) -> Self {
        Self::new(key, op, CompareTarget::Size { kind, size })
    }

    /// Holds when a collection of `kind` exists at `key` (it has a member).
    pub fn collection_exists(key: impl AsRef<[u8]>, kind: CollectionKind) -> Self {
        Self::size(key, kind, CompareOp::Greater, 0)
    }

    /// Holds when no collection of `kind` exists at `key`.
    pub fn collection_absent(key: impl AsRef<[u8]>, kind: CollectionKind) -> Self {
        Self::size(key, kind, CompareOp::Equal, 0)
    }

    /// Evaluates a collection compare from what the collection holds: `count` of the
    /// member, the field's value (`None` when absent), and the size, whichever the target
    /// asks for (see [`CompareTarget`]). A plain compare is false here; it is evaluated by
    /// [`Compare::evaluate`].
    pub fn evaluate_collection(
        &self,
        count: impl FnOnce(&[u8]) -> i64,
        field: impl FnOnce(&[u8]) -> Option<Vec<u8>>,
        size: impl FnOnce() -> i64,
    ) -> bool {
        match &self.target {
            CompareTarget::Member {
                member, count: c, ..
            } => self.op.holds(&count(member), c),
            CompareTarget::Field { field: f, value } => {
                field(f).is_some_and(|v| self.op.holds(v.as_slice(), value.as_slice()))
            }
            CompareTarget::Size { size: s, .. } => self.op.holds(&size(), s),
            _ => false,
        }
    }

    /// Evaluates the compare against the key's current entry (`None` when absent), with
    /// etcd's rules: an absent key has version, revisions and lease 0, and a value compare on
    /// it is false. A collection compare is false here: see [`Compare::evaluate_collection`].
    pub fn evaluate(&self, entry: Option<&Entry>) -> bool {
        let lease = |e: &Entry| e.lease.map_or(0, |l| l.0);
        match (&self.target, entry) {
            (CompareTarget::Value(_), None) => false,
            (CompareTarget::Value(v), Some(e)) => self.op.holds(e.value.as_slice(), v.as_slice()),
            (CompareTarget::Version(v), e) => self.op.holds(&e.map_or(0, |e| e.version), v),
            (CompareTarget::CreateRevision(v), e) => {
                self.op.holds(&e.map_or(0, |e| e.create_revision), v)
            }
            (CompareTarget::ModRevision(v), e) => {
                self.op.holds(&e.map_or(0, |e| e.mod_revision), v)
            }
            (CompareTarget::Lease(v), e) => self.op.holds(&e.map_or(0, lease), v),
            (
                CompareTarget::Member { .. }
                | CompareTarget::Field { .. }
                | CompareTarget::Size { .. },
                _,
            ) => false,
        }
    }
}

/// One operation of a transaction branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnOp {
    /// Read one key: [`OpResult::Get`].
    Get {
        /// The key read.
        key: Vec<u8>,
    },
    /// Write a value, optionally attached to a lease: [`OpResult::Put`].
    Put {
        /// The key written.
        key: Vec<u8>,
        /// The value written.
        value: Vec<u8>,
        /// The lease the key is attached to.
        lease: Option<LeaseId>,
    },
    /// Delete a key (and any collection stored under it): [`OpResult::Delete`].
    Delete {
        /// The key deleted.
        key: Vec<u8>,
    },
    /// Delete every key (and collection) under a non-empty prefix: [`OpResult::Delete`].
    DeletePrefix {
        /// The prefix, never empty.
        prefix: Vec<u8>,
    },
    /// A set, map or list operation: [`OpResult::Collection`].
    Collection(CollectionOp),
}

impl TxnOp {
    /// A [`TxnOp::Get`].
    pub fn get(key: impl AsRef<[u8]>) -> Self {
        TxnOp::Get {
            key: key.as_ref().to_vec(),
        }
    }

    /// A [`TxnOp::Put`] without lease.
    pub fn put(key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Self {
        TxnOp::Put {
            key: key.as_ref().to_vec(),
            value: value.as_ref().to_vec(),
            lease: None,
        }
    }

    /// A [`TxnOp::Put`] attached to `lease`.
    pub fn put_with_lease(key: impl AsRef<[u8]>, value: impl AsRef<[u8]>, lease: LeaseId) -> Self {
        TxnOp::Put {
            key: key.as_ref().to_vec(),
            value: value.as_ref().to_vec(),
            lease: Some(lease),
        }
    }

    /// A [`TxnOp::Delete`].
    pub fn delete(key: impl AsRef<[u8]>) -> Self {
        TxnOp::Delete {
            key: key.as_ref().to_vec(),
        }
    }

    /// A [`TxnOp::DeletePrefix`].
    pub fn delete_prefix(prefix: impl AsRef<[u8]>) -> Self {
        TxnOp::DeletePrefix {
            prefix: prefix.as_ref().to_vec(),
        }
    }

    /// The key the op acts on: its key, a prefix delete's prefix, a collection's key.
    pub fn key(&self) -> &[u8] {
        match self {
            TxnOp::Get { key } | TxnOp::Put { key, .. } | TxnOp::Delete { key } => key,
            TxnOp::DeletePrefix { prefix } => prefix,
            TxnOp::Collection(c) => c.key(),
        }
    }

    /// Whether the op writes.
    pub fn is_write(&self) -> bool {
        match self {
            TxnOp::Get { .. } => false,
            TxnOp::Put { .. } | TxnOp::Delete { .. } | TxnOp::DeletePrefix { .. } => true,
            TxnOp::Collection(c) => c.is_write(),
        }
    }
}

/// The result of one [`TxnOp`], in the order of the branch that ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpResult {
    /// The entry read, if the key exists.
    Get(Option<Entry>),
    /// The put was applied.
    Put,
    /// How many keys were deleted (collections count as one key each).
    Delete {
        /// Number of keys deleted.
        deleted: u64,
    },
    /// The collection op's result.
    Collection(CollectionResult),
}

/// A transaction: if every compare holds, the success ops run, otherwise the failure ops;
/// atomically and isolated on every backend.
///
/// ```
/// use keyplane_contract::{Compare, Txn, TxnOp};
/// let txn = Txn::new()
///     .when([Compare::absent("locks/a")])
///     .and_then([TxnOp::put("locks/a", "me")])
///     .or_else([TxnOp::get("locks/a")]);
/// assert_eq!(txn.success.len(), 1);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Txn {
    /// Conditions, all of which must hold for the success branch.
    pub compares: Vec<Compare>,
    /// Ops run when every compare holds.
    pub success: Vec<TxnOp>,
    /// Ops run otherwise.
    pub failure: Vec<TxnOp>,
}

impl Txn {
    /// An empty transaction (no compares: the success branch runs).
    pub fn new() -> Self {
        Self::default()
    }

    /// Every key the transaction names: each compare's, then each op's of both branches
    /// ([`TxnOp::key`], followed by the prefix of the keys a collection op reads besides
    /// its own, [`CollectionOp::other_prefix`](crate::CollectionOp::other_prefix)), in
    /// order, repeats included.
    ///
    /// ```
    /// use keyplane_contract::{Compare, Txn, TxnOp};
    /// let txn = Txn::new()
    ///     .when([Compare::absent("a")])
    ///     .and_then([TxnOp::delete_prefix("b/")])
    ///     .or_else([TxnOp::get("a")]);
    /// assert_eq!(txn.keys().collect::<Vec<_>>(), [&b"a"[..], b"b/", b"a"]);
    /// ```
    pub fn keys(&self) -> impl Iterator<Item = &[u8]> {
        self.compares.iter().map(|c| c.key.as_slice()).chain(
            self.success.iter().chain(&self.failure).flat_map(|op| {
                let other = match op {
                    TxnOp::Collection(c) => c.other_prefix(),
                    _ => None,
                };
                std::iter::once(op.key()).chain(other)
            }),
        )
    }

    /// Adds compares.
    pub fn when(mut self, compares: impl IntoIterator<Item = Compare>) -> Self {
        self.compares.extend(compares);
        self
    }

    /// Adds success ops.
    pub fn and_then(mut self, ops: impl IntoIterator<Item = TxnOp>) -> Self {
        self.success.extend(ops);
        self
    }

    /// Adds failure ops.
    pub fn or_else(mut self, ops: impl IntoIterator<Item = TxnOp>) -> Self {
        self.failure.extend(ops);
        self
    }

    /// The ops of the branch that runs: the success ops when the compares held, the failure
    /// ops otherwise.
    pub fn branch(&self, succeeded: bool) -> &[TxnOp] {
        if succeeded {
            &self.success
        } else {
            &self.failure
        }
    }

    /// Checks the transaction before it is sent: valid keys and values, no more compares or
    /// ops per branch than `caps.max_txn_ops`, no plain key (nor set member, nor map field)
    /// written twice in one branch, no write inside a prefix the same branch deletes, no
    /// overlapping deleted prefixes.
    ///
    /// Several writes on one list (push, remove, rotate) are allowed in one branch: they apply
    /// in op order, each seeing the list the previous one left, as one atomic step.
    ///
    /// # Errors
    /// `InvalidKey` / `InvalidValue` for bad input, `TxnTooLarge` over the limit,
    /// `TxnConflict` for overlapping writes.
    pub fn validate(&self, caps: &Capabilities) -> Result<()> {
        for (what, len) in [
            ("compares", self.compares.len()),
            ("success ops", self.success.len()),
            ("failure ops", self.failure.len()),
        ] {
            if len > caps.max_txn_ops {
                return Err(Error::new(
                    ErrorKind::TxnTooLarge,
                    format!(
                        "{len} {what}, the backend takes at most {} per transaction",
                        caps.max_txn_ops
                    ),
                ));
            }
        }
        for c in &self.compares {
            validate_key(&c.key)?;
        }
        validate_branch(&self.success, caps)?;
        validate_branch(&self.failure, caps)
    }
}

/// What one write op touches, for conflict detection within a branch. List writes have no
/// touch: several of them on one list apply in op order.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Touch<'a> {
    Key(&'a [u8]),
    Member(&'a [u8], u8, &'a [u8]),
}

fn validate_branch(ops: &[TxnOp], caps: &Capabilities) -> Result<()> {
    let mut touched: Vec<(Touch<'_>, &[u8])> = Vec::new();
    // Keys of the lists written, checked only against deleted prefixes.
    let mut lists: Vec<&[u8]> = Vec::new();
    let mut deleted_prefixes: Vec<&[u8]> = Vec::new();
    for op in ops {
        match op {
            TxnOp::Get { key } => validate_key(key)?,
            TxnOp::Put { key, value, .. } => {
                validate_key(key)?;
                caps.validate_value(value)?;
                touched.push((Touch::Key(key), key));
            }
            TxnOp::Delete { key } => {
                validate_key(key)?;
                touched.push((Touch::Key(key), key));
            }
            TxnOp::DeletePrefix { prefix } => {
                validate_prefix(prefix, false)?;
                deleted_prefixes.push(prefix);
            }
            TxnOp::Collection(c) => {
                c.validate(caps)?;
                if let CollectionOp::ListRotateGet { key, .. } = c {
                    // Its map is read as the list's head names it before the branch runs.
                    let written = lists.contains(&key.as_slice())
                        || touched.iter().any(|(_, k)| *k == key.as_slice())
                        || deleted_prefixes.iter().any(|p| key.starts_with(p));
                    if written {
                        return Err(Error::new(
                            ErrorKind::TxnConflict,
                            "a transaction branch rotates and reads a list an earlier op writes",
                        )
                        .with_context("key", crate::raw::escape_bytes(key)));
                    }
                }
                if c.is_write() {
                    let key = c.key();
                    match c.member() {
                        Some((kind, member)) => {
                            touched.push((Touch::Member(key, kind, member), key))
                        }
                        None => lists.push(key),
                    }
                }
            }
        }
    }
    touched.sort();
    for pair in touched.windows(2) {
        if pair[0].0 == pair[1].0 {
            return Err(Error::new(
                ErrorKind::TxnConflict,
                "a transaction branch writes the same key twice",
            )
            .with_context("key", crate::raw::escape_bytes(pair[0].1)));
        }
    }
    for (i, prefix) in deleted_prefixes.iter().enumerate() {
        let written = touched
            .iter()
            .map(|(_, key)| *key)
            .chain(lists.iter().copied());
        for key in written {
            if key.starts_with(prefix) {
                return Err(Error::new(
                    ErrorKind::TxnConflict,
                    "a transaction branch writes a key inside a prefix it deletes",
                )
                .with_context("key", crate::raw::escape_bytes(key))
                .with_context("prefix", crate::raw::escape_bytes(prefix)));
            }
        }
        for other in &deleted_prefixes[i + 1..] {
            if other.starts_with(prefix) || prefix.starts_with(other) {
                return Err(Error::new(
                    ErrorKind::TxnConflict,
                    "a transaction branch deletes overlapping prefixes",
                )
                .with_context("prefix", crate::raw::escape_bytes(other)));
            }
        }
    }
    Ok(())
}

/// The outcome of a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnResponse {
    /// Whether every compare held (the success branch ran).
    pub succeeded: bool,
    /// The store revision after the transaction (unchanged when it wrote nothing).
    pub revision: i64,
    /// One result per op of the branch that ran.
    pub results: Vec<OpResult>,
}

/// The error of a provided single-call method whose transaction answered with the wrong
/// result.
pub(crate) fn unexpected(op: &str, got: Option<OpResult>) -> Error {
    Error::internal(format!("{op}: unexpected transaction result {got:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capabilities::{Retention, Support};
    use std::time::Duration;

    fn caps() -> Capabilities {
        Capabilities {
            backend: "test",
            max_txn_ops: 128,
            max_value_bytes: 1 << 20,
            max_key_bytes: crate::raw::MAX_KEY_LEN,
            ttl_granularity: Duration::from_millis(1),
            history_retention: Retention::Revisions(1000),
            txn: Support::Native,
            leases: Support::Native,
            watch: Support::Native,
            collections: Support::Native,
            persistent: false,
            foreign_writes: crate::ForeignWrites::Immediate,
            sharding: crate::Sharding::Unsharded,
        }
    }

    fn push(key: &str, value: &str) -> TxnOp {
        TxnOp::Collection(CollectionOp::ListPush {
            key: key.as_bytes().to_vec(),
            value: value.as_bytes().to_vec(),
        })
    }

    fn conflict(ops: Vec<TxnOp>) -> bool {
        let err = Txn::new().and_then(ops).validate(&caps());
        matches!(err, Err(e) if e.kind() == ErrorKind::TxnConflict)
    }

    #[test]
    fn several_writes_on_one_list_are_allowed() {
        let rotate = TxnOp::Collection(CollectionOp::ListRotate { key: b"q".to_vec() });
        let ops = vec![push("q", "a"), push("q", "a"), rotate, push("q", "b")];
        Txn::new().and_then(ops).validate(&caps()).unwrap();
    }

    #[test]
    fn list_writes_inside_a_deleted_prefix_and_twice_written_keys_conflict() {
        assert!(conflict(vec![TxnOp::delete_prefix("q"), push("q/1", "a")]));
        assert!(conflict(vec![push("q/1", "a"), TxnOp::delete_prefix("q/")]));
        assert!(conflict(vec![TxnOp::put("k", "1"), TxnOp::put("k", "2")]));
        let add = || {
            TxnOp::Collection(CollectionOp::SetAdd {
                key: b"s".to_vec(),
                member: b"m".to_vec(),
            })
        };
        assert!(conflict(vec![add(), add()]));
    }
}
