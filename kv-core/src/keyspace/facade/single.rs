//! Single-key operations of [`TypedStore`]: get, put, delete, exists.

use super::{TypedStore, ValueOf, Versioned, decode_value, encode_value, key_bytes, prefix_bytes};
use crate::entry::LeaseId;
use crate::error::Result;
use crate::keyspace::key::{Key, PlainKey, Prefix};
use crate::range::{KeyRange, RangeOptions};
use crate::store::PutOptions;
use crate::store::{DeletePrefixResult, DeleteResult};

impl TypedStore {
    /// The value of `key`, decoded by its codec; `None` when the key does not exist.
    ///
    /// # Errors
    /// `Codec` when the stored bytes do not decode; backend errors.
    pub async fn get<K: PlainKey>(&self, key: &K) -> Result<Option<ValueOf<K>>>
    where
        K::Value: Default,
    {
        self.get_with(&K::Value::default(), key).await
    }

    /// [`get`](Self::get) with an explicit codec (for codecs with state, such as
    /// `Encrypted` (feature `encryption`)).
    ///
    /// # Errors
    /// As [`get`](Self::get).
    pub async fn get_with<K: PlainKey>(
        &self,
        codec: &K::Value,
        key: &K,
    ) -> Result<Option<ValueOf<K>>> {
        match self.store.get(&key_bytes(key)).await? {
            Some(entry) => Ok(Some(decode_value(codec, &entry)?)),
            None => Ok(None),
        }
    }

    /// The value of `key` with its revisions, version and lease.
    ///
    /// # Errors
    /// As [`get`](Self::get).
    pub async fn get_versioned<K: PlainKey>(&self, key: &K) -> Result<Option<Versioned<ValueOf<K>>>>
    where
        K::Value: Default,
    {
        self.get_versioned_with(&K::Value::default(), key).await
    }

    /// [`get_versioned`](Self::get_versioned) with an explicit codec.
    ///
    /// # Errors
    /// As [`get`](Self::get).
    pub async fn get_versioned_with<K: PlainKey>(
        &self,
        codec: &K::Value,
        key: &K,
    ) -> Result<Option<Versioned<ValueOf<K>>>> {
        match self.store.get(&key_bytes(key)).await? {
            Some(entry) => Ok(Some(Versioned::decode(codec, &entry)?)),
            None => Ok(None),
        }
    }

    /// Writes `value` under `key`; returns the revision of the write.
    ///
    /// # Errors
    /// `Codec` when the value does not encode (nothing is written); `InvalidValue` when the
    /// backend refuses its size; backend errors.
    pub async fn put<K: PlainKey>(&self, key: &K, value: &ValueOf<K>) -> Result<i64>
    where
        K::Value: Default,
    {
        self.put_with(&K::Value::default(), key, value).await
    }

    /// [`put`](Self::put) with an explicit codec.
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub async fn put_with<K: PlainKey>(
        &self,
        codec: &K::Value,
        key: &K,
        value: &ValueOf<K>,
    ) -> Result<i64> {
        self.put_inner(codec, key, value, PutOptions::default())
            .await
    }

    /// Writes `value` under `key`, attached to `lease`: the key is deleted when the lease
    /// expires or is revoked.
    ///
    /// # Errors
    /// As [`put`](Self::put), and `LeaseNotFound` for a lease that is not alive.
    pub async fn put_leased<K: PlainKey>(
        &self,
        key: &K,
        value: &ValueOf<K>,
        lease: LeaseId,
    ) -> Result<i64>
    where
        K::Value: Default,
    {
        let opts = PutOptions::default().lease(lease);
        self.put_inner(&K::Value::default(), key, value, opts).await
    }

    /// [`put_leased`](Self::put_leased) with an explicit codec.
    ///
    /// # Errors
    /// As [`put_leased`](Self::put_leased).
    pub async fn put_leased_with<K: PlainKey>(
        &self,
        codec: &K::Value,
        key: &K,
        value: &ValueOf<K>,
        lease: LeaseId,
    ) -> Result<i64> {
        let opts = PutOptions::default().lease(lease);
        self.put_inner(codec, key, value, opts).await
    }

    async fn put_inner<K: Key>(
        &self,
        codec: &K::Value,
        key: &K,
        value: &ValueOf<K>,
        opts: PutOptions,
    ) -> Result<i64> {
        let key = key_bytes(key);
        let bytes = encode_value(codec, &key, value)?;
        Ok(self.store.put(&key, &bytes, opts).await?.revision)
    }

    /// Deletes `key` (and any collection stored at it); returns the write's revision and
    /// whether the key existed ([`DeleteResult::existed`]).
    ///
    /// # Errors
    /// Backend errors.
    pub async fn delete<K: Key>(&self, key: &K) -> Result<DeleteResult> {
        self.store.delete(&key_bytes(key)).await
    }

    /// Whether `key` exists; reads no value.
    ///
    /// # Errors
    /// Backend errors.
    pub async fn exists<K: PlainKey>(&self, key: &K) -> Result<bool> {
        let opts = RangeOptions::new(KeyRange::Key(key_bytes(key)))
            .keys_only()
            .count_only();
        Ok(self.store.range(opts).await?.count > 0)
    }

    /// Deletes every key (and collection) in the directory `prefix`; returns the write's
    /// revision and how many keys went.
    /// Keys of a sibling directory sharing the same leading characters (`tenants/10/` for
    /// `tenants/1/`) are untouched: a prefix ends with its separator.
    ///
    /// # Errors
    /// `InvalidKey` for a prefix whose encoding does not end with its separator (it would
    /// reach into sibling directories; nothing is deleted); backend errors.
    pub async fn delete_prefix<P: Prefix>(&self, prefix: &P) -> Result<DeletePrefixResult> {
        self.store.delete_prefix(&prefix_bytes(prefix)?).await
    }
}
