//! Transactions: every compare target and operator, both branches and their results.

use super::support::{key, names, put, root, snapshot};
use keyplane_core::{Compare, CompareOp, CompareTarget, OpResult, PutOptions, Store, Txn, TxnOp};
use std::sync::Arc;
use std::time::Duration;

use CompareOp::{Equal, Greater, Less, NotEqual};

/// Runs a txn guarded by `compares` whose branches only read, and returns whether it took the
/// success branch (checking that the branch's results came back).
async fn holds(store: &dyn Store, compares: Vec<Compare>) -> bool {
    let probe = compares[0].key.clone();
    let resp = store
        .txn(
            Txn::new()
                .when(compares.clone())
                .and_then([TxnOp::get(&probe)])
                .or_else([TxnOp::get(&probe), TxnOp::get(&probe)]),
        )
        .await
        .unwrap_or_else(|e| panic!("txn with {compares:?}: {e}"));
    let expected = if resp.succeeded { 1 } else { 2 };
    assert_eq!(
        resp.results.len(),
        expected,
        "one result per op of the branch that ran"
    );
    resp.succeeded
}

/// Asserts, for each `(op, given, expected)`, whether `new(key, op, target(given))` holds.
async fn check_table<T: Copy + std::fmt::Debug>(
    store: &dyn Store,
    key: &[u8],
    target: impl Fn(T) -> CompareTarget,
    table: &[(CompareOp, T, bool)],
) {
    for &(op, given, expected) in table {
        let compare = Compare::new(key, op, target(given));
        assert_eq!(
            holds(store, vec![compare.clone()]).await,
            expected,
            "{compare:?}"
        );
    }
}

/// Compares on `version`, with every operator, for a present and an absent key.
pub async fn txn_compare_version(store: Arc<dyn Store>) {
    let root = root();
    let k = key(&root, "k");
    put(&*store, &k, "a").await;
    put(&*store, &k, "b").await;
    let table = [
        (Equal, 2, true),
        (Equal, 1, false),
        (NotEqual, 1, true),
        (NotEqual, 2, false),
        (Greater, 1, true),
        (Greater, 2, false),
        (Less, 3, true),
        (Less, 2, false),
    ];
    check_table(&*store, &k, CompareTarget::Version, &table).await;
    let missing = key(&root, "missing");
    let absent = [(Equal, 0, true), (Greater, 0, false), (Less, 1, true)];
    check_table(&*store, &missing, CompareTarget::Version, &absent).await;
}

/// Compares on `mod_revision`, with every operator; 0 for an absent key.
pub async fn txn_compare_mod_revision(store: Arc<dyn Store>) {
    let root = root();
    let k = key(&root, "k");
    put(&*store, &k, "a").await;
    let r = put(&*store, &k, "b").await;
    let table = [
        (Equal, r, true),
        (Equal, r - 1, false),
        (NotEqual, r - 1, true),
        (Greater, r - 1, true),
        (Greater, r, false),
        (Less, r + 1, true),
        (Less, r, false),
    ];
    check_table(&*store, &k, CompareTarget::ModRevision, &table).await;
    let missing = key(&root, "missing");
    let absent = [(Equal, 0, true), (Less, r, true), (Greater, 0, false)];
    check_table(&*store, &missing, CompareTarget::ModRevision, &absent).await;
}

/// Compares on `create_revision`, with every operator; 0 for an absent key.
pub async fn txn_compare_create_revision(store: Arc<dyn Store>) {
    let root = root();
    let k = key(&root, "k");
    let c = put(&*store, &k, "a").await;
    let m = put(&*store, &k, "b").await;
    let table = [
        (Equal, c, true),
        (Equal, m, false),
        (NotEqual, m, true),
        (Greater, c - 1, true),
        (Greater, c, false),
        (Less, m, true),
        (Less, c, false),
    ];
    check_table(&*store, &k, CompareTarget::CreateRevision, &table).await;
    let missing = key(&root, "missing");
    let absent = [(Equal, 0, true), (NotEqual, 0, false)];
    check_table(&*store, &missing, CompareTarget::CreateRevision, &absent).await;
}

/// Compares on the value, in byte order; any value compare on an absent key is false.
pub async fn txn_compare_value(store: Arc<dyn Store>) {
    let root = root();
    let k = key(&root, "k");
    put(&*store, &k, "b").await;
    let table: [(CompareOp, &[u8], bool); 9] = [
        (Equal, b"b", true),
        (Equal, b"a", false),
        (NotEqual, b"a", true),
        (NotEqual, b"b", false),
        (Greater, b"a", true),
        (Greater, b"ab", true),
        (Greater, b"b", false),
        (Less, b"c", true),
        (Less, b"b", false),
    ];
    check_table(
        &*store,
        &k,
        |v: &[u8]| CompareTarget::Value(v.to_vec()),
        &table,
    )
    .await;
    let missing = key(&root, "missing");
    let absent: [(CompareOp, &[u8], bool); 3] = [
        (Equal, b"", false),
        (NotEqual, b"x", false),
        (Less, b"z", false),
    ];
    check_table(
        &*store,
        &missing,
        |v: &[u8]| CompareTarget::Value(v.to_vec()),
        &absent,
    )
    .await;
    // An empty value is a value: it exists and equals "".
    let empty = key(&root, "empty");
    put(&*store, &empty, "").await;
    assert!(holds(&*store, vec![Compare::value(&empty, Equal, "")]).await);
}

