//! The front refuses every bad request before the driver sees it: a driver that records its
//! calls sees none of the refused ones and every accepted one.

use crate::capabilities::{Capabilities, ForeignWrites, Retention, Sharding, Support};
use crate::collections::{CollectionOp, CollectionResult};
use crate::driver::{Checked, PutRequest};
use crate::entry::Entry;
use crate::error::{Error, ErrorKind, Result};
use crate::lease::{LeaseGrant, LeaseId, LeaseInfo};
use crate::range::{KeyRange, RangeOptions, RangeResult};
use crate::status::ServerStatus;
use crate::store::{DeletePrefixResult, DeleteResult, PutOptions, PutResult, Store};
use crate::txn::{Compare, CompareOp, Txn, TxnOp, TxnResponse};
use crate::watch::{WatchOptions, WatchStream};
use async_trait::async_trait;
use std::sync::Mutex;
use std::time::Duration;

/// Keys under this prefix are the recording driver's own, as Redis reserves its internal
/// prefix.
const RESERVED: &[u8] = b"__internal/";

/// A driver that records the name of every call that reaches it and answers each with an
/// error (the front's behaviour is what is under test, not the driver's).
struct Recorder {
    caps: Capabilities,
    calls: Mutex<Vec<&'static str>>,
}

impl Recorder {
    fn new() -> Self {
        Recorder {
            caps: Capabilities {
                backend: "recorder",
                max_txn_ops: 4,
                max_value_bytes: 8,
                max_key_bytes: crate::raw::MAX_KEY_LEN,
                ttl_granularity: Duration::from_millis(1),
                history_retention: Retention::Revisions(10),
                txn: Support::Native,
                leases: Support::Native,
                watch: Support::Native,
                collections: Support::Native,
                persistent: false,
                foreign_writes: ForeignWrites::Immediate,
                sharding: Sharding::Unsharded,
            },
            calls: Mutex::new(Vec::new()),
        }
    }

    fn reached(&self, call: &'static str) -> Error {
        self.calls.lock().unwrap().push(call);
        Error::internal("reached the driver")
    }

    fn calls(&self) -> Vec<&'static str> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }
}

#[async_trait]
impl crate::driver::Driver for Recorder {
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }
    fn check_key(&self, key: &[u8]) -> Result<()> {
        if key.starts_with(RESERVED) {
            return Err(Error::invalid_key("reserved"));
        }
        Ok(())
    }
    async fn revision(&self) -> Result<i64> {
        Err(self.reached("revision"))
    }
    async fn range(&self, _: Checked<RangeOptions>) -> Result<RangeResult> {
        Err(self.reached("range"))
    }
    async fn txn(&self, _: Checked<Txn>) -> Result<TxnResponse> {
        Err(self.reached("txn"))
    }
    async fn lease_grant(&self, _: Duration) -> Result<LeaseGrant> {
        Err(self.reached("lease_grant"))
    }
    async fn lease_keep_alive(&self, _: LeaseId) -> Result<Duration> {
        Err(self.reached("lease_keep_alive"))
    }
    async fn lease_revoke(&self, _: LeaseId) -> Result<()> {
        Err(self.reached("lease_revoke"))
    }
    async fn lease_time_to_live(&self, _: LeaseId) -> Result<LeaseInfo> {
        Err(self.reached("lease_time_to_live"))
    }
    async fn lease_list(&self) -> Result<Vec<LeaseId>> {
        Err(self.reached("lease_list"))
    }
    async fn watch(&self, _: Checked<WatchOptions>) -> Result<WatchStream> {
        Err(self.reached("watch"))
    }
    async fn compact(&self, _: i64) -> Result<()> {
        Err(self.reached("compact"))
    }
    async fn server_status(&self) -> Result<ServerStatus> {
        Err(self.reached("server_status"))
    }
    async fn get(&self, _: Checked<&[u8]>) -> Result<Option<Entry>> {
        Err(self.reached("get"))
    }
    async fn put(&self, _: Checked<PutRequest<'_>>) -> Result<PutResult> {
        Err(self.reached("put"))
    }
    async fn delete(&self, _: Checked<&[u8]>) -> Result<DeleteResult> {
        Err(self.reached("delete"))
    }
    async fn delete_prefix(&self, _: Checked<&[u8]>) -> Result<DeletePrefixResult> {
        Err(self.reached("delete_prefix"))
    }
    async fn collection(&self, _: Checked<CollectionOp>) -> Result<CollectionResult> {
        Err(self.reached("collection"))
    }
}

