//! [`Continuation`], where the next page of a paged read starts, and [`GroupRevisions`], the
//! revisions of a store sharded into groups: the vocabulary that ranges, collection scans and
//! watches share.

use std::collections::BTreeMap;

/// Revisions by co-location group (hash tag), on a store sharded into groups
/// ([`Sharding::HashTagGroups`](crate::Sharding::HashTagGroups)), where each group counts its
/// own revisions.
pub type GroupRevisions = BTreeMap<Vec<u8>, i64>;

/// Where the next page of a paged range starts, and the revision the range is read at.
/// Opaque: pass it back through [`RangeOptions::after`](crate::RangeOptions::after). Every
/// page of a paged range is read at the revision of its first page, so the pages together
/// are one consistent view.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Continuation {
    pub(crate) key: Vec<u8>,
    pub(crate) revision: Option<i64>,
    pub(crate) groups: Option<GroupRevisions>,
}

impl Continuation {
    /// The continuation that resumes just after `last_key` (the last key of a page), at
    /// whatever revision the next read names.
    pub fn after_key(last_key: &[u8]) -> Self {
        let mut key = last_key.to_vec();
        key.push(0);
        Continuation {
            key,
            revision: None,
            groups: None,
        }
    }

    /// The continuation that resumes at `start`, inclusive: the first key the next page may
    /// contain. A set scan keeps its position here: the next member on ordered backends,
    /// the server's `SSCAN` cursor on Redis.
    pub fn starting_at(start: impl Into<Vec<u8>>) -> Self {
        Continuation {
            key: start.into(),
            revision: None,
            groups: None,
        }
    }

    /// The same continuation, pinned to `revision`: the next page is read there.
    pub fn at_revision(mut self, revision: i64) -> Self {
        self.revision = Some(revision);
        self
    }

    /// The same continuation, for a range spanning co-location groups: the next page reads
    /// each of these groups at its revision here (and no group not named).
    pub fn at_group_revisions(mut self, groups: GroupRevisions) -> Self {
        self.groups = Some(groups);
        self
    }

    /// For a range spanning co-location groups, the revision each group is read at.
    pub fn group_revisions(&self) -> Option<&GroupRevisions> {
        self.groups.as_ref()
    }

    /// The first key the next page may contain.
    pub fn start_key(&self) -> &[u8] {
        &self.key
    }

    /// The same continuation from `key` instead (its revision and group revisions kept): for
    /// a layer that rewrites keys, as a namespace does.
    pub fn with_start_key(mut self, key: Vec<u8>) -> Self {
        self.key = key;
        self
    }

    /// The revision the next page is read at, when pinned.
    pub fn revision(&self) -> Option<i64> {
        self.revision
    }
}
