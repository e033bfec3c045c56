//! Ranges that list collections beside plain keys: kinds, sizes, prefix isolation, paging by
//! distinct keys, counts, and no change for plain callers.

use super::support::{all_pages, key, put, root, run};
use keyplane_core::{CollectionKind as Kind, CollectionOp as Op, RangeOptions, Store};
use std::sync::Arc;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Collections are listed with their kind and size, in key order, with the plain entries;
/// paging covers every key once; counts include them; a plain range does not list them.
pub async fn range_lists_collections(store: Arc<dyn Store>) {
    let root = root();
    let st = &*store;
    put(st, &key(&root, "a"), "plain").await;
    for member in ["x", "y"] {
        run(
            st,
            Op::SetAdd {
                key: key(&root, "b-set"),
                member: member.into(),
            },
        )
        .await;
    }
    run(
        st,
        Op::MapPut {
            key: key(&root, "c-map"),
            field: b"f".to_vec(),
            value: b"v".to_vec(),
        },
    )
    .await;
    put(st, &key(&root, "d"), "plain").await;
    for item in ["1", "2", "3"] {
        run(
            st,
            Op::ListPush {
                key: key(&root, "e-list"),
                value: item.into(),
            },
        )
        .await;
    }
    // Outside the prefix, sharing its bytes.
    let outside = [&root[..root.len() - 1], b"x/set"].concat();
    run(
        st,
        Op::SetAdd {
            key: outside,
            member: b"m".to_vec(),
        },
    )
    .await;
    // A collection emptied member by member no longer exists.
    run(
        st,
        Op::SetAdd {
            key: key(&root, "f-gone"),
            member: b"m".to_vec(),
        },
    )
    .await;
    run(
        st,
        Op::SetRemove {
            key: key(&root, "f-gone"),
            member: b"m".to_vec(),
        },
    )
    .await;

    let plain = st.range(RangeOptions::prefix(&root)).await.unwrap();
    assert_eq!(plain.entries.len(), 2);
    assert!(plain.collections.is_empty(), "plain callers see no change");

    let all = st
        .range(RangeOptions::prefix(&root).with_collections())
        .await
        .unwrap();
    let entries: Vec<String> = all.entries.iter().map(|e| text(&e.key)).collect();
    let r = text(&root);
    assert_eq!(entries, [format!("{r}a"), format!("{r}d")]);
    let collections: Vec<(String, Kind, u64)> = all
        .collections
        .iter()
        .map(|c| (text(&c.key), c.kind, c.size))
        .collect();
    assert_eq!(
        collections,
        [
            (format!("{r}b-set"), Kind::Set, 2),
            (format!("{r}c-map"), Kind::Map, 1),
            (format!("{r}e-list"), Kind::List, 3),
        ]
    );
    assert_eq!(all.count, 5);
    let count = st
        .range(RangeOptions::prefix(&root).with_collections().count_only())
        .await
        .unwrap();
    assert_eq!(count.count, 5);

    // Pages of two distinct keys cover the five once, in order.
    let mut opts = RangeOptions::prefix(&root).with_collections().limit(2);
    let mut keys = Vec::new();
    loop {
        let page = st.range(opts.clone()).await.unwrap();
        let mut page_keys: Vec<String> = page
            .entries
            .iter()
            .map(|e| text(&e.key))
            .chain(page.collections.iter().map(|c| text(&c.key)))
            .collect();
        page_keys.sort();
        assert!(page_keys.len() <= 2, "{page_keys:?}");
        keys.extend(page_keys);
        match page.next {
            Some(next) => opts = opts.after(next),
            None => break,
        }
    }
    assert_eq!(
        keys,
        ["a", "b-set", "c-map", "d", "e-list"].map(|k| format!("{r}{k}"))
    );

    // A delete of the prefix removes the collections it listed.
    assert_eq!(st.delete_prefix(&root).await.unwrap().deleted, 5);
    let empty = st
        .range(RangeOptions::prefix(&root).with_collections())
        .await
        .unwrap();
    assert!(empty.entries.is_empty() && empty.collections.is_empty());
}

/// One listing with collections, as comparable strings: every entry (key, value, mod
/// revision) and every collection (key, kind, size).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Listing {
    entries: Vec<(String, String, i64)>,
    collections: Vec<(String, Kind, u64)>,
}

/// Every page of `opts` (with collections) as a [`Listing`], and the revision read at;
/// checks that each page reads the revision of the first.
async fn listing(store: &dyn Store, opts: RangeOptions) -> (Listing, i64) {
    let pages = all_pages(store, opts).await;
    let first = pages.revisions[0];
    assert!(
        pages.revisions.iter().all(|r| *r == first),
        "every page reads one revision: {:?}",
        pages.revisions
    );
    let listing = Listing {
        entries: pages
            .entries
            .iter()
            .map(|e| (text(&e.key), text(&e.value), e.mod_revision))
            .collect(),
        collections: pages
            .collections
            .iter()
            .map(|c| (text(&c.key), c.kind, c.size))
            .collect(),
    };
    (listing, first)
}

