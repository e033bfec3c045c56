//! [`apply`]: one collection op against ordered physical state.

use super::{Applied, OrderedState, PhysicalWrite, members_range};
use crate::changes::CollectionChange;
use crate::collections::{CollectionKind, CollectionOp, CollectionResult};
use crate::continuation::Continuation;
use crate::error::{Error, ErrorKind, Result};
use crate::raw::layout;

/// Applies one collection op to `state`: returns its result, the physical writes that make
/// it so and the change a watch reports, without writing anything. An op that changes
/// nothing (adding a present member, rotating an empty list...) returns no writes and no
/// change.
///
/// The op is assumed valid ([`CollectionOp::validate`]); backends validate the whole
/// transaction first.
///
/// # Errors
/// Read errors of `state`; `Corrupted` when a list item's physical key is malformed;
/// `InvalidArgument` when a list's position space is exhausted.
pub fn apply(op: &CollectionOp, state: &impl OrderedState) -> Result<Applied> {
    let kind = op.kind();
    let key = op.key();
    let none = |result| Applied {
        result,
        writes: Vec::new(),
        change: None,
    };
    Ok(match op {
        CollectionOp::SetAdd { member, .. } => {
            let physical = layout::member_key(kind, key, member);
            if state.get(&physical)?.is_some() {
                none(CollectionResult::Changed(false))
            } else {
                Applied {
                    change: Some(CollectionChange::SetAdd {
                        member: member.clone(),
                    }),
                    result: CollectionResult::Changed(true),
                    writes: vec![PhysicalWrite::Put {
                        key: physical,
                        value: Vec::new(),
                    }],
                }
            }
        }
        CollectionOp::SetRemove { member, .. } | CollectionOp::MapDelete { field: member, .. } => {
            let physical = layout::member_key(kind, key, member);
            match state.get(&physical)? {
                Some(prev) => Applied {
                    change: Some(match kind {
                        CollectionKind::Map => CollectionChange::MapDelete {
                            field: member.clone(),
                            prev,
                        },
                        _ => CollectionChange::SetRemove {
                            member: member.clone(),
                        },
                    }),
                    result: CollectionResult::Changed(true),
                    writes: vec![PhysicalWrite::Delete { key: physical }],
                },
                None => none(CollectionResult::Changed(false)),
            }
        }
        CollectionOp::SetContains { member, .. } => {
            let physical = layout::member_key(kind, key, member);
            none(CollectionResult::Contains(state.get(&physical)?.is_some()))
        }
        CollectionOp::SetMembers { .. } => {
            let members = members(kind, key, state, None, None)?;
            none(CollectionResult::Members(
                members.into_iter().map(|(m, _)| m).collect(),
            ))
        }
        CollectionOp::SetScan { after, limit, .. } => {
            let limit = (*limit).max(1);
            let mut page = members(
                kind,
                key,
                state,
                after.as_ref().map(Continuation::start_key),
                Some(limit.saturating_add(1)),
            )?;
            // The member after the page's last is where the next page starts.
            let next = if page.len() > limit {
                page.pop().map(|(m, _)| Continuation::starting_at(m))
            } else {
                None
            };
            none(CollectionResult::Page {
                members: page.into_iter().map(|(m, _)| m).collect(),
                next,
            })
        }
        CollectionOp::MapPut { field, value, .. } => {
            let physical = layout::member_key(kind, key, field);
            match state.get(&physical)? {
                Some(old) if old == *value => none(CollectionResult::Changed(false)),
                prev => Applied {
                    result: CollectionResult::Changed(prev.is_none()),
                    change: Some(CollectionChange::MapPut {
                        field: field.clone(),
                        value: value.clone(),
                        prev,
                    }),
                    writes: vec![PhysicalWrite::Put {
                        key: physical,
                        value: value.clone(),
                    }],
                },
            }
        }
        CollectionOp::MapGet { field, .. } => {
            let physical = layout::member_key(kind, key, field);
            none(CollectionResult::Value(state.get(&physical)?))
        }
        CollectionOp::MapGetAll { .. } => none(CollectionResult::Fields(members(
            kind, key, state, None, None,
        )?)),
        CollectionOp::ListPush { value, .. } => list_push(key, value, state)?,
        CollectionOp::ListPushFront { value, .. } => list_push_front(key, value, state)?,
        CollectionOp::ListRemove { value, .. } => {
            let range = members_range(kind, key);
            let writes: Vec<_> = state
                .scan(&range.start, &range.end, None)?
                .into_iter()
                .filter(|(_, item)| item == value)
                .map(|(physical, _)| PhysicalWrite::Delete { key: physical })
                .collect();
            Applied {
                change: (!writes.is_empty()).then(|| CollectionChange::ListRemove {
                    item: value.clone(),
                    count: writes.len() as u64,
                }),
                result: CollectionResult::Count(writes.len() as u64),
                writes,
            }
        }
        CollectionOp::ListRange { start, stop, .. } => {
            let range = members_range(kind, key);
            let len = state.count(&range.start, &range.end)?;
            let len = usize::try_from(len).unwrap_or(usize::MAX);
            let wanted = crate::raw::layout::list_index_range(len, *start, *stop);
            let items = if wanted.is_empty() {
                Vec::new()
            } else {
                state
                    .scan(&range.start, &range.end, Some(wanted.end))?
                    .into_iter()
                    .skip(wanted.start)
                    .map(|(_, item)| item)
                    .collect()
            };
            none(CollectionResult::Items(items))
        }
        CollectionOp::ListRotate { .. } => list_rotate(key, state)?,
        CollectionOp::ListRotateGet {
            map_prefix,
            map_suffix,
            field,
            ..
        } => {
            let mut rotated = list_rotate(key, state)?;
            let CollectionResult::Value(item) = rotated.result else {
                return Err(Error::internal("a rotation answered something else"));
            };
            let value = match &item {
                Some(item) => {
                    let map = [&map_prefix[..], item, map_suffix].concat();
                    state.get(&layout::member_key(CollectionKind::Map, &map, field))?
                }
                None => None,
            };
            rotated.result = CollectionResult::Rotated { item, value };
            rotated
        }
        CollectionOp::ListLen { .. } => {
            let range = members_range(kind, key);
            none(CollectionResult::Count(
                state.count(&range.start, &range.end)?,
            ))
        }
    })
}

