//! [`TypedTxn`]: a transaction built from typed keys and values.

use super::{TypedStore, ValueOf, Versioned, encode_value, key_bytes, prefix_bytes};
use crate::LeaseId;
use crate::Store;
use crate::keyspace::codec::{BuildCodec, Codec, CodecContext};
use crate::keyspace::key::{Key, PlainKey, Prefix};
use crate::{Compare, CompareOp, OpResult, Txn, TxnOp};
use crate::{Error, Result};
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

/// Which branch of a transaction an op belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Branch {
    Success,
    Failure,
}

/// A transaction over typed keys: compares, then the success ops or, when a compare fails,
/// the failure ops, atomically.
///
/// Built with [`TypedStore::txn`]; each method records a compare or an op and returns the
/// builder. Values are encoded as they are added; the first encoding failure is kept and
/// returned by [`commit`](Self::commit), which then sends nothing: a transaction is written
/// whole or not at all.
///
/// [`create`](Self::create) is a put that only happens if the key is absent: it adds the
/// compare "key absent", so the whole transaction fails (runs its failure branch) when the
/// key exists.
///
/// ```
/// use keyplane_core::keyspace::{Key, Text, TypedStore};
///
/// #[derive(Key, Debug, Clone, PartialEq)]
/// #[kv(template = "/Cronix/lock/{job}", value = Text)]
/// struct JobLockKey { job: u64 }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
/// let lock = JobLockKey { job: 1 };
///
/// let mut txn = typed.txn();
/// txn.create(&lock, &"node-a".to_string());
/// assert!(txn.commit().await?.succeeded);
///
/// // A second create fails; the failure branch reads the holder.
/// let mut txn = typed.txn();
/// txn.create(&lock, &"node-b".to_string());
/// let holder = txn.get_on_failure(&lock);
/// let outcome = txn.commit().await?;
/// assert!(!outcome.succeeded);
/// assert_eq!(outcome.read(&holder)?.map(|v| v.value).as_deref(), Some("node-a"));
/// # Ok(())
/// # }
/// ```
pub struct TypedTxn {
    store: Arc<dyn Store>,
    context: CodecContext,
    txn: Txn,
    error: Option<Error>,
    /// The branch that writes and reads go to: the success branch until
    /// [`or_else`](TypedTxn::or_else).
    writing: Branch,
}

/// A read recorded in a [`TypedTxn`], redeemed with [`TxnOutcome::read`]; it holds the
/// key's codec.
pub struct TxnRead<K: Key> {
    branch: Branch,
    index: usize,
    codec: Result<K::Value>,
    key: PhantomData<fn() -> K>,
}

impl<K: Key> fmt::Debug for TxnRead<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TxnRead")
            .field("branch", &self.branch)
            .field("index", &self.index)
            .finish()
    }
}

/// The outcome of a committed [`TypedTxn`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnOutcome {
    /// Whether every compare held, so the success branch ran.
    pub succeeded: bool,
    /// The store revision after the transaction.
    pub revision: i64,
    results: Vec<OpResult>,
}

impl TypedStore {
    /// A new, empty typed transaction on this store.
    pub fn txn(&self) -> TypedTxn {
        TypedTxn {
            store: Arc::clone(&self.store),
            context: self.context.clone(),
            txn: Txn::new(),
            error: None,
            writing: Branch::Success,
        }
    }
}

