//! Least privilege: the key ranges an etcd role needs for a store confined to one prefix.

use crate::config::EtcdConfig;
use keyplane_contract::CollectionKind;
use keyplane_contract::raw::layout::kind_prefix;

/// What a [`RolePermission`] allows on its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// Reads only (etcd's `read`).
    Read,
    /// Reads and writes (etcd's `readwrite`).
    ReadWrite,
}

/// One key range an etcd role grants, as `etcdctl role grant-permission ROLE read|readwrite
/// KEY RANGE_END` (or etcd-client's `Permission`) takes it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RolePermission {
    /// What the role may do on the range.
    pub access: Access,
    /// The first key of the range.
    pub key: Vec<u8>,
    /// The end of the range (exclusive); empty for the single key `key`; `[0]` for every key
    /// from `key` on.
    pub range_end: Vec<u8>,
}

impl EtcdConfig {
    /// The permissions an etcd role needs so that a store of this configuration works on
    /// every key under `prefix`, and nothing more: read and write of the prefix, of the
    /// emulated sets, maps and lists under it (their members live under `\0` and a kind tag:
    /// `\0s`, `\0m`, `\0l` followed by the key), and read of the one reserved key `\0` whose
    /// count-only read gives the store's revision. With a `namespace`, every range lies
    /// under it. Leases, watches and compaction need no more.
    ///
    /// Outside those ranges every operation fails with
    /// [`ErrorKind::PermissionDenied`](keyplane_contract::ErrorKind::PermissionDenied), and
    /// nothing is written: etcd checks a transaction's every key before applying it.
    ///
    /// ```
    /// use keyplane_etcd::{Access, EtcdConfig};
    /// let perms = EtcdConfig::new(["127.0.0.1:2379"]).role_permissions(b"jxt/");
    /// assert_eq!(perms[0].access, Access::ReadWrite);
    /// assert_eq!((perms[0].key.as_slice(), perms[0].range_end.as_slice()), (&b"jxt/"[..], &b"jxt0"[..]));
    /// assert_eq!(perms[1].key, b"\0sjxt/");
    /// assert_eq!((perms[4].access, perms[4].key.as_slice()), (Access::Read, &b"\0"[..]));
    /// ```
    pub fn role_permissions(&self, prefix: &[u8]) -> Vec<RolePermission> {
        let root = self.namespace.as_deref().unwrap_or("").as_bytes();
        let physical = |key: &[u8]| [root, key].concat();
        let whole = |start: Vec<u8>| {
            let range_end = keyplane_contract::raw::prefix_end(&start).unwrap_or_else(|| vec![0]);
            RolePermission {
                access: Access::ReadWrite,
                key: start,
                range_end,
            }
        };
        let mut perms = vec![whole(physical(prefix))];
        perms.extend(
            CollectionKind::ALL
                .iter()
                .map(|kind| whole(physical(&kind_prefix(*kind, prefix)))),
        );
        perms.push(RolePermission {
            access: Access::Read,
            key: physical(&[0]),
            range_end: Vec::new(),
        });
        perms
    }
}
