//! The namespace root every operation is confined to, and the conversion of etcd's key-values.

use etcd_client::KeyValue;
use kv_core::{Entry, LeaseId, prefix_end};

/// A root prepended to every key sent to etcd and stripped from every key received.
///
/// The empty root confines nothing. Because user keys and ranges are validated before they are
/// prefixed, a namespaced store can neither name nor range over a key outside its root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Namespace(Vec<u8>);

impl Namespace {
    pub(crate) fn new(root: impl Into<Vec<u8>>) -> Self {
        Namespace(root.into())
    }

    /// The physical key of `key`.
    pub(crate) fn key(&self, key: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.0.len() + key.len());
        out.extend_from_slice(&self.0);
        out.extend_from_slice(key);
        out
    }

    /// The physical `(key, range_end)` of `[start, end)`; `end: None` is the end of the root
    /// (etcd's `"\0"`, meaning "to the end of the keyspace", when there is no root).
    pub(crate) fn range(&self, start: &[u8], end: Option<&[u8]>) -> (Vec<u8>, Vec<u8>) {
        let end = match end {
            Some(end) => self.key(end),
            None => prefix_end(&self.0).unwrap_or_else(|| vec![0]),
        };
        (self.key(start), end)
    }

    /// The physical `(key, range_end)` of every key starting with `prefix`.
    pub(crate) fn prefix(&self, prefix: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let start = self.key(prefix);
        let end = prefix_end(&start).unwrap_or_else(|| vec![0]);
        (start, end)
    }

    /// The key as the caller knows it, or `None` when it lies outside the root.
    pub(crate) fn strip<'a>(&self, physical: &'a [u8]) -> Option<&'a [u8]> {
        physical.strip_prefix(self.0.as_slice())
    }

    /// Converts an etcd key-value under the root into an [`Entry`] (`None` outside the root).
    pub(crate) fn entry(&self, kv: &KeyValue) -> Option<Entry> {
        Some(Entry {
            key: self.strip(kv.key())?.to_vec(),
            value: kv.value().to_vec(),
            create_revision: kv.create_revision(),
            mod_revision: kv.mod_revision(),
            version: kv.version(),
            lease: (kv.lease() != 0).then_some(LeaseId(kv.lease())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_stay_inside_the_root() {
        let ns = Namespace::new(b"t/1/".to_vec());
        assert_eq!(
            ns.range(b"\x01", None),
            (b"t/1/\x01".to_vec(), b"t/10".to_vec())
        );
        assert_eq!(ns.prefix(b"a"), (b"t/1/a".to_vec(), b"t/1/b".to_vec()));
        assert_eq!(ns.strip(b"t/1/a"), Some(&b"a"[..]));
        assert_eq!(ns.strip(b"t/2/a"), None);
        let root = Namespace::default();
        assert_eq!(root.range(b"\x01", None), (vec![1], vec![0]));
        assert_eq!(root.prefix(b"\xff"), (vec![0xff], vec![0]));
    }
}
