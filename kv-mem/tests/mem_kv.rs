//! MemStore: revisions, entry metadata, compares, ranges and paging.

use kv_core::{
    Compare, CompareOp, Continuation, KeyRange, OpResult, PutOptions, RangeOptions, Store, Txn,
    TxnOp,
};
use kv_mem::MemStore;

const NONE: PutOptions = PutOptions {
    lease: None,
    prev: false,
};

#[tokio::test]
async fn revisions_and_versions_follow_etcd() {
    let store = MemStore::new();
    assert_eq!(store.revision().await.unwrap(), 1);
    let r1 = store.put(b"a", b"1", NONE).await.unwrap().revision;
    assert_eq!(r1, 2);
    let r2 = store.put(b"a", b"2", NONE).await.unwrap().revision;
    let a = store.get(b"a").await.unwrap().unwrap();
    assert_eq!(
        (
            a.create_revision,
            a.mod_revision,
            a.version,
            a.value.as_slice()
        ),
        (r1, r2, 2, b"2".as_slice())
    );
    // A delete bumps the revision; re-creating restarts the version.
    let deleted = store.delete(b"a").await.unwrap().prev.unwrap();
    assert_eq!(deleted.version, 2);
    let r4 = store.put(b"a", b"3", NONE).await.unwrap().revision;
    assert_eq!(r4, r2 + 2);
    let a = store.get(b"a").await.unwrap().unwrap();
    assert_eq!((a.create_revision, a.version), (r4, 1));
    // Writes that change nothing keep the revision.
    assert_eq!(store.delete(b"missing").await.unwrap().prev, None);
    assert_eq!(store.revision().await.unwrap(), r4);
}

#[tokio::test]
async fn put_returns_the_previous_entry_when_asked() {
    let store = MemStore::new();
    let first = store.put(b"k", b"1", NONE.with_prev()).await.unwrap();
    assert_eq!(first.prev, None);
    let second = store.put(b"k", b"2", NONE.with_prev()).await.unwrap();
    assert_eq!(second.prev.unwrap().value, b"1");
}

#[tokio::test]
async fn one_txn_is_one_revision_and_its_reads_see_its_writes() {
    let store = MemStore::new();
    let resp = store
        .txn(Txn::new().and_then([TxnOp::put("x", "1"), TxnOp::put("y", "2"), TxnOp::get("x")]))
        .await
        .unwrap();
    assert!(resp.succeeded);
    assert_eq!(resp.revision, 2);
    let OpResult::Get(Some(x)) = &resp.results[2] else {
        panic!("expected the txn's own write, got {:?}", resp.results[2]);
    };
    assert_eq!((x.mod_revision, x.value.as_slice()), (2, b"1".as_slice()));
    let y = store.get(b"y").await.unwrap().unwrap();
    assert_eq!(y.mod_revision, 2);
}

#[tokio::test]
async fn compares_choose_the_branch() {
    let store = MemStore::new();
    let rev = store.put(b"c", b"v1", NONE).await.unwrap().revision;
    let holds = [
        Compare::exists("c"),
        Compare::absent("nope"),
        Compare::version("c", CompareOp::Equal, 1),
        Compare::mod_revision("c", CompareOp::Equal, rev),
        Compare::create_revision("c", CompareOp::Less, rev + 1),
        Compare::value("c", CompareOp::Greater, "v0"),
        Compare::mod_revision("nope", CompareOp::Equal, 0),
    ];
    for compare in holds {
        let resp = store
            .txn(
                Txn::new()
                    .when([compare.clone()])
                    .or_else([TxnOp::get("c")]),
            )
            .await
            .unwrap();
        assert!(resp.succeeded, "{compare:?} should hold");
    }
    // A value compare on an absent key is false, whatever the operator.
    for op in [CompareOp::Equal, CompareOp::NotEqual, CompareOp::Less] {
        let txn = Txn::new()
            .when([Compare::value("nope", op, "x")])
            .and_then([TxnOp::put("c", "won")])
            .or_else([TxnOp::get("c")]);
        let resp = store.txn(txn).await.unwrap();
        assert!(!resp.succeeded);
        assert_eq!(resp.revision, rev);
        let OpResult::Get(Some(c)) = &resp.results[0] else {
            panic!("the failure branch reads c");
        };
        assert_eq!(c.value, b"v1");
    }
}

#[tokio::test]
async fn prefix_ranges_page_with_continuations() {
    let store = MemStore::new();
    for i in 0..25 {
        let key = format!("p/{i:02}");
        store.put(key.as_bytes(), b"v", NONE).await.unwrap();
    }
    store.put(b"p0", b"outside", NONE).await.unwrap();
    store.put(b"o", b"outside", NONE).await.unwrap();
    let mut seen = Vec::new();
    let mut opts = RangeOptions::prefix("p/").limit(10);
    loop {
        let page = store.range(opts.clone()).await.unwrap();
        assert!(page.entries.len() <= 10);
        assert_eq!(page.count, page.entries.len() as u64);
        seen.extend(page.entries.iter().map(|e| e.key.clone()));
        match page.next {
            Some(next) => opts = opts.after(next),
            None => break,
        }
    }
    let expected: Vec<Vec<u8>> = (0..25).map(|i| format!("p/{i:02}").into_bytes()).collect();
    assert_eq!(seen, expected);

    let counted = store
        .range(RangeOptions::prefix("p/").count_only())
        .await
        .unwrap();
    assert_eq!((counted.count, counted.entries.len()), (25, 0));
    let keys = store
        .range(RangeOptions::prefix("p/").keys_only().limit(1))
        .await
        .unwrap();
    assert!(keys.entries[0].value.is_empty() && keys.more());
    let after = RangeOptions::prefix("p/")
        .count_only()
        .after(Continuation::after_key(b"p/19"));
    assert_eq!(store.range(after).await.unwrap().count, 5);
    let interval = store
        .range(RangeOptions::interval("p/05", "p/08"))
        .await
        .unwrap();
    assert_eq!(interval.count, 3);
    let whole = store
        .range(RangeOptions::new(KeyRange::Prefix(Vec::new())).count_only())
        .await
        .unwrap();
    assert_eq!(whole.count, 27);
}

#[tokio::test]
async fn delete_prefix_deletes_only_under_the_prefix() {
    let store = MemStore::new();
    for key in ["t/1/a", "t/1/b", "t/10/a", "t/2"] {
        store.put(key.as_bytes(), b"v", NONE).await.unwrap();
    }
    let before = store.revision().await.unwrap();
    assert_eq!(store.delete_prefix(b"t/1/").await.unwrap().deleted, 2);
    assert_eq!(store.revision().await.unwrap(), before + 1);
    let left = store.range(RangeOptions::prefix("t/")).await.unwrap();
    let keys: Vec<_> = left.entries.iter().map(|e| e.key.as_slice()).collect();
    assert_eq!(keys, [b"t/10/a".as_slice(), b"t/2".as_slice()]);
}
