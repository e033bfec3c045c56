//! Helpers shared by the conformance cases: random roots, snapshots, error and event checks.

use futures::StreamExt;
use keyplane_core::{
    CollectionEntry, CollectionOp, CollectionResult, Entry, ErrorKind, Event, PutOptions,
    RangeOptions, Result, Store, WatchBatch, WatchStream,
};
use std::fmt::Debug;
use std::time::Duration;

/// The bytes of `s`.
pub(crate) fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

/// Runs one collection op that must succeed (the panic names the op).
pub(crate) async fn run(store: &dyn Store, op: CollectionOp) -> CollectionResult {
    store
        .collection(op.clone())
        .await
        .unwrap_or_else(|e| panic!("{op:?}: {e}"))
}

/// How long a case waits for an event that must come (a watch batch, a lease expiry).
pub(crate) const EVENT_TIMEOUT: Duration = Duration::from_secs(20);

/// A fresh random key root, `ct-<uuid>/`, so that a case sees only its own keys.
pub(crate) fn root() -> Vec<u8> {
    format!("ct-{}/", uuid::Uuid::new_v4()).into_bytes()
}

/// `root` followed by `suffix`.
pub(crate) fn key(root: &[u8], suffix: impl AsRef<[u8]>) -> Vec<u8> {
    let mut k = root.to_vec();
    k.extend_from_slice(suffix.as_ref());
    k
}

/// Writes a value, panicking on error; returns the revision of the write.
pub(crate) async fn put(store: &dyn Store, key: &[u8], value: impl AsRef<[u8]>) -> i64 {
    store
        .put(key, value.as_ref(), PutOptions::default())
        .await
        .unwrap_or_else(|e| panic!("put {}: {e}", keyplane_core::raw::escape_bytes(key)))
        .revision
}

/// Every entry under `prefix`, read page by page with a small limit.
pub(crate) async fn snapshot(store: &dyn Store, prefix: &[u8]) -> Vec<Entry> {
    collect_pages(store, RangeOptions::prefix(prefix), 7).await
}

/// Every entry of a range read, page by page with `page` entries per page.
pub(crate) async fn collect_pages(
    store: &dyn Store,
    opts: RangeOptions,
    page: usize,
) -> Vec<Entry> {
    let mut all = Vec::new();
    let mut opts = opts.limit(page);
    for _ in 0..100_000 {
        let result = store.range(opts.clone()).await.expect("range page");
        assert!(result.entries.len() <= page, "a page exceeds its limit");
        all.extend(result.entries);
        match result.next {
            Some(next) => opts = opts.after(next),
            None => return all,
        }
    }
    panic!("paging did not terminate");
}

/// What every page of a range read held, concatenated.
pub(crate) struct Pages {
    /// The entries, page after page.
    pub(crate) entries: Vec<Entry>,
    /// The collections, page after page.
    pub(crate) collections: Vec<CollectionEntry>,
    /// The revision each page was read at.
    pub(crate) revisions: Vec<i64>,
}

/// Every page of `opts` from where it starts (its limit, if any, is the page size).
pub(crate) async fn all_pages(store: &dyn Store, mut opts: RangeOptions) -> Pages {
    let mut pages = Pages {
        entries: Vec::new(),
        collections: Vec::new(),
        revisions: Vec::new(),
    };
    loop {
        let page = store.range(opts.clone()).await.expect("range page");
        pages.entries.extend(page.entries);
        pages.collections.extend(page.collections);
        pages.revisions.push(page.revision);
        match page.next {
            Some(next) => opts = opts.after(next),
            None => return pages,
        }
    }
}

/// The keys of `entries`, with `root` stripped, as strings for readable assertions.
pub(crate) fn names(root: &[u8], entries: &[Entry]) -> Vec<String> {
    entries.iter().map(|e| rel(root, &e.key)).collect()
}

/// A key relative to `root`, escaped.
pub(crate) fn rel(root: &[u8], key: &[u8]) -> String {
    keyplane_core::raw::escape_bytes(key.strip_prefix(root).unwrap_or(key))
}

/// Asserts that `result` is an error of `kind`.
#[track_caller]
pub(crate) fn expect_kind<T: Debug>(result: Result<T>, kind: ErrorKind) {
    match result {
        Ok(v) => panic!("expected a {kind} error, got Ok({v:?})"),
        Err(e) => assert_eq!(e.kind(), kind, "wrong error kind: {e}"),
    }
}

/// The next batch of a watch, failing the case on an error, the end of the stream, or no batch
/// within [`EVENT_TIMEOUT`].
pub(crate) async fn next_batch(stream: &mut WatchStream) -> WatchBatch {
    match tokio::time::timeout(EVENT_TIMEOUT, stream.next()).await {
        Ok(Some(Ok(batch))) => {
            assert!(!batch.events.is_empty(), "a watch batch is never empty");
            batch
        }
        Ok(Some(Err(e))) => panic!("watch failed: {e}"),
        Ok(None) => panic!("watch ended without an error"),
        Err(_) => panic!("no watch batch within {EVENT_TIMEOUT:?}"),
    }
}

/// Asserts that the watch has nothing more to deliver: puts `sentinel` (a key the watch
/// covers) and expects the next batch to be exactly that put. Batches come in revision order,
/// so anything else pending would arrive first; no quiet period is waited for.
pub(crate) async fn expect_quiet(store: &dyn Store, stream: &mut WatchStream, sentinel: &[u8]) {
    let revision = put(store, sentinel, "sentinel").await;
    let batch = next_batch(stream).await;
    match &batch.events[..] {
        [Event::Put { entry, .. }] if entry.key == sentinel && batch.revision == revision => {}
        _ => {
            panic!("expected nothing before the sentinel put at revision {revision}, got {batch:?}")
        }
    }
}

/// A compact description of an event: `put <key>=<value>` or `delete <key>`.
pub(crate) fn describe(root: &[u8], event: &Event) -> String {
    match event {
        Event::Put { entry, .. } => format!(
            "put {}={}",
            rel(root, &entry.key),
            keyplane_core::raw::escape_bytes(&entry.value)
        ),
        Event::Delete { key, .. } => format!("delete {}", rel(root, key)),
        Event::Collection(c) => format!("{:?} {} {:?}", c.kind, rel(root, &c.key), c.change),
    }
}

/// The described events of a batch.
pub(crate) fn describe_batch(root: &[u8], batch: &WatchBatch) -> Vec<String> {
    batch.events.iter().map(|e| describe(root, e)).collect()
}
