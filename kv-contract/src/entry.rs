//! [`Entry`]: one stored key with its value and metadata.

use crate::lease::LeaseId;

/// One key with its value and metadata, as etcd reports it.
///
/// `create_revision` is the revision of the write that created the key (since its last
/// deletion), `mod_revision` that of its last write, `version` the number of writes since its
/// creation (1 after the first put). A key that does not exist has all three at zero.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Entry {
    /// The key's bytes.
    pub key: Vec<u8>,
    /// The value's bytes (empty when the read asked for keys only).
    pub value: Vec<u8>,
    /// Revision of the write that created the key.
    pub create_revision: i64,
    /// Revision of the key's last write.
    pub mod_revision: i64,
    /// Number of writes since creation.
    pub version: i64,
    /// The lease the key is attached to, if any.
    pub lease: Option<LeaseId>,
}