impl TypedTxn {
    /// Encodes `value` with `codec` (an error when the codec could not be built); on
    /// failure keeps the error for [`commit`](Self::commit) and returns `None`.
    pub(super) fn encode<C: Codec>(
        &mut self,
        codec: Result<&C>,
        key: &[u8],
        value: &C::Value,
    ) -> Option<Vec<u8>> {
        if self.error.is_some() {
            return None;
        }
        match codec.and_then(|codec| encode_value(codec, key, value)) {
            Ok(bytes) => Some(bytes),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    /// Encodes `value` with the codec of `K`, built from the typed store's codec state,
    /// once it agrees with `typed` ([`Key::check_value`]).
    fn encode_key<K: Key>(&mut self, typed: &K, key: &[u8], value: &ValueOf<K>) -> Option<Vec<u8>> {
        if let Err(e) = super::agreeing(typed, value) {
            self.fail(e);
            return None;
        }
        let codec = K::Value::build(&self.context);
        self.encode(codec.as_ref().map_err(Error::clone), key, value)
    }

    /// `codec`, after keeping its error (if it could not be built) for
    /// [`commit`](Self::commit): a transaction whose reads could not be decoded is not sent.
    pub(super) fn checked<C>(&mut self, codec: Result<C>) -> Result<C> {
        if let Err(e) = &codec {
            self.fail(e.clone());
        }
        codec
    }

    /// The bytes of `key`, about to be written; `None` (the error kept for
    /// [`commit`](Self::commit)) for a key of a read-only template.
    fn writable<K: Key>(&mut self, key: &K) -> Option<Vec<u8>> {
        match super::writable_key(key) {
            Ok(bytes) => Some(bytes),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    /// Whether a collection write may go in: `check` is the handle's
    /// [`writable`](super::collections::At::writable); its error is kept for
    /// [`commit`](Self::commit).
    pub(super) fn allowed(&mut self, check: Result<()>) -> bool {
        match check {
            Ok(()) => true,
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    /// Keeps the first error; [`commit`](Self::commit) returns it and sends nothing.
    fn fail(&mut self, error: Error) {
        self.error.get_or_insert(error);
    }

    /// From here on, writes and plain reads go to the failure branch: the ops that run
    /// instead of the success branch when a compare does not hold. Compares added later still
    /// apply to the whole transaction.
    ///
    /// ```
    /// use keyplane_core::keyspace::{Key, Text, TypedStore};
    ///
    /// #[derive(Key, Debug, Clone, PartialEq)]
    /// #[kv(template = "jobs/{job}/owner", value = Text)]
    /// struct Owner { job: u64 }
    /// #[derive(Key, Debug, Clone, PartialEq)]
    /// #[kv(template = "jobs/{job}/contended", value = Text)]
    /// struct Contended { job: u64 }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> keyplane_core::Result<()> {
    /// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
    /// let claim = |worker: &str| {
    ///     let mut txn = typed.txn();
    ///     txn.create(&Owner { job: 7 }, &worker.to_string())
    ///         .or_else()
    ///         .put(&Contended { job: 7 }, &worker.to_string());
    ///     txn
    /// };
    /// assert!(claim("w1").commit().await?.succeeded);
    /// assert!(!claim("w2").commit().await?.succeeded);
    /// let loser = typed.get(&Contended { job: 7 }).await?;
    /// assert_eq!(loser.as_deref(), Some("w2"));
    /// # Ok(()) }
    /// ```
    pub fn or_else(&mut self) -> &mut Self {
        self.writing = Branch::Failure;
        self
    }

    /// The branch writes go to now.
    pub(super) fn writing(&self) -> Branch {
        self.writing
    }

    /// Adds a compare.
    pub(super) fn push_compare(&mut self, compare: Compare) {
        self.txn.compares.push(compare);
    }

    pub(super) fn push(&mut self, branch: Branch, op: TxnOp) -> usize {
        let ops = match branch {
            Branch::Success => &mut self.txn.success,
            Branch::Failure => &mut self.txn.failure,
        };
        ops.push(op);
        ops.len() - 1
    }

    /// Puts `value` under `key` only if the key is absent: adds the compare "`key` absent"
    /// and the put to the success branch.
    pub fn create<K: PlainKey>(&mut self, key: &K, value: &ValueOf<K>) -> &mut Self {
        let typed = key;
        let Some(key) = self.writable(key) else {
            return self;
        };
        if let Some(bytes) = self.encode_key::<K>(typed, &key, value) {
            self.txn.compares.push(Compare::absent(&key));
            self.push(self.writing, TxnOp::put(key, bytes));
        }
        self
    }

    /// Puts `value` under `key` in the success branch.
    pub fn put<K: PlainKey>(&mut self, key: &K, value: &ValueOf<K>) -> &mut Self {
        let typed = key;
        let Some(key) = self.writable(key) else {
            return self;
        };
        if let Some(bytes) = self.encode_key::<K>(typed, &key, value) {
            self.push(self.writing, TxnOp::put(key, bytes));
        }
        self
    }

    /// Puts `value` under `key`, attached to `lease`, in the success branch.
    pub fn put_leased<K: PlainKey>(
        &mut self,
        key: &K,
        value: &ValueOf<K>,
        lease: LeaseId,
    ) -> &mut Self {
        let typed = key;
        let Some(key) = self.writable(key) else {
            return self;
        };
        if let Some(bytes) = self.encode_key::<K>(typed, &key, value) {
            self.push(self.writing, TxnOp::put_with_lease(key, bytes, lease));
        }
        self
    }

    /// Deletes `key` in the success branch.
    pub fn delete<K: Key>(&mut self, key: &K) -> &mut Self {
        if let Some(key) = self.writable(key) {
            self.push(self.writing, TxnOp::delete(key));
        }
        self
    }

    /// Deletes the directory `prefix` in the success branch.
    pub fn delete_prefix<P: Prefix>(&mut self, prefix: &P) -> &mut Self {
        match prefix_bytes(prefix)
            .and_then(|bytes| super::writable(P::template(), &bytes).map(|()| bytes))
        {
            Ok(prefix) => {
                self.push(self.writing, TxnOp::delete_prefix(prefix));
            }
            Err(e) => self.fail(e),
        }
        self
    }

    /// Reads `key` in the success branch; redeem with [`TxnOutcome::read`].
    pub fn get<K: PlainKey>(&mut self, key: &K) -> TxnRead<K> {
        self.read(self.writing, key)
    }

    /// Reads `key` in the failure branch (to learn why a compare failed); redeem with
    /// [`TxnOutcome::read`].
    pub fn get_on_failure<K: PlainKey>(&mut self, key: &K) -> TxnRead<K> {
        self.read(Branch::Failure, key)
    }

    fn read<K: Key>(&mut self, branch: Branch, key: &K) -> TxnRead<K> {
        let codec = K::Value::build(&self.context);
        let codec = self.checked(codec);
        let index = self.push(branch, TxnOp::get(key_bytes(key)));
        TxnRead {
            branch,
            index,
            codec,
            key: PhantomData,
        }
    }

    /// Requires a raw compare to hold, such as the
    /// [`fence`](crate::recipes::LeaseHeld::fence) of a lock guard or a leadership: the
    /// transaction then writes only while its caller still holds the lock or leads.
    pub fn when(&mut self, compare: Compare) -> &mut Self {
        self.txn.compares.push(compare);
        self
    }

    /// Requires `key` to exist.
    pub fn when_exists<K: PlainKey>(&mut self, key: &K) -> &mut Self {
        self.txn.compares.push(Compare::exists(key_bytes(key)));
        self
    }

    /// Requires `key` to be absent.
    pub fn when_absent<K: PlainKey>(&mut self, key: &K) -> &mut Self {
        self.txn.compares.push(Compare::absent(key_bytes(key)));
        self
    }

    /// Requires `key`'s mod revision to be `op` `revision` (0 stands for an absent key):
    /// with [`CompareOp::Equal`] and the [`Versioned::mod_revision`] read earlier, an
    /// optimistic update that fails if anyone wrote the key since.
    pub fn when_mod_revision<K: PlainKey>(
        &mut self,
        key: &K,
        op: CompareOp,
        revision: i64,
    ) -> &mut Self {
        let compare = Compare::mod_revision(key_bytes(key), op, revision);
        self.txn.compares.push(compare);
        self
    }

    /// Requires `key`'s version (writes since creation) to be `op` `version`.
    pub fn when_version<K: PlainKey>(&mut self, key: &K, op: CompareOp, version: i64) -> &mut Self {
        let compare = Compare::version(key_bytes(key), op, version);
        self.txn.compares.push(compare);
        self
    }

    /// Requires `key` to exist and hold exactly the encoding of `value`.
    ///
    /// The compare is on bytes: it suits codecs whose encoding is deterministic ([`Text`],
    /// [`Json`] of structs), not `Encrypted` (a fresh nonce per encoding).
    ///
    /// [`Text`]: crate::keyspace::Text
    /// [`Json`]: crate::keyspace::Json
    pub fn when_value_equals<K: PlainKey>(&mut self, key: &K, value: &ValueOf<K>) -> &mut Self {
        let typed = key;
        let key = key_bytes(key);
        if let Some(bytes) = self.encode_key::<K>(typed, &key, value) {
            self.txn
                .compares
                .push(Compare::value(key, CompareOp::Equal, bytes));
        }
        self
    }

    /// Sends the transaction and leaves the builder empty, so that a chain ends with it:
    ///
    /// ```
    /// use keyplane_core::keyspace::{Key, Text, TypedStore};
    ///
    /// #[derive(Key, Debug, Clone, PartialEq)]
    /// #[kv(template = "cfg/{id}", value = Text)]
    /// struct CfgKey { id: u64 }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> keyplane_core::Result<()> {
    /// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
    /// let (a, b) = (CfgKey { id: 1 }, CfgKey { id: 2 });
    /// typed.txn().create(&a, &"1".to_string()).put(&b, &"2".to_string()).commit().await?;
    /// assert!(typed.exists(&b).await?);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// The first error recorded by the builder, such as a value that does not encode, a codec
    /// that could not be built (`Config`) or a prefix without its trailing separator (nothing
    /// is sent);
    /// `TxnConflict` when a branch writes one key twice; `TxnTooLarge` over the backend's
    /// limit; backend errors.
    pub async fn commit(&mut self) -> Result<TxnOutcome> {
        if let Some(error) = self.error.take() {
            return Err(error);
        }
        let txn = std::mem::take(&mut self.txn);
        let response = self.store.txn(txn).await?;
        Ok(TxnOutcome {
            succeeded: response.succeeded,
            revision: response.revision,
            results: response.results,
        })
    }
}

impl fmt::Debug for TypedTxn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedTxn")
            .field("compares", &self.txn.compares.len())
            .field("success", &self.txn.success.len())
            .field("failure", &self.txn.failure.len())
            .field("error", &self.error)
            .finish()
    }
}

impl TxnOutcome {
    /// The entry read by `read`, decoded; `None` when the key was absent.
    ///
    /// # Errors
    /// `InvalidArgument` when `read` belongs to the branch that did not run; `Codec` when
    /// the value does not decode.
    pub fn read<K: Key>(&self, read: &TxnRead<K>) -> Result<Option<Versioned<ValueOf<K>>>> {
        let codec = read.codec.as_ref().map_err(Error::clone)?;
        let ran = if self.succeeded {
            Branch::Success
        } else {
            Branch::Failure
        };
        if read.branch != ran {
            return Err(Error::invalid_argument(
                "this read belongs to the transaction branch that did not run",
            ));
        }
        match self.results.get(read.index) {
            Some(OpResult::Get(Some(entry))) => Ok(Some(Versioned::decode(codec, entry)?)),
            Some(OpResult::Get(None)) => Ok(None),
            other => Err(Error::internal(format!(
                "expected a read result at position {}, found {other:?}",
                read.index
            ))),
        }
    }

    /// The raw result of every op of the branch that ran, in order.
    pub fn results(&self) -> &[OpResult] {
        &self.results
    }
}