/// `result` is the front's refusal of kind `kind`, and the driver saw no call.
#[track_caller]
fn refused<T: std::fmt::Debug>(driver: &Recorder, result: Result<T>, kind: ErrorKind) {
    let err = result.expect_err("the front refuses it");
    assert_eq!(err.kind(), kind, "{err:?}");
    assert_eq!(driver.calls(), Vec::<&str>::new(), "{err:?}");
}

/// `result` came from the driver's `call`.
#[track_caller]
fn reached<T: std::fmt::Debug>(driver: &Recorder, result: Result<T>, call: &'static str) {
    let err = result.expect_err("the recorder answers with an error");
    assert_eq!(err.kind(), ErrorKind::Internal, "{err:?}");
    assert_eq!(driver.calls(), vec![call]);
}

fn reserved(name: &str) -> Vec<u8> {
    [RESERVED, name.as_bytes()].concat()
}

#[tokio::test]
async fn single_key_calls_are_checked_before_the_driver() {
    let d = Recorder::new();
    let put = PutOptions::default();
    for bad in [&b""[..], b"a\0b", &reserved("k"), &[b'k'; 4097]] {
        let kind = ErrorKind::InvalidKey;
        refused(&d, d.get(bad).await, kind);
        refused(&d, d.put(bad, b"v", put).await, kind);
        refused(&d, d.delete(bad).await, kind);
    }
    refused(
        &d,
        d.put(b"k", b"nine byte", put).await,
        ErrorKind::InvalidValue,
    );
    refused(&d, d.delete_prefix(b"").await, ErrorKind::InvalidKey);
    refused(
        &d,
        d.delete_prefix(&reserved("")).await,
        ErrorKind::InvalidKey,
    );

    reached(&d, d.get(b"k").await, "get");
    reached(&d, d.put(b"k", b"eight by", put).await, "put");
    reached(&d, d.delete(b"k").await, "delete");
    reached(&d, d.delete_prefix(b"k/").await, "delete_prefix");
}

#[tokio::test]
async fn ranges_and_watches_are_checked_before_the_driver() {
    let d = Recorder::new();
    let key = |k: &[u8]| KeyRange::Key(k.to_vec());
    refused(
        &d,
        d.range(RangeOptions::new(key(b""))).await,
        ErrorKind::InvalidKey,
    );
    refused(
        &d,
        d.range(RangeOptions::new(key(&reserved("k")))).await,
        ErrorKind::InvalidKey,
    );
    let no_rows = RangeOptions::new(KeyRange::Prefix(b"p/".to_vec())).limit(0);
    refused(&d, d.range(no_rows).await, ErrorKind::InvalidArgument);
    let backwards = KeyRange::Interval {
        start: b"b".to_vec(),
        end: Some(b"a".to_vec()),
    };
    refused(
        &d,
        d.range(RangeOptions::new(backwards.clone())).await,
        ErrorKind::InvalidArgument,
    );

    let watch = |range| WatchOptions {
        range,
        ..WatchOptions::prefix(b"p/")
    };
    refused(
        &d,
        d.watch(watch(key(b"a\0"))).await.map(|_| ()),
        ErrorKind::InvalidKey,
    );
    refused(
        &d,
        d.watch(watch(key(&reserved("k")))).await.map(|_| ()),
        ErrorKind::InvalidKey,
    );
    refused(
        &d,
        d.watch(watch(backwards)).await.map(|_| ()),
        ErrorKind::InvalidArgument,
    );
    let mut groups = WatchOptions::prefix(b"p/");
    groups.group_starts = Some([(b"g".to_vec(), 1)].into());
    refused(
        &d,
        d.watch(groups).await.map(|_| ()),
        ErrorKind::InvalidArgument,
    );

    reached(&d, d.range(RangeOptions::new(key(b"k"))).await, "range");
    reached(
        &d,
        d.range(RangeOptions::new(KeyRange::Prefix(reserved(""))))
            .await,
        "range",
    );
    reached(
        &d,
        d.watch(WatchOptions::prefix(b"p/")).await.map(|_| ()),
        "watch",
    );
}