/// `exists` and `absent` follow the key's life: absent, then present, then absent again.
pub async fn txn_compare_exists_and_absent(store: Arc<dyn Store>) {
    let root = root();
    let k = key(&root, "k");
    assert!(!holds(&*store, vec![Compare::exists(&k)]).await);
    assert!(holds(&*store, vec![Compare::absent(&k)]).await);
    put(&*store, &k, "").await;
    assert!(holds(&*store, vec![Compare::exists(&k)]).await);
    assert!(!holds(&*store, vec![Compare::absent(&k)]).await);
    store.delete(&k).await.unwrap();
    assert!(holds(&*store, vec![Compare::absent(&k)]).await);
}

/// Compares on the lease a key is attached to (0 for none, and for absent keys).
pub async fn txn_compare_lease(store: Arc<dyn Store>) {
    let root = root();
    let lease = store.lease_grant(Duration::from_secs(60)).await.unwrap();
    let leased = key(&root, "leased");
    let plain = key(&root, "plain");
    store
        .put(&leased, b"v", PutOptions::default().lease(lease.id))
        .await
        .unwrap();
    put(&*store, &plain, "v").await;
    let id = lease.id.0;
    check_table(
        &*store,
        &leased,
        CompareTarget::Lease,
        &[(Equal, id, true), (NotEqual, id, false), (Equal, 0, false)],
    )
    .await;
    check_table(
        &*store,
        &plain,
        CompareTarget::Lease,
        &[(Equal, 0, true), (Equal, id, false)],
    )
    .await;
    check_table(
        &*store,
        &key(&root, "missing"),
        CompareTarget::Lease,
        &[(Equal, 0, true)],
    )
    .await;
    store.lease_revoke(lease.id).await.unwrap();
}

/// Each branch runs its puts, gets, deletes and prefix deletes in order with one result per
/// op; the other branch writes nothing.
pub async fn txn_branches_and_results(store: Arc<dyn Store>) {
    let root = root();
    let guard = key(&root, "guard");
    for k in ["old", "dir/1", "dir/2", "other/1"] {
        put(&*store, &key(&root, k), k).await;
    }
    let branch = |tag: &str| {
        vec![
            TxnOp::get(key(&root, "old")),
            TxnOp::put(key(&root, format!("{tag}-new")), tag),
            TxnOp::get(key(&root, "absent")),
            TxnOp::delete(key(&root, if tag == "s" { "old" } else { "other/1" })),
            TxnOp::delete_prefix(key(&root, if tag == "s" { "dir/" } else { "zzz/" })),
        ]
    };
    // The guard is absent: the failure branch runs.
    let failed = store
        .txn(
            Txn::new()
                .when([Compare::exists(&guard)])
                .and_then(branch("s"))
                .or_else(branch("f")),
        )
        .await
        .unwrap();
    assert!(!failed.succeeded);
    match &failed.results[..] {
        [
            OpResult::Get(Some(old)),
            OpResult::Put,
            OpResult::Get(None),
            OpResult::Delete { deleted: 1 },
            OpResult::Delete { deleted: 0 },
        ] => assert_eq!(old.value, b"old"),
        other => panic!("failure branch results: {other:?}"),
    }
    assert_eq!(
        names(&root, &snapshot(&*store, &root).await),
        ["dir/1", "dir/2", "f-new", "old"]
    );
    put(&*store, &guard, "").await;
    let succeeded = store
        .txn(
            Txn::new()
                .when([Compare::exists(&guard)])
                .and_then(branch("s"))
                .or_else(branch("f")),
        )
        .await
        .unwrap();
    assert!(succeeded.succeeded);
    match &succeeded.results[..] {
        [
            OpResult::Get(Some(_)),
            OpResult::Put,
            OpResult::Get(None),
            OpResult::Delete { deleted: 1 },
            OpResult::Delete { deleted: 2 },
        ] => {}
        other => panic!("success branch results: {other:?}"),
    }
    assert_eq!(
        names(&root, &snapshot(&*store, &root).await),
        ["f-new", "guard", "s-new"]
    );
    let s_new = store.get(&key(&root, "s-new")).await.unwrap().unwrap();
    assert_eq!(s_new.mod_revision, succeeded.revision);
    // An empty branch is valid and writes nothing.
    let empty = store
        .txn(Txn::new().when([Compare::absent(&guard)]))
        .await
        .unwrap();
    assert!(!empty.succeeded && empty.results.is_empty());
}

/// Every compare must hold for the success branch; one false compare selects the failure one.
pub async fn txn_all_compares_must_hold(store: Arc<dyn Store>) {
    let root = root();
    let a = key(&root, "a");
    let b = key(&root, "b");
    put(&*store, &a, "1").await;
    put(&*store, &b, "2").await;
    assert!(
        holds(
            &*store,
            vec![
                Compare::value(&a, Equal, "1"),
                Compare::value(&b, Equal, "2")
            ]
        )
        .await
    );
    assert!(
        !holds(
            &*store,
            vec![
                Compare::value(&a, Equal, "1"),
                Compare::value(&b, Equal, "3")
            ]
        )
        .await
    );
    assert!(
        !holds(
            &*store,
            vec![
                Compare::value(&a, Equal, "0"),
                Compare::value(&b, Equal, "2")
            ]
        )
        .await
    );
    assert!(
        holds(
            &*store,
            vec![Compare::exists(&a), Compare::absent(key(&root, "c"))]
        )
        .await
    );
}
