//! Reads: `get` and `range` over keys, prefixes and intervals, with limits and paging.

use super::support::{collect_pages, expect_kind, key, names, put, root, snapshot};
use keyplane_core::raw::MAX_KEY_LEN;
use keyplane_core::{Continuation, ErrorKind, KeyRange, RangeOptions, Store};
use std::sync::Arc;

/// `get` of a missing key is `None`; after a put it is the entry with etcd's metadata.
pub async fn get_missing_and_present(store: Arc<dyn Store>) {
    let root = root();
    let k = key(&root, "k");
    assert_eq!(store.get(&k).await.unwrap(), None);
    let rev = put(&*store, &k, "v1").await;
    let e = store
        .get(&k)
        .await
        .unwrap()
        .expect("the key exists after put");
    assert_eq!(
        (e.key.as_slice(), e.value.as_slice()),
        (k.as_slice(), &b"v1"[..])
    );
    assert_eq!(
        (e.create_revision, e.mod_revision, e.version),
        (rev, rev, 1)
    );
    assert_eq!(e.lease, None);
    assert_eq!(store.get(&key(&root, "k2")).await.unwrap(), None);
}

/// A prefix range returns exactly the keys under it, ascending; an interval is `[start, end)`.
pub async fn range_prefix_and_interval(store: Arc<dyn Store>) {
    let root = root();
    for k in ["d", "b", "a", "c"] {
        put(&*store, &key(&root, k), k).await;
    }
    let all = store.range(RangeOptions::prefix(&root)).await.unwrap();
    assert_eq!(names(&root, &all.entries), ["a", "b", "c", "d"]);
    assert_eq!(all.count, 4);
    assert!(!all.more());
    let values: Vec<_> = all.entries.iter().map(|e| e.value.clone()).collect();
    assert_eq!(values, [b"a", b"b", b"c", b"d"]);

    let mid = store
        .range(RangeOptions::interval(key(&root, "b"), key(&root, "d")))
        .await
        .unwrap();
    assert_eq!(names(&root, &mid.entries), ["b", "c"]);
    let between = store
        .range(RangeOptions::interval(key(&root, "a0"), key(&root, "c0")))
        .await
        .unwrap();
    assert_eq!(names(&root, &between.entries), ["b", "c"]);
    let empty = store
        .range(RangeOptions::interval(key(&root, "b"), key(&root, "b")))
        .await
        .unwrap();
    assert!(empty.entries.is_empty());
    let one = store
        .range(RangeOptions::new(KeyRange::Key(key(&root, "c"))))
        .await
        .unwrap();
    assert_eq!(names(&root, &one.entries), ["c"]);
}

/// A limit caps a page; following continuations visits every key exactly once, in order.
pub async fn range_limit_and_paging(store: Arc<dyn Store>) {
    let root = root();
    let mut expected = Vec::new();
    for i in 0..25 {
        let k = format!("item/{i:03}");
        put(&*store, &key(&root, &k), &k).await;
        expected.push(k);
    }
    let first = store
        .range(RangeOptions::prefix(&root).limit(10))
        .await
        .unwrap();
    assert_eq!(first.entries.len(), 10);
    assert_eq!(first.count, 10);
    assert!(first.more(), "15 keys follow the first page");
    assert_eq!(names(&root, &first.entries), expected[..10]);

    for page in [1, 3, 5, 7, 25, 100] {
        let all = collect_pages(&*store, RangeOptions::prefix(&root), page).await;
        assert_eq!(names(&root, &all), expected, "pages of {page}");
    }
    // Paging an interval stops at its end.
    let part = collect_pages(
        &*store,
        RangeOptions::interval(key(&root, "item/005"), key(&root, "item/017")),
        4,
    )
    .await;
    assert_eq!(names(&root, &part), expected[5..17]);

    // A page that ends exactly at the last key has no continuation.
    let exact = store
        .range(RangeOptions::prefix(&root).limit(25))
        .await
        .unwrap();
    assert_eq!(exact.entries.len(), 25);
    assert!(!exact.more(), "no key follows the last page");
}

