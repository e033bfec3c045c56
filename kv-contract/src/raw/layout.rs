//! The emulation layout: where ordered backends keep collection members.

use crate::collections::CollectionKind;

/// The prefix under which every member of the collection `kind` at `key` lives:
/// `\0` tag `key` `\0`.
pub fn members_prefix(kind: CollectionKind, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + 3);
    out.push(0);
    out.push(kind.tag());
    out.extend_from_slice(key);
    out.push(0);
    out
}

/// The prefix under which the members of every collection of `kind` whose key starts with
/// `prefix` live (used by `delete_prefix`): `\0` tag `prefix`.
pub fn kind_prefix(kind: CollectionKind, prefix: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(prefix.len() + 2);
    out.push(0);
    out.push(kind.tag());
    out.extend_from_slice(prefix);
    out
}

/// The physical key of a set member or map field.
pub fn member_key(kind: CollectionKind, key: &[u8], member: &[u8]) -> Vec<u8> {
    let mut out = members_prefix(kind, key);
    out.extend_from_slice(member);
    out
}

/// The first list position, leaving room to push at the head later.
pub const FIRST_LIST_POSITION: u64 = 1 << 63;

/// The physical key of the list item at `position`.
pub fn list_item_key(key: &[u8], position: u64) -> Vec<u8> {
    let mut out = members_prefix(CollectionKind::List, key);
    out.extend_from_slice(format!("{position:016x}").as_bytes());
    out
}

/// The position encoded in a list item's physical key, given the list's members prefix.
pub fn list_position(members_prefix: &[u8], physical: &[u8]) -> Option<u64> {
    let hex = physical.strip_prefix(members_prefix)?;
    let hex = std::str::from_utf8(hex).ok()?;
    if hex.len() != 16 {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// Whether a physical key belongs to the reserved collection layout.
pub fn is_reserved(physical: &[u8]) -> bool {
    physical.first() == Some(&0)
}

/// The kind and the rest of a physical key of the reserved layout (`\0` tag rest): for a
/// members prefix `\0 tag K \0` the rest is `K \0`, for a member key `K \0 m`. `None`
/// outside the layout or for an unknown tag.
pub fn split_reserved(physical: &[u8]) -> Option<(CollectionKind, &[u8])> {
    let (&tag, rest) = physical.strip_prefix(&[0])?.split_first()?;
    Some((CollectionKind::from_tag(tag)?, rest))
}

/// Resolves Redis-style inclusive `[start, stop]` indexes (negative from the tail) against a
/// list of `len` items, giving the half-open index range to return.
pub fn list_index_range(len: usize, start: i64, stop: i64) -> std::ops::Range<usize> {
    let len_i = len as i64;
    let norm = |i: i64| if i < 0 { len_i + i } else { i };
    let start = norm(start).max(0);
    let stop = norm(stop).min(len_i - 1);
    if start > stop || start >= len_i {
        0..0
    } else {
        start as usize..stop as usize + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_disjoint_from_user_keys() {
        let k = members_prefix(CollectionKind::Set, b"a/b");
        assert_eq!(k, b"\0sa/b\0");
        assert!(is_reserved(&k));
        let item = list_item_key(b"q", FIRST_LIST_POSITION + 1);
        assert_eq!(
            list_position(&members_prefix(CollectionKind::List, b"q"), &item),
            Some(FIRST_LIST_POSITION + 1)
        );
    }

    #[test]
    fn lrange_indexes() {
        assert_eq!(list_index_range(5, 0, -1), 0..5);
        assert_eq!(list_index_range(5, 1, 2), 1..3);
        assert_eq!(list_index_range(5, -2, -1), 3..5);
        assert_eq!(list_index_range(5, 3, 1), 0..0);
        assert_eq!(list_index_range(0, 0, -1), 0..0);
        assert_eq!(list_index_range(5, -10, 100), 0..5);
    }
}
