//! Single-key operations of [`TypedStore`]: get, put, delete, exists.

use super::{
    TypedStore, ValueOf, Versioned, agreeing, decode_value, encode_value, key_bytes, prefix_bytes,
    writable_key,
};
use crate::LeaseId;
use crate::PutOptions;
use crate::Result;
use crate::keyspace::key::{Key, PlainKey, Prefix};
use crate::{DeletePrefixResult, DeleteResult};
use crate::{KeyRange, RangeOptions};

impl TypedStore {
    /// The value of `key`, decoded by its codec; `None` when the key does not exist.
    ///
    /// # Errors
    /// `Codec` when the stored bytes do not decode; `Config` when the key's codec needs
    /// state this typed store was not given ([`with_codec_state`](Self::with_codec_state));
    /// backend errors.
    pub async fn get<K: PlainKey>(&self, key: &K) -> Result<Option<ValueOf<K>>> {
        let codec = self.codec::<K>()?;
        match self.store.get(&key_bytes(key)).await? {
            Some(entry) => Ok(Some(decode_value(&codec, &entry)?)),
            None => Ok(None),
        }
    }

    /// The value of `key` with its revisions, version and lease.
    ///
    /// # Errors
    /// As [`get`](Self::get).
    pub async fn get_versioned<K: PlainKey>(
        &self,
        key: &K,
    ) -> Result<Option<Versioned<ValueOf<K>>>> {
        let codec = self.codec::<K>()?;
        match self.store.get(&key_bytes(key)).await? {
            Some(entry) => Ok(Some(Versioned::decode(&codec, &entry)?)),
            None => Ok(None),
        }
    }

    /// Writes `value` under `key`; returns the revision of the write.
    ///
    /// # Errors
    /// `Codec` when the value does not encode and `Config` when the key's codec cannot be
    /// built (nothing is written in either case); `InvalidValue` when the backend refuses
    /// its size; backend errors.
    pub async fn put<K: PlainKey>(&self, key: &K, value: &ValueOf<K>) -> Result<i64> {
        self.put_inner(key, value, PutOptions::default()).await
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
    ) -> Result<i64> {
        self.put_inner(key, value, PutOptions::default().lease(lease))
            .await
    }

    async fn put_inner<K: Key>(
        &self,
        key: &K,
        value: &ValueOf<K>,
        opts: PutOptions,
    ) -> Result<i64> {
        let codec = self.codec::<K>()?;
        let bytes = writable_key(key)?;
        agreeing(key, value)?;
        let key = bytes;
        let bytes = encode_value(&codec, &key, value)?;
        Ok(self.store.put(&key, &bytes, opts).await?.revision)
    }

    /// Deletes `key` (and any collection stored at it); returns the write's revision and
    /// whether the key existed ([`DeleteResult::existed`]).
    ///
    /// # Errors
    /// Backend errors.
    pub async fn delete<K: Key>(&self, key: &K) -> Result<DeleteResult> {
        self.store.delete(&writable_key(key)?).await
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
        let bytes = prefix_bytes(prefix)?;
        super::writable(P::template(), &bytes)?;
        self.store.delete_prefix(&bytes).await
    }
}