/// Members (or fields with values) of the set or map at `key`, from `cursor` on, ascending.
fn members(
    kind: CollectionKind,
    key: &[u8],
    state: &impl OrderedState,
    cursor: Option<&[u8]>,
    limit: Option<usize>,
) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let range = members_range(kind, key);
    let start = match cursor {
        Some(cursor) => layout::member_key(kind, key, cursor),
        None => range.start.clone(),
    };
    let prefix_len = range.start.len();
    Ok(state
        .scan(&start, &range.end, limit)?
        .into_iter()
        .map(|(mut physical, value)| (physical.split_off(prefix_len), value))
        .collect())
}

/// The position of a list item, from its physical key.
fn position(members_prefix: &[u8], physical: &[u8]) -> Result<u64> {
    layout::list_position(members_prefix, physical).ok_or_else(|| {
        Error::new(
            ErrorKind::Corrupted,
            "a list item's physical key is malformed",
        )
        .with_context("physical_key", crate::raw::escape_bytes(physical))
    })
}

fn next_position(last: u64) -> Result<u64> {
    last.checked_add(1)
        .ok_or_else(|| Error::invalid_argument("the list's position space is exhausted"))
}

fn list_push(key: &[u8], value: &[u8], state: &impl OrderedState) -> Result<Applied> {
    let range = members_range(CollectionKind::List, key);
    let position = match state.last(&range.start, &range.end)? {
        Some((physical, _)) => next_position(position(&range.start, &physical)?)?,
        None => layout::FIRST_LIST_POSITION,
    };
    let len = state.count(&range.start, &range.end)? + 1;
    Ok(Applied {
        change: Some(CollectionChange::ListPush {
            item: value.to_vec(),
        }),
        result: CollectionResult::Count(len),
        writes: vec![PhysicalWrite::Put {
            key: layout::list_item_key(key, position),
            value: value.to_vec(),
        }],
    })
}

