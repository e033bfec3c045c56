//! Ranges that list collections beside plain keys: kinds, sizes, prefix isolation, paging by
//! distinct keys, counts, and no change for plain callers.

use super::support::{key, put, root, run};
use kv_core::{CollectionKind as Kind, CollectionOp as Op, RangeOptions, Store};
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
    assert_eq!(st.delete_prefix(&root).await.unwrap(), 5);
    let empty = st
        .range(RangeOptions::prefix(&root).with_collections())
        .await
        .unwrap();
    assert!(empty.entries.is_empty() && empty.collections.is_empty());
}
