//! Collection stamps: one reserved key per collection that every write to the collection
//! rewrites, so that a transaction can guard "this collection is unchanged since revision R"
//! with a single compare, however many members it read.
//!
//! The stamp of the collection of `kind` at `K` is `\0 tag K` (kv-core's
//! [`kind_prefix`](kv_core::raw::layout::kind_prefix) of `K`): it sorts just before the
//! members (`\0 tag K \0 ...`), is never inside another collection's members range, and lies
//! under `kind_prefix(P)` exactly when `K` starts with `P`, so prefix deletes remove it too.
//! Invariant: a collection has a stamp exactly when it has members. A transaction that leaves
//! a collection empty (its last members removed, or `delete`/`delete_prefix`) deletes the
//! stamp; one that changes it otherwise rewrites the stamp with the transaction's changes to
//! it as the value (kv-core's [`encode_changes`](kv_core::raw::encode_changes)). So the
//! stamps' history is the collections' change log: a watch with collections reads it (a
//! written stamp's changes, or `Deleted` for a deleted stamp), in the same revision order as
//! the plain keys. Deleting the stamp of an emptied collection is safe for the guards: a
//! guard on an absent stamp passes only while the collection is absent, which is the state
//! the transaction planned on. Stamps written before they recorded changes are empty; a
//! watch reports nothing for them.

use kv_core::CollectionKind;
use kv_core::raw::layout;

/// The stamp key of the collection of `kind` at `key`.
pub(crate) fn stamp_key(kind: CollectionKind, key: &[u8]) -> Vec<u8> {
    layout::kind_prefix(kind, key)
}

/// `[stamp, end)`: the stamp and every member of one collection, nothing else.
pub(crate) fn collection_span(kind: CollectionKind, key: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let start = stamp_key(kind, key);
    let mut end = start.clone();
    end.push(1);
    (start, end)
}

/// The stamp of the collection a physical member key belongs to; `None` for a key that is not
/// a member (a stamp itself, or not in the layout).
pub(crate) fn stamp_of_member(physical: &[u8]) -> Option<&[u8]> {
    if !layout::is_reserved(physical) || physical.len() < 3 {
        return None;
    }
    let nul = physical[2..].iter().position(|&b| b == 0)? + 2;
    Some(&physical[..nul])
}

/// The kind and key of the collection whose stamp is `physical`; `None` for a key that is
/// not a stamp (a member, or not in the layout).
pub(crate) fn collection_of_stamp(physical: &[u8]) -> Option<(CollectionKind, &[u8])> {
    let (kind, key) = layout::split_reserved(physical)?;
    (!key.contains(&0)).then_some((kind, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_sit_before_their_members_only() {
        let member = layout::member_key(CollectionKind::Set, b"a/b", b"m");
        let stamp = stamp_key(CollectionKind::Set, b"a/b");
        assert_eq!(stamp_of_member(&member), Some(stamp.as_slice()));
        assert_eq!(stamp_of_member(&stamp), None);
        assert_eq!(
            collection_of_stamp(&stamp),
            Some((CollectionKind::Set, b"a/b".as_slice()))
        );
        assert_eq!(collection_of_stamp(&member), None);
        let (start, end) = collection_span(CollectionKind::Set, b"a/b");
        assert!(start <= stamp && stamp < end && member < end);
        let other = stamp_key(CollectionKind::Set, b"a/bc");
        assert!(other >= end);
        assert!(stamp.starts_with(&layout::kind_prefix(CollectionKind::Set, b"a/")));
    }
}
