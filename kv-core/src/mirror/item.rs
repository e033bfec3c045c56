//! [`Item`]: one key of a mirror's view, parsed, with its decoded value and its raw key, shared
//! by the view's hash index, its ordered set and its secondary indexes.

use super::hashed::Keyed;
use crate::keyspace::Versioned;
use std::borrow::Borrow;
use std::cmp::Ordering;
use std::sync::Arc;

/// A parsed key with its decoded value, and the raw key it is stored as (first: a lookup
/// compares it, and it then shares the allocation's first cache line with the counts).
#[repr(C)]
pub(super) struct Stored<K, V> {
    raw: RawKey,
    pub(super) key: K,
    pub(super) value: Versioned<V>,
}

/// Raw keys up to this length are held in the item itself.
pub(super) const SHORT: usize = 38;

/// A raw key: in the item when short, so that a lookup compares it without one more memory
/// access (a miss in the processor's caches, in a large mirror).
enum RawKey {
    Short(u8, [u8; SHORT]),
    Long(Box<[u8]>),
}

impl RawKey {
    fn new(raw: Vec<u8>) -> Self {
        match u8::try_from(raw.len()) {
            Ok(len) if raw.len() <= SHORT => {
                let mut bytes = [0; SHORT];
                bytes[..raw.len()].copy_from_slice(&raw);
                RawKey::Short(len, bytes)
            }
            _ => RawKey::Long(raw.into_boxed_slice()),
        }
    }

    #[inline]
    fn as_slice(&self) -> &[u8] {
        match self {
            RawKey::Short(len, bytes) => &bytes[..usize::from(*len)],
            RawKey::Long(raw) => raw,
        }
    }
}

/// A shared handle on a stored item, compared, ordered and found by its raw key.
pub(super) struct Item<K, V>(pub(super) Arc<Stored<K, V>>);

impl<K, V> Item<K, V> {
    pub(super) fn new(raw: Vec<u8>, key: K, value: Versioned<V>) -> Self {
        Item(Arc::new(Stored {
            raw: RawKey::new(raw),
            key,
            value,
        }))
    }

    /// The parsed key and the value.
    pub(super) fn pair(&self) -> (&K, &Versioned<V>) {
        (&self.0.key, &self.0.value)
    }
}

impl<K, V> Clone for Item<K, V> {
    fn clone(&self) -> Self {
        Item(Arc::clone(&self.0))
    }
}

impl<K, V> Keyed for Item<K, V> {
    #[inline]
    fn raw(&self) -> &[u8] {
        self.0.raw.as_slice()
    }
}

impl<K, V> Borrow<[u8]> for Item<K, V> {
    fn borrow(&self) -> &[u8] {
        self.0.raw.as_slice()
    }
}

impl<K, V> PartialEq for Item<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.0.raw.as_slice() == other.0.raw.as_slice()
    }
}

impl<K, V> Eq for Item<K, V> {}

impl<K, V> PartialOrd for Item<K, V> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K, V> Ord for Item<K, V> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.raw.as_slice().cmp(other.0.raw.as_slice())
    }
}