fn list_push_front(key: &[u8], value: &[u8], state: &impl OrderedState) -> Result<Applied> {
    let range = members_range(CollectionKind::List, key);
    let position = match state.scan(&range.start, &range.end, Some(1))?.pop() {
        Some((physical, _)) => position(&range.start, &physical)?
            .checked_sub(1)
            .ok_or_else(|| Error::invalid_argument("the list's position space is exhausted"))?,
        None => layout::FIRST_LIST_POSITION,
    };
    let len = state.count(&range.start, &range.end)? + 1;
    Ok(Applied {
        change: Some(CollectionChange::ListPushFront {
            item: value.to_vec(),
        }),
        result: CollectionResult::Count(len),
        writes: vec![PhysicalWrite::Put {
            key: layout::list_item_key(key, position),
            value: value.to_vec(),
        }],
    })
}

fn list_rotate(key: &[u8], state: &impl OrderedState) -> Result<Applied> {
    let range = members_range(CollectionKind::List, key);
    let Some((head_key, head)) = state.scan(&range.start, &range.end, Some(1))?.pop() else {
        return Ok(Applied {
            change: None,
            result: CollectionResult::Value(None),
            writes: Vec::new(),
        });
    };
    let (tail_key, _) = state
        .last(&range.start, &range.end)?
        .ok_or_else(|| Error::internal("a list lost its tail while rotating"))?;
    if tail_key == head_key {
        // A one-item list is its own rotation: nothing to write.
        return Ok(Applied {
            change: None,
            result: CollectionResult::Value(Some(head)),
            writes: Vec::new(),
        });
    }
    let new_position = next_position(position(&range.start, &tail_key)?)?;
    Ok(Applied {
        change: Some(CollectionChange::ListRotate { item: head.clone() }),
        result: CollectionResult::Value(Some(head.clone())),
        writes: vec![
            PhysicalWrite::Delete { key: head_key },
            PhysicalWrite::Put {
                key: layout::list_item_key(key, new_position),
                value: head,
            },
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn run(state: &mut BTreeMap<Vec<u8>, Vec<u8>>, op: CollectionOp) -> CollectionResult {
        let applied = apply(&op, state).unwrap();
        for write in applied.writes {
            match write {
                PhysicalWrite::Put { key, value } => {
                    state.insert(key, value);
                }
                PhysicalWrite::Delete { key } => {
                    state.remove(&key);
                }
            }
        }
        applied.result
    }

    fn k(s: &str) -> Vec<u8> {
        s.as_bytes().to_vec()
    }

    #[test]
    fn sets_add_remove_contains_members_scan() {
        let mut st = BTreeMap::new();
        let add = |m: &str| CollectionOp::SetAdd {
            key: k("s"),
            member: k(m),
        };
        assert_eq!(run(&mut st, add("b")), CollectionResult::Changed(true));
        assert_eq!(run(&mut st, add("a")), CollectionResult::Changed(true));
        assert_eq!(run(&mut st, add("c")), CollectionResult::Changed(true));
        assert_eq!(run(&mut st, add("a")), CollectionResult::Changed(false));
        let members = run(&mut st, CollectionOp::SetMembers { key: k("s") });
        assert_eq!(
            members,
            CollectionResult::Members(vec![k("a"), k("b"), k("c")])
        );
        let scan = |after| CollectionOp::SetScan {
            key: k("s"),
            after,
            limit: 2,
        };
        let CollectionResult::Page { members, next } = run(&mut st, scan(None)) else {
            panic!("not a page")
        };
        assert_eq!(members, vec![k("a"), k("b")]);
        let CollectionResult::Page { members, next } = run(&mut st, scan(next)) else {
            panic!("not a page")
        };
        assert_eq!((members, next), (vec![k("c")], None));
        let remove = CollectionOp::SetRemove {
            key: k("s"),
            member: k("b"),
        };
        assert_eq!(
            run(&mut st, remove.clone()),
            CollectionResult::Changed(true)
        );
        assert_eq!(run(&mut st, remove), CollectionResult::Changed(false));
        let contains = CollectionOp::SetContains {
            key: k("s"),
            member: k("b"),
        };
        assert_eq!(run(&mut st, contains), CollectionResult::Contains(false));
    }

    #[test]
    fn maps_put_get_delete_all() {
        let mut st = BTreeMap::new();
        let put = |f: &str, v: &str| CollectionOp::MapPut {
            key: k("m"),
            field: k(f),
            value: k(v),
        };
        assert_eq!(run(&mut st, put("f", "1")), CollectionResult::Changed(true));
        assert_eq!(
            run(&mut st, put("f", "2")),
            CollectionResult::Changed(false)
        );
        assert!(apply(&put("f", "2"), &st).unwrap().writes.is_empty());
        assert_eq!(run(&mut st, put("e", "0")), CollectionResult::Changed(true));
        let get = CollectionOp::MapGet {
            key: k("m"),
            field: k("f"),
        };
        assert_eq!(run(&mut st, get), CollectionResult::Value(Some(k("2"))));
        let all = run(&mut st, CollectionOp::MapGetAll { key: k("m") });
        assert_eq!(
            all,
            CollectionResult::Fields(vec![(k("e"), k("0")), (k("f"), k("2"))])
        );
        let del = CollectionOp::MapDelete {
            key: k("m"),
            field: k("e"),
        };
        assert_eq!(run(&mut st, del.clone()), CollectionResult::Changed(true));
        assert_eq!(run(&mut st, del), CollectionResult::Changed(false));
    }

    #[test]
    fn lists_push_range_remove_rotate_len() {
        let mut st = BTreeMap::new();
        let push = |v: &str| CollectionOp::ListPush {
            key: k("l"),
            value: k(v),
        };
        let range = |start, stop| CollectionOp::ListRange {
            key: k("l"),
            start,
            stop,
        };
        let rotate = CollectionOp::ListRotate { key: k("l") };
        assert_eq!(run(&mut st, rotate.clone()), CollectionResult::Value(None));
        assert!(st.is_empty());
        for (i, v) in ["a", "b", "a", "c"].iter().enumerate() {
            assert_eq!(run(&mut st, push(v)), CollectionResult::Count(i as u64 + 1));
        }
        let items = |v: &[&str]| CollectionResult::Items(v.iter().map(|s| k(s)).collect());
        assert_eq!(run(&mut st, range(0, -1)), items(&["a", "b", "a", "c"]));
        assert_eq!(run(&mut st, range(1, 2)), items(&["b", "a"]));
        assert_eq!(run(&mut st, range(-2, -1)), items(&["a", "c"]));
        assert_eq!(run(&mut st, range(5, 9)), items(&[]));
        assert_eq!(
            run(&mut st, rotate.clone()),
            CollectionResult::Value(Some(k("a")))
        );
        assert_eq!(run(&mut st, range(0, -1)), items(&["b", "a", "c", "a"]));
        let remove = CollectionOp::ListRemove {
            key: k("l"),
            value: k("a"),
        };
        assert_eq!(run(&mut st, remove), CollectionResult::Count(2));
        assert_eq!(
            run(&mut st, CollectionOp::ListLen { key: k("l") }),
            CollectionResult::Count(2)
        );
        assert_eq!(run(&mut st, push("d")), CollectionResult::Count(3));
        assert_eq!(run(&mut st, range(0, -1)), items(&["b", "c", "d"]));
    }

    #[test]
    fn a_scan_with_the_largest_limit_returns_everything() {
        let mut st = BTreeMap::new();
        for m in ["a", "b"] {
            run(
                &mut st,
                CollectionOp::SetAdd {
                    key: k("s"),
                    member: k(m),
                },
            );
        }
        let scan = CollectionOp::SetScan {
            key: k("s"),
            after: None,
            limit: usize::MAX,
        };
        let page = CollectionResult::Page {
            members: vec![k("a"), k("b")],
            next: None,
        };
        assert_eq!(run(&mut st, scan), page);
    }

    #[test]
    fn rotating_a_single_item_writes_nothing() {
        let mut st = BTreeMap::new();
        let push = CollectionOp::ListPush {
            key: k("l"),
            value: k("only"),
        };
        run(&mut st, push);
        let applied = apply(&CollectionOp::ListRotate { key: k("l") }, &st).unwrap();
        assert_eq!(applied.result, CollectionResult::Value(Some(k("only"))));
        assert!(applied.writes.is_empty());
    }

    #[test]
    fn a_malformed_list_key_is_corruption() {
        let mut st = BTreeMap::new();
        let mut bad = layout::members_prefix(CollectionKind::List, b"l");
        bad.extend_from_slice(b"zz");
        st.insert(bad, k("x"));
        let push = CollectionOp::ListPush {
            key: k("l"),
            value: k("y"),
        };
        let err = apply(&push, &st).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupted);
    }
}
