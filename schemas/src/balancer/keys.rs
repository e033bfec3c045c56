//! Typed keys of the balancer's cache (§3 of the document), the document's exact bytes, and
//! the keyspace enum [`BalancerKeyspace`].

use keyplane_core::keyspace::{Key, Keyspace, SegmentCodec, Text};

/// `key:{id}`: the API key object, a Redis HASH (`api_key`, `status`).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "key:{id}", hash = Text)]
pub struct KeyObjectKey {
    /// The API key's id.
    pub id: u64,
}

/// `group:{id}:keys:active`: the forward index, a Redis LIST of the ids of the
/// group's active keys, rotated round-robin.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "group:{id}:keys:active", list = SegmentCodec<u64>)]
pub struct ActiveKeysKey {
    /// The group's id.
    pub id: u64,
}

/// `key:{id}:groups`: the reverse index, a Redis SET of the ids of the groups the
/// key belongs to.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "key:{id}:groups", set = SegmentCodec<u64>)]
pub struct KeyGroupsKey {
    /// The API key's id.
    pub id: u64,
}

/// Every key of the balancer.
///
/// The document's layout nests the reverse index `key:{id}:groups` under the key object
/// `key:{id}`: the object's key is also the directory of its reverse index. That is the
/// document's design and is declared with `allow_dir(Object, Groups)`.
#[derive(Keyspace, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(naming = "[a-z]", allow_dir(Object, Groups))]
pub enum BalancerKeyspace {
    /// `key:{id}` (HASH)
    Object(KeyObjectKey),
    /// `group:{id}:keys:active` (LIST)
    Active(ActiveKeysKey),
    /// `key:{id}:groups` (SET)
    Groups(KeyGroupsKey),
}
