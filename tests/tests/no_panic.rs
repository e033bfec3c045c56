//! No panic on any input: the public API driven with arbitrary bytes (keys, ranges,
//! transactions, collection operations, leases, watches, codecs, key parsers, store URLs)
//! answers every call with a value or a typed error, never a panic and never an `Internal`
//! error (a broken invariant). 10,000 cases on `MemStore`, fewer on redb, sled, etcd and Redis.

use futures::FutureExt;
use keyplane_core::keyspace::{Codec, Json, Keyring, Text};
use keyplane_core::{
    CollectionKind, CollectionOp, Compare, CompareOp, CompareTarget, Continuation, ErrorKind,
    KeyRange, LeaseId, PutOptions, RangeOptions, Result, Store, Txn, TxnOp, WatchOptions,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::sync::Arc;
use std::time::Duration;

/// Bytes that hit the edges: anything, the separators and reserved bytes, and keys around
/// the length limit.
fn bytes() -> impl Strategy<Value = Vec<u8>> + Clone {
    prop_oneof![
        4 => proptest::collection::vec(any::<u8>(), 0..12),
        3 => proptest::collection::vec(
            prop_oneof![Just(b'a'), Just(b'/'), Just(b':'), Just(0u8), Just(0xff), Just(b'{')],
            0..8,
        ),
        1 => (4090usize..4100).prop_map(|n| vec![b'k'; n]),
    ]
}

fn number() -> impl Strategy<Value = i64> {
    prop_oneof![
        3 => -3i64..40,
        1 => any::<i64>(),
        1 => Just(i64::MAX),
        1 => Just(i64::MIN),
    ]
}

fn kind() -> impl Strategy<Value = CollectionKind> {
    prop_oneof![
        Just(CollectionKind::Set),
        Just(CollectionKind::Map),
        Just(CollectionKind::List)
    ]
}

fn range() -> impl Strategy<Value = KeyRange> {
    prop_oneof![
        bytes().prop_map(KeyRange::Key),
        bytes().prop_map(KeyRange::Prefix),
        (bytes(), proptest::option::of(bytes()))
            .prop_map(|(start, end)| KeyRange::Interval { start, end }),
    ]
}

fn collection_op() -> impl Strategy<Value = CollectionOp> {
    prop_oneof![
        (bytes(), bytes()).prop_map(|(key, member)| CollectionOp::SetAdd { key, member }),
        (bytes(), bytes()).prop_map(|(key, member)| CollectionOp::SetRemove { key, member }),
        (bytes(), bytes()).prop_map(|(key, member)| CollectionOp::SetContains { key, member }),
        bytes().prop_map(|key| CollectionOp::SetMembers { key }),
        (bytes(), proptest::option::of(bytes()), 0usize..5).prop_map(|(key, after, limit)| {
            CollectionOp::SetScan {
                key,
                after: after.map(Continuation::starting_at),
                limit,
            }
        }),
        (bytes(), bytes(), bytes()).prop_map(|(key, field, value)| CollectionOp::MapPut {
            key,
            field,
            value
        }),
        (bytes(), bytes()).prop_map(|(key, field)| CollectionOp::MapGet { key, field }),
        (bytes(), bytes()).prop_map(|(key, field)| CollectionOp::MapDelete { key, field }),
        bytes().prop_map(|key| CollectionOp::MapGetAll { key }),
        (bytes(), bytes()).prop_map(|(key, value)| CollectionOp::ListPush { key, value }),
        (bytes(), bytes()).prop_map(|(key, value)| CollectionOp::ListPushFront { key, value }),
        (bytes(), bytes()).prop_map(|(key, value)| CollectionOp::ListRemove { key, value }),
        (bytes(), number(), number()).prop_map(|(key, start, stop)| CollectionOp::ListRange {
            key,
            start,
            stop
        }),
        bytes().prop_map(|key| CollectionOp::ListRotate { key }),
        (bytes(), bytes(), bytes(), bytes()).prop_map(|(key, map_prefix, map_suffix, field)| {
            CollectionOp::ListRotateGet {
                key,
                map_prefix,
                map_suffix,
                field,
            }
        }),
        bytes().prop_map(|key| CollectionOp::ListLen { key }),
    ]
}

fn compare() -> impl Strategy<Value = Compare> {
    let op = prop_oneof![
        Just(CompareOp::Equal),
        Just(CompareOp::NotEqual),
        Just(CompareOp::Greater),
        Just(CompareOp::Less)
    ];
    let target = prop_oneof![
        number().prop_map(CompareTarget::Version),
        number().prop_map(CompareTarget::CreateRevision),
        number().prop_map(CompareTarget::ModRevision),
        bytes().prop_map(CompareTarget::Value),
        number().prop_map(CompareTarget::Lease),
        (kind(), bytes(), number()).prop_map(|(kind, member, count)| CompareTarget::Member {
            kind,
            member,
            count
        }),
        (bytes(), bytes()).prop_map(|(field, value)| CompareTarget::Field { field, value }),
        (kind(), number()).prop_map(|(kind, size)| CompareTarget::Size { kind, size }),
    ];
    (bytes(), op, target).prop_map(|(key, op, target)| Compare::new(key, op, target))
}

fn txn_op() -> impl Strategy<Value = TxnOp> {
    prop_oneof![
        bytes().prop_map(|key| TxnOp::Get { key }),
        (bytes(), bytes(), proptest::option::of(number())).prop_map(|(key, value, lease)| {
            TxnOp::Put {
                key,
                value,
                lease: lease.map(LeaseId),
            }
        }),
        bytes().prop_map(|key| TxnOp::Delete { key }),
        bytes().prop_map(|prefix| TxnOp::DeletePrefix { prefix }),
        collection_op().prop_map(TxnOp::Collection),
    ]
}

/// One call of the contract.
#[derive(Debug, Clone)]
enum Call {
    Get(Vec<u8>),
    Put(Vec<u8>, Vec<u8>, Option<i64>),
    Delete(Vec<u8>),
    DeletePrefix(Vec<u8>),
    Range(KeyRange, Option<usize>, Option<i64>, u8),
    Txn(Txn),
    Collection(CollectionOp),
    LeaseGrant(u64),
    LeaseKeepAlive(i64),
    LeaseRevoke(i64),
    LeaseTimeToLive(i64),
    Watch(KeyRange, Option<i64>, u8),
    Compact(i64),
}

fn call() -> impl Strategy<Value = Call> {
    prop_oneof![
        bytes().prop_map(Call::Get),
        (bytes(), bytes(), proptest::option::of(number())).prop_map(|(k, v, l)| Call::Put(k, v, l)),
        bytes().prop_map(Call::Delete),
        bytes().prop_map(Call::DeletePrefix),
        (
            range(),
            proptest::option::of(0usize..4),
            proptest::option::of(number()),
            any::<u8>()
        )
            .prop_map(|(r, limit, rev, flags)| Call::Range(r, limit, rev, flags)),
        (
            proptest::collection::vec(compare(), 0..3),
            proptest::collection::vec(txn_op(), 0..4),
            proptest::collection::vec(txn_op(), 0..3)
        )
            .prop_map(|(c, s, f)| Call::Txn(Txn::new().when(c).and_then(s).or_else(f))),
        collection_op().prop_map(Call::Collection),
        prop_oneof![Just(0u64), 1u64..5_000, Just(u64::MAX)].prop_map(Call::LeaseGrant),
        number().prop_map(Call::LeaseKeepAlive),
        number().prop_map(Call::LeaseRevoke),
        number().prop_map(Call::LeaseTimeToLive),
        (range(), proptest::option::of(number()), any::<u8>())
            .prop_map(|(r, s, f)| Call::Watch(r, s, f)),
        // Compaction only to the past a store cannot have reached: it changes nothing a later
        // case could depend on, yet exercises the checks.
        prop_oneof![Just(i64::MIN), -5i64..1, Just(i64::MAX)].prop_map(Call::Compact),
    ]
}

/// Runs one call; any error must be typed and not a broken invariant.
async fn run(store: &dyn Store, call: Call) -> Result<()> {
    match call {
        Call::Get(k) => store.get(&k).await.map(drop),
        Call::Put(k, v, lease) => {
            let mut opts = PutOptions::default();
            if let Some(l) = lease {
                opts = opts.lease(LeaseId(l));
            }
            store.put(&k, &v, opts).await.map(drop)
        }
        Call::Delete(k) => store.delete(&k).await.map(drop),
        Call::DeletePrefix(k) => store.delete_prefix(&k).await.map(drop),
        Call::Range(r, limit, rev, flags) => {
            let mut opts = RangeOptions::new(r);
            if let Some(limit) = limit {
                opts = opts.limit(limit);
            }
            if let Some(rev) = rev {
                opts = opts.at_revision(rev);
            }
            if flags & 1 != 0 {
                opts = opts.keys_only();
            }
            if flags & 2 != 0 {
                opts = opts.count_only();
            }
            if flags & 4 != 0 {
                opts = opts.with_collections();
            }
            store.range(opts).await.map(drop)
        }
        Call::Txn(txn) => store.txn(txn).await.map(drop),
        Call::Collection(op) => store.collection(op).await.map(drop),
        Call::LeaseGrant(ms) => {
            let grant = store.lease_grant(Duration::from_millis(ms)).await?;
            // Leases granted here end at once, so runs do not pile them up.
            store.lease_revoke(grant.id).await
        }
        Call::LeaseKeepAlive(id) => store.lease_keep_alive(LeaseId(id)).await.map(drop),
        Call::LeaseRevoke(id) => store.lease_revoke(LeaseId(id)).await,
        Call::LeaseTimeToLive(id) => store.lease_time_to_live(LeaseId(id)).await.map(drop),
        Call::Watch(r, start, flags) => {
            let opts = WatchOptions {
                range: r,
                start_revision: start,
                group_starts: None,
                prev: flags & 1 != 0,
                collections: flags & 2 != 0,
                progress: flags & 4 != 0,
            };
            let mut watch = store.watch(opts).await?;
            // Whatever it has ready now; an error item must be typed too.
            match futures::StreamExt::next(&mut watch).now_or_never() {
                Some(Some(Err(e))) => Err(e),
                _ => Ok(()),
            }
        }
        Call::Compact(rev) => store.compact(rev).await,
    }
}

/// Runs `cases` random call sequences on the store `make` gives (none: skipped).
fn check<Fut>(make: fn() -> Fut, cases: u32)
where
    Fut: std::future::Future<Output = Option<Arc<dyn Store>>>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let Some(store) = runtime.block_on(make()) else {
        return;
    };
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&proptest::collection::vec(call(), 1..4), |calls| {
            for call in calls {
                let shown = format!("{call:?}");
                let answer = runtime.block_on(async {
                    tokio::time::timeout(Duration::from_secs(30), run(store.as_ref(), call)).await
                });
                match answer {
                    Err(_) => prop_assert!(false, "no answer within 30 s: {}", shown),
                    Ok(Err(e)) => {
                        prop_assert!(e.kind() != ErrorKind::Internal, "{}: {}", shown, e)
                    }
                    Ok(Ok(())) => {}
                }
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn memory_answers_every_input_with_a_value_or_a_typed_error() {
    check(keyplane_tests::backends::memory, 10_000);
}

#[test]
fn redb_answers_every_input_with_a_value_or_a_typed_error() {
    check(keyplane_tests::backends::redb, 1_000);
}

#[test]
fn sled_answers_every_input_with_a_value_or_a_typed_error() {
    check(keyplane_tests::backends::sled, 1_000);
}

#[test]
fn etcd_answers_every_input_with_a_value_or_a_typed_error() {
    check(keyplane_tests::backends::etcd, 300);
}

#[test]
fn redis_answers_every_input_with_a_value_or_a_typed_error() {
    check(keyplane_tests::backends::redis, 300);
}

proptest! {
    #![proptest_config(Config { cases: 10_000, failure_persistence: None, ..Config::default() })]

    /// Codecs, envelopes and the schema catalog's key parser take any bytes.
    #[test]
    fn codecs_and_key_parsers_take_any_bytes(raw in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = Text.decode(&raw);
        let _ = Json::<serde_json::Value>::new().decode(&raw);
        let _ = Keyring::envelope_key_id(&raw);
        let ring = Keyring::new("k", keyplane_core::keyspace::EncryptionKey::from_bytes([1; 32]))
            .unwrap();
        let _ = ring.decrypt_for(&raw, &raw);
        let text = String::from_utf8_lossy(&raw);
        let _ = keyplane_schemas::parse_any(&text);
        let _ = keyplane_core::raw::validate_key(&raw);
    }

    /// Store URLs of any form are refused or opened, never a panic. (Network URLs are only
    /// checked here, as `open` checks them before connecting; redb and sled URLs are
    /// `store_urls_of_embedded_stores_and_redis`'.)
    #[test]
    fn store_urls_of_any_form(tail in "[a-z0-9:/@?=&%.,\\[\\]-]{0,24}", scheme in 0usize..5) {
        let url = format!(
            "{}{tail}",
            ["mem://", "etcd://", "", "foo://", "mem:/"][scheme]
        );
        if url.starts_with("etcd://") {
            let _ = keyplane_etcd::EtcdConfig::from_url(&url);
        } else {
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let opened = runtime.block_on(keyplane::open(&url));
            if let Err(e) = opened {
                prop_assert!(e.kind() != ErrorKind::Internal, "{url}: {e}");
            }
        }
    }
}

proptest! {
    #![proptest_config(Config { cases: 300, failure_persistence: None, ..Config::default() })]

    /// Redis URLs of every scheme are checked as `open` checks them before it connects, and
    /// redb and sled URLs opened inside a temporary directory: each is refused with a typed
    /// error or accepted, never a panic.
    #[test]
    fn store_urls_of_embedded_stores_and_redis(
        tail in "[a-z0-9:/@?=&%,\\[\\]{}-]{0,24}",
        scheme in 0usize..6,
    ) {
        if scheme >= 4 {
            let dir = tempfile::tempdir().unwrap();
            let url = format!("{}{}/{tail}", ["sled://", "redb://"][scheme - 4], dir.path().display());
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            if let Err(e) = runtime.block_on(keyplane::open(&url)) {
                prop_assert!(e.kind() != ErrorKind::Internal, "{url}: {e}");
            }
        } else {
            let url = format!(
                "{}{tail}",
                ["redis://", "rediss://", "redis+cluster://", "rediss+cluster://"][scheme]
            );
            if let Err(e) = keyplane_redis::RedisConfig::new(url.as_str()).validate() {
                prop_assert!(e.kind() != ErrorKind::Internal, "{url}: {e}");
            }
        }
    }
}
