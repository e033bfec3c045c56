//! MemStore revisions, counted exactly on a private store (the conformance suite, on shared
//! servers, can only compare them).

use keyplane_contract::{
    CollectionOp, CollectionResult, Compare, ErrorKind, LeaseId, PutOptions, Store, Txn, TxnOp,
};
use keyplane_mem::MemStore;
use std::time::Duration;

const NONE: PutOptions = PutOptions {
    lease: None,
    prev: false,
};

fn set_add(member: &str) -> CollectionOp {
    CollectionOp::SetAdd {
        key: b"s".to_vec(),
        member: member.as_bytes().to_vec(),
    }
}

/// A fresh store is at revision 1 and its first write at 2; each write that changes something
/// adds exactly one revision, and calls that change nothing or are rejected add none.
#[tokio::test]
async fn each_change_adds_exactly_one_revision() {
    let store = MemStore::new();
    assert_eq!(store.revision().await.unwrap(), 1);
    assert_eq!(store.put(b"a", b"1", NONE).await.unwrap().revision, 2);

    let mut expected = 2;
    let lease = store.lease_grant(Duration::from_secs(60)).await.unwrap();
    let writes = [
        (
            "a write txn",
            Txn::new().and_then([
                TxnOp::put("t/1", "v"),
                TxnOp::put("t/2", "v"),
                TxnOp::put_with_lease("leased", "v", lease.id),
                TxnOp::get("a"),
            ]),
        ),
        (
            "a delete_prefix",
            Txn::new().and_then([TxnOp::delete_prefix("t/")]),
        ),
        (
            "a collection write that changes it",
            Txn::new().and_then([TxnOp::Collection(set_add("m"))]),
        ),
    ];
    for (what, txn) in writes {
        expected += 1;
        assert_eq!(store.txn(txn).await.unwrap().revision, expected, "{what}");
        assert_eq!(store.revision().await.unwrap(), expected, "{what}");
    }
    expected += 1;
    let deleted = store.delete(b"a").await.unwrap();
    assert_eq!((deleted.existed(), deleted.revision), (true, expected));
    store.lease_revoke(lease.id).await.unwrap();
    expected += 1;
    assert_eq!(store.revision().await.unwrap(), expected, "a lease revoke");
    assert_eq!(store.get(b"leased").await.unwrap(), None);

    // Nothing below changes the store.
    assert_eq!(
        store.collection(set_add("m")).await.unwrap(),
        CollectionResult::Changed(false)
    );
    let missing = store.delete(b"missing").await.unwrap();
    assert_eq!((missing.prev, missing.revision), (None, expected));
    let failed = store
        .txn(
            Txn::new()
                .when([Compare::exists("missing")])
                .and_then([TxnOp::put("never", "v")])
                .or_else([TxnOp::get("never")]),
        )
        .await
        .unwrap();
    assert_eq!((failed.succeeded, failed.revision), (false, expected));
    let unknown_lease = store
        .txn(Txn::new().and_then([
            TxnOp::Collection(set_add("n")),
            TxnOp::put_with_lease("k", "v", LeaseId(424_242)),
        ]))
        .await;
    let rejected = [
        (unknown_lease, ErrorKind::LeaseNotFound),
        (
            store.txn(Txn::new().and_then([TxnOp::put("", "v")])).await,
            ErrorKind::InvalidKey,
        ),
        (
            store
                .txn(Txn::new().and_then([TxnOp::put("x", "1"), TxnOp::delete("x")]))
                .await,
            ErrorKind::TxnConflict,
        ),
    ];
    for (result, kind) in rejected {
        assert_eq!(result.unwrap_err().kind(), kind);
    }
    let contains_n = CollectionOp::SetContains {
        key: b"s".to_vec(),
        member: b"n".to_vec(),
    };
    assert_eq!(
        store.collection(contains_n).await.unwrap(),
        CollectionResult::Contains(false)
    );
    assert_eq!(store.get(b"never").await.unwrap(), None);
    assert_eq!(store.revision().await.unwrap(), expected);
}