#[tokio::test]
async fn transactions_and_collections_are_checked_before_the_driver() {
    let d = Recorder::new();
    let too_many = Txn::new().and_then((0..5).map(|i| TxnOp::get(format!("k{i}"))));
    refused(&d, d.txn(too_many).await, ErrorKind::TxnTooLarge);
    let twice = Txn::new().and_then([TxnOp::put("k", "1"), TxnOp::put("k", "2")]);
    refused(&d, d.txn(twice).await, ErrorKind::TxnConflict);
    let big = Txn::new().or_else([TxnOp::put("k", "nine byte")]);
    refused(&d, d.txn(big).await, ErrorKind::InvalidValue);
    let compare = Compare::value(reserved("k"), CompareOp::Equal, "1");
    refused(
        &d,
        d.txn(Txn::new().when([compare])).await,
        ErrorKind::InvalidKey,
    );
    let bad_compare = Compare::value("", CompareOp::Equal, "1");
    refused(
        &d,
        d.txn(Txn::new().when([bad_compare])).await,
        ErrorKind::InvalidKey,
    );
    let prefix = Txn::new().and_then([TxnOp::delete_prefix(reserved(""))]);
    refused(&d, d.txn(prefix).await, ErrorKind::InvalidKey);

    let push = |key: Vec<u8>, value: &[u8]| CollectionOp::ListPush {
        key,
        value: value.to_vec(),
    };
    refused(
        &d,
        d.collection(push(b"".to_vec(), b"v")).await,
        ErrorKind::InvalidKey,
    );
    refused(
        &d,
        d.collection(push(reserved("q"), b"v")).await,
        ErrorKind::InvalidKey,
    );
    refused(
        &d,
        d.collection(push(b"q".to_vec(), b"nine byte")).await,
        ErrorKind::InvalidValue,
    );
    let rotate = CollectionOp::ListRotateGet {
        key: b"q".to_vec(),
        map_prefix: reserved("m/"),
        map_suffix: b"/m".to_vec(),
        field: b"f".to_vec(),
    };
    refused(&d, d.collection(rotate).await, ErrorKind::InvalidKey);

    reached(
        &d,
        d.txn(Txn::new().and_then([TxnOp::put("k", "1")])).await,
        "txn",
    );
    reached(
        &d,
        d.collection(push(b"q".to_vec(), b"v")).await,
        "collection",
    );
}

#[tokio::test]
async fn calls_without_a_request_reach_the_driver() {
    let d = Recorder::new();
    reached(&d, d.revision().await, "revision");
    reached(&d, d.compact(1).await, "compact");
    reached(
        &d,
        d.lease_grant(Duration::from_secs(1)).await,
        "lease_grant",
    );
    reached(&d, d.lease_keep_alive(LeaseId(1)).await, "lease_keep_alive");
    reached(&d, d.lease_revoke(LeaseId(1)).await, "lease_revoke");
    reached(
        &d,
        d.lease_time_to_live(LeaseId(1)).await,
        "lease_time_to_live",
    );
    reached(&d, d.lease_list().await, "lease_list");
    reached(&d, d.server_status().await, "server_status");
}