/// `keys_only` returns entries with empty values and full metadata; `count_only` only counts;
/// both, and plain reads, resume from a continuation (a page's or one built from a key).
pub async fn range_keys_only_and_count_only(store: Arc<dyn Store>) {
    let root = root();
    for k in ["a", "b", "c", "d", "e"] {
        put(&*store, &key(&root, k), format!("value of {k}")).await;
    }
    let full = store.range(RangeOptions::prefix(&root)).await.unwrap();
    let keys = store
        .range(RangeOptions::prefix(&root).keys_only())
        .await
        .unwrap();
    assert_eq!(keys.entries.len(), 5);
    for (k, f) in keys.entries.iter().zip(&full.entries) {
        assert!(k.value.is_empty(), "keys_only leaves values empty");
        assert_eq!(
            (&k.key, k.create_revision, k.mod_revision, k.version),
            (&f.key, f.create_revision, f.mod_revision, f.version)
        );
    }
    let count = store
        .range(RangeOptions::prefix(&root).count_only())
        .await
        .unwrap();
    assert!(count.entries.is_empty(), "count_only returns no entries");
    assert_eq!(count.count, 5);

    let page = store
        .range(RangeOptions::prefix(&root).limit(2))
        .await
        .unwrap();
    let rest = store
        .range(
            RangeOptions::prefix(&root)
                .count_only()
                .after(page.next.expect("more keys")),
        )
        .await
        .unwrap();
    assert_eq!(rest.count, 3, "count_only counts from the continuation on");

    // A continuation built by the caller, unpinned, resumes after its key at the current
    // revision.
    let after_c = || Continuation::after_key(&key(&root, "c"));
    let tail = store
        .range(RangeOptions::prefix(&root).after(after_c()))
        .await
        .unwrap();
    assert_eq!(names(&root, &tail.entries), ["d", "e"]);
    assert_eq!(tail.count, 2);
    assert!(!tail.more());
    let tail_count = store
        .range(RangeOptions::prefix(&root).count_only().after(after_c()))
        .await
        .unwrap();
    assert!(tail_count.entries.is_empty());
    assert_eq!(tail_count.count, 2);
}

/// `a/1/` never matches `a/10/...`: a prefix is a byte prefix, and a directory prefix ends
/// with its separator.
pub async fn range_prefix_isolation(store: Arc<dyn Store>) {
    let root = root();
    for k in ["a/1", "a/1/x", "a/1/y/z", "a/10/x", "a/11", "a/2/x", "a/1x"] {
        put(&*store, &key(&root, k), "v").await;
    }
    let dir = snapshot(&*store, &key(&root, "a/1/")).await;
    assert_eq!(names(&root, &dir), ["a/1/x", "a/1/y/z"]);
    let bytes = snapshot(&*store, &key(&root, "a/1")).await;
    assert_eq!(
        names(&root, &bytes),
        ["a/1", "a/1/x", "a/1/y/z", "a/10/x", "a/11", "a/1x"]
    );
    let ten = snapshot(&*store, &key(&root, "a/10/")).await;
    assert_eq!(names(&root, &ten), ["a/10/x"]);
}

/// A prefix ending in `0xFF` bytes covers exactly the keys starting with it.
pub async fn range_prefix_ending_in_ff(store: Arc<dyn Store>) {
    let root = root();
    let keys: [&[u8]; 6] = [
        b"p\xfe",
        b"p\xff",
        b"p\xff\x01",
        b"p\xff\xff",
        b"p\xff\xff\xff",
        b"q",
    ];
    for k in keys {
        put(&*store, &key(&root, k), "v").await;
    }
    let ff = snapshot(&*store, &key(&root, b"p\xff")).await;
    assert_eq!(
        names(&root, &ff),
        ["p\\xff", "p\\xff\\x01", "p\\xff\\xff", "p\\xff\\xff\\xff"]
    );
    let ffff = snapshot(&*store, &key(&root, b"p\xff\xff")).await;
    assert_eq!(names(&root, &ffff), ["p\\xff\\xff", "p\\xff\\xff\\xff"]);
    let count = store
        .range(RangeOptions::prefix(key(&root, b"p\xff")).count_only())
        .await
        .unwrap();
    assert_eq!(count.count, 4);
}

/// Key rules: empty, NUL-containing (reserved) and over-long keys are `InvalidKey`; a zero
/// limit and an interval ending before its start are `InvalidArgument`; the empty prefix is a
/// valid range (the whole keyspace).
pub async fn range_key_rules(store: Arc<dyn Store>) {
    let root = root();
    expect_kind(store.get(b"").await, ErrorKind::InvalidKey);
    expect_kind(store.get(&key(&root, b"a\0b")).await, ErrorKind::InvalidKey);
    expect_kind(store.get(b"\0sx\0m").await, ErrorKind::InvalidKey);
    let max_key = store.capabilities().max_key_bytes;
    assert!(max_key <= MAX_KEY_LEN);
    let long = key(&root, vec![b'x'; max_key]);
    expect_kind(store.get(&long).await, ErrorKind::InvalidKey);
    expect_kind(
        store.range(RangeOptions::prefix(&root).limit(0)).await,
        ErrorKind::InvalidArgument,
    );
    expect_kind(
        store
            .range(RangeOptions::interval(key(&root, "b"), key(&root, "a")))
            .await,
        ErrorKind::InvalidArgument,
    );
    expect_kind(
        store.range(RangeOptions::prefix(key(&root, b"a\0"))).await,
        ErrorKind::InvalidKey,
    );
    let whole = store
        .range(RangeOptions::prefix("").limit(1).keys_only())
        .await
        .expect("the empty prefix is the whole keyspace");
    assert!(whole.entries.len() <= 1);
    assert!(
        whole.entries.iter().all(|e| e.key.first() != Some(&0)),
        "reserved keys never appear in a range"
    );
    let max = key(&root, vec![b'x'; max_key - root.len()]);
    put(&*store, &max, "longest").await;
    assert_eq!(store.get(&max).await.unwrap().unwrap().value, b"longest");
}