/// A listing with collections at a past revision shows every collection with the size it
/// had then: through adds, removals, map overwrites, list removes and pushes, deletes (whole
/// or member by member), a delete and a rewrite in one transaction, and collections created
/// later; whole or in pages of two, and counted.
pub async fn collection_listings_at_a_past_revision(store: Arc<dyn Store>) {
    use keyplane_core::{Txn, TxnOp};
    let root = root();
    let st = &*store;
    let k = |s: &str| key(&root, s);
    let set_add = |c: &str, m: &str| Op::SetAdd {
        key: k(c),
        member: m.into(),
    };
    let steps: Vec<Txn> = vec![
        Txn::new().and_then([
            TxnOp::Collection(set_add("s", "a")),
            TxnOp::Collection(set_add("s", "b")),
            TxnOp::put(k("p"), "1"),
        ]),
        Txn::new().and_then([
            TxnOp::Collection(Op::MapPut {
                key: k("m"),
                field: b"f1".to_vec(),
                value: b"1".to_vec(),
            }),
            TxnOp::Collection(Op::MapPut {
                key: k("m"),
                field: b"f2".to_vec(),
                value: b"2".to_vec(),
            }),
            TxnOp::Collection(set_add("doomed", "1")),
            TxnOp::Collection(set_add("doomed", "2")),
            TxnOp::Collection(set_add("doomed", "3")),
            TxnOp::Collection(set_add("emptied", "only")),
            TxnOp::Collection(set_add("reborn", "1")),
            TxnOp::Collection(set_add("reborn", "2")),
        ]),
        Txn::new().and_then(["x", "y", "x"].map(|item| {
            TxnOp::Collection(Op::ListPush {
                key: k("l"),
                value: item.into(),
            })
        })),
        Txn::new().and_then([
            TxnOp::Collection(set_add("s", "c")),
            TxnOp::Collection(Op::MapPut {
                key: k("m"),
                field: b"f1".to_vec(),
                value: b"changed".to_vec(),
            }),
            TxnOp::put(k("p"), "2"),
        ]),
        Txn::new().and_then([
            TxnOp::Collection(Op::ListRemove {
                key: k("l"),
                value: b"x".to_vec(),
            }),
            TxnOp::Collection(Op::ListPush {
                key: k("l"),
                value: b"z".to_vec(),
            }),
            TxnOp::Collection(Op::MapDelete {
                key: k("m"),
                field: b"f2".to_vec(),
            }),
        ]),
        Txn::new().and_then([TxnOp::Delete { key: k("doomed") }]),
        Txn::new().and_then([TxnOp::Collection(Op::SetRemove {
            key: k("emptied"),
            member: b"only".to_vec(),
        })]),
        Txn::new().and_then([
            TxnOp::Delete { key: k("reborn") },
            TxnOp::Collection(set_add("reborn", "9")),
            TxnOp::Collection(set_add("new", "n")),
        ]),
        Txn::new().and_then([TxnOp::Collection(Op::ListRotate { key: k("l") })]),
        Txn::new().and_then([TxnOp::DeletePrefix { prefix: k("") }]),
        Txn::new().and_then([TxnOp::Collection(set_add("s", "back"))]),
    ];
    let whole = || RangeOptions::prefix(&root).with_collections();
    let mut seen = Vec::new();
    for txn in steps {
        st.txn(txn).await.expect("step");
        let (now, revision) = listing(st, whole()).await;
        seen.push((revision, now));
    }
    for (revision, then) in &seen {
        let (whole_then, read_at) = listing(st, whole().at_revision(*revision)).await;
        assert_eq!(read_at, *revision);
        assert_eq!(whole_then, *then, "at revision {revision}");
        let (paged, _) = listing(st, whole().at_revision(*revision).limit(2)).await;
        assert_eq!(paged, *then, "in pages of two at revision {revision}");
        let count = st
            .range(whole().at_revision(*revision).count_only())
            .await
            .unwrap();
        let expected = then.entries.len() + then.collections.len();
        assert_eq!(count.count, expected as u64, "count at revision {revision}");
    }
    // Spot checks, so that the recorded listings are what the steps say.
    let at_lists = &seen[4].1;
    assert!(
        at_lists
            .collections
            .contains(&(text(&k("l")), Kind::List, 2))
    );
    assert!(
        at_lists
            .collections
            .contains(&(text(&k("doomed")), Kind::Set, 3))
    );
    assert!(seen[9].1.collections.is_empty() && seen[9].1.entries.is_empty());
}

/// The pages of a paged listing with collections all read the revision of the first page,
/// whatever is written between them.
pub async fn paged_collection_listings_read_one_revision(store: Arc<dyn Store>) {
    let root = root();
    let st = &*store;
    for name in ["a", "b", "c", "d", "e", "f"] {
        for member in ["1", "2"] {
            run(
                st,
                Op::SetAdd {
                    key: key(&root, name),
                    member: member.into(),
                },
            )
            .await;
        }
    }
    let opts = RangeOptions::prefix(&root).with_collections().limit(2);
    let first = st.range(opts.clone()).await.unwrap();
    let mut keys: Vec<(String, u64)> = first
        .collections
        .iter()
        .map(|c| (text(&c.key), c.size))
        .collect();
    // Between pages: a set later in the range grows, another goes, a new one appears.
    run(
        st,
        Op::SetAdd {
            key: key(&root, "e"),
            member: b"3".to_vec(),
        },
    )
    .await;
    st.delete(&key(&root, "d")).await.unwrap();
    run(
        st,
        Op::SetAdd {
            key: key(&root, "cc"),
            member: b"1".to_vec(),
        },
    )
    .await;
    let mut next = first.next;
    while let Some(after) = next {
        let page = st.range(opts.clone().after(after)).await.unwrap();
        assert_eq!(page.revision, first.revision);
        keys.extend(page.collections.iter().map(|c| (text(&c.key), c.size)));
        next = page.next;
    }
    let r = text(&root);
    let expected: Vec<(String, u64)> = ["a", "b", "c", "d", "e", "f"]
        .iter()
        .map(|n| (format!("{r}{n}"), 2))
        .collect();
    assert_eq!(keys, expected);
}
