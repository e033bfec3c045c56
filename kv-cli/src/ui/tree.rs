//! The key tree, one directory level at a time: the children of a prefix, page by page,
//! each a directory (the prefix up to the next separator) or a key.
//!
//! A directory is found from its first key, then skipped whole: the next read starts after
//! every key under it. A level of a few directories over 100,000 keys costs a read per
//! directory, not per key, and a level of many keys costs a read per page.

use crate::error::CliResult;
use keyplane::raw::prefix_end;
use keyplane::{Continuation, KeyRange, RangeOptions, Store};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Where a page of a level starts: at a key (after a directory, the first key past it), or
/// just after one (after a key). As a cursor: `@KEY` or `>KEY`.
enum Start {
    At(Vec<u8>),
    After(Vec<u8>),
}

impl Start {
    fn cursor(&self) -> String {
        match self {
            Start::At(key) => format!("@{}", String::from_utf8_lossy(key)),
            Start::After(key) => format!(">{}", String::from_utf8_lossy(key)),
        }
    }

    fn parse(cursor: &str) -> Option<Start> {
        match cursor.split_at_checked(1)? {
            ("@", key) => Some(Start::At(key.as_bytes().to_vec())),
            (">", key) => Some(Start::After(key.as_bytes().to_vec())),
            _ => None,
        }
    }
}

/// One level of the tree under `prefix`: at most `limit` children from the cursor `after`
/// on (the `next` of the previous page), and the cursor of the next page.
///
/// # Errors
/// Exit code 2 for a cursor that is not one; store errors.
pub(crate) async fn children(
    store: &dyn Store,
    prefix: &str,
    after: Option<&str>,
    limit: usize,
) -> CliResult<(Vec<Value>, Option<String>)> {
    let end = prefix_end(prefix.as_bytes());
    let mut start = match after {
        None => Start::At(prefix.as_bytes().to_vec()),
        Some(cursor) => Start::parse(cursor)
            .ok_or_else(|| crate::error::CliError::invalid(format!("not a cursor: {cursor:?}")))?,
    };
    let mut out = Vec::new();
    loop {
        let (from, continuation) = match &start {
            Start::At(key) => (key.clone(), None),
            Start::After(key) => (
                prefix.as_bytes().to_vec(),
                Some(Continuation::after_key(key)),
            ),
        };
        let mut opts = RangeOptions::new(KeyRange::Interval {
            start: from.max(prefix.as_bytes().to_vec()),
            end: end.clone(),
        })
        .limit(limit - out.len() + 1)
        .keys_only()
        .with_collections();
        if let Some(continuation) = continuation {
            opts = opts.after(continuation);
        }
        let page = store.range(opts).await?;
        let more = page.more();
        // Plain keys and collections, in key order.
        let mut keys: BTreeMap<Vec<u8>, Option<(&'static str, u64)>> = BTreeMap::new();
        for entry in page.entries {
            keys.insert(entry.key, None);
        }
        for c in page.collections {
            keys.insert(c.key, Some((kind_name(c.kind), c.size)));
        }
        if keys.is_empty() {
            return Ok((out, None));
        }
        let mut skipped = false;
        for (key, collection) in keys {
            if out.len() == limit {
                return Ok((out, Some(Start::At(key).cursor())));
            }
            let text = String::from_utf8_lossy(&key).into_owned();
            let rest = &text[prefix.len().min(text.len())..];
            match rest.find(separator(&text)) {
                Some(i) => {
                    let dir = format!("{prefix}{}", &rest[..=i]);
                    out.push(json!({ "name": &rest[..=i], "path": dir, "dir": true }));
                    match prefix_end(dir.as_bytes()) {
                        Some(next) => start = Start::At(next),
                        None => return Ok((out, None)),
                    }
                    skipped = true;
                    break;
                }
                None => {
                    let (address, _) = crate::output::typed(&text).unzip();
                    out.push(json!({
                        "name": rest,
                        "path": text,
                        "dir": false,
                        "type": address,
                        "collection": collection.map(|(kind, _)| kind),
                        "size": collection.map(|(_, size)| size),
                    }));
                    start = Start::After(key);
                }
            }
        }
        if !skipped && !more {
            return Ok((out, None));
        }
        if out.len() == limit {
            // After a directory: a next page only when a key follows it.
            let Start::At(from) = &start else {
                return Ok((out, Some(start.cursor())));
            };
            let rest = RangeOptions::new(KeyRange::Interval {
                start: from.clone(),
                end: end.clone(),
            })
            .limit(1)
            .keys_only()
            .with_collections();
            let page = store.range(rest).await?;
            let follows = !(page.entries.is_empty() && page.collections.is_empty());
            return Ok((out, follows.then(|| start.cursor())));
        }
    }
}

/// Where a key's directories end, as the key trees of `kvctl` draw them: `:` for a key with
/// no `/` that contains `:` (Redis style), else `/`.
pub(crate) fn separator(key: &str) -> char {
    if !key.contains('/') && key.contains(':') {
        ':'
    } else {
        '/'
    }
}

/// The Redis name of a collection kind.
pub(crate) fn kind_name(kind: keyplane::CollectionKind) -> &'static str {
    match kind {
        keyplane::CollectionKind::Set => "SET",
        keyplane::CollectionKind::Map => "HASH",
        keyplane::CollectionKind::List => "LIST",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use keyplane::mem::MemStore;
    use keyplane::{CollectionOp, PutOptions};

    async fn names(store: &dyn Store, prefix: &str, limit: usize) -> Vec<Vec<String>> {
        let mut pages = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let (children, next) = children(store, prefix, after.as_deref(), limit)
                .await
                .unwrap();
            pages.push(
                children
                    .iter()
                    .map(|c| c["name"].as_str().unwrap().to_owned())
                    .collect(),
            );
            match next {
                Some(next) => after = Some(next),
                None => return pages,
            }
        }
    }

    #[tokio::test]
    async fn levels_list_directories_once_and_keys_page_by_page() {
        let store = MemStore::new();
        for key in [
            "jxt/tenants/1/meta",
            "jxt/tenants/1/domains/a",
            "jxt/tenants/10/meta",
            "jxt/tenants/2/meta",
            "jxt/tenants/_index/code/t1",
            "key:1",
            "key:1:groups",
            "key:2",
            "top",
        ] {
            store
                .put(key.as_bytes(), b"v", PutOptions::default())
                .await
                .unwrap();
        }
        store
            .collection(CollectionOp::SetAdd {
                key: b"group:1:keys".to_vec(),
                member: b"1".to_vec(),
            })
            .await
            .unwrap();
        assert_eq!(
            names(&store, "", 10).await,
            [vec!["group:", "jxt/", "key:", "top"]]
        );
        assert_eq!(
            names(&store, "jxt/tenants/", 2).await,
            [vec!["1/", "10/"], vec!["2/", "_index/"]]
        );
        assert_eq!(names(&store, "key:", 10).await, [vec!["1", "1:", "2"]]);
        let (children, _) = children(&store, "group:1:", None, 10).await.unwrap();
        assert_eq!(children[0]["collection"], "SET");
        assert_eq!(children[0]["size"], 1);
        assert_eq!(names(&store, "nothing/", 10).await, [Vec::<String>::new()]);
    }

    #[tokio::test]
    async fn a_level_of_many_keys_pages_without_repeating() {
        let store = MemStore::new();
        for i in 0..250 {
            store
                .put(format!("d/{i:04}").as_bytes(), b"v", PutOptions::default())
                .await
                .unwrap();
        }
        let pages = names(&store, "d/", 100).await;
        assert_eq!(
            pages.iter().map(Vec::len).collect::<Vec<_>>(),
            [100, 100, 50]
        );
        let all: Vec<String> = pages.concat();
        assert_eq!(all.len(), 250);
        assert!(all.windows(2).all(|w| w[0] < w[1]));
    }

    /// Counts the range reads that reach the store.
    #[derive(Default)]
    struct Reads(std::sync::atomic::AtomicUsize);

    #[keyplane::raw::async_trait]
    impl keyplane::layer::Interceptor for Reads {
        async fn before(&self, call: keyplane::layer::Call) -> keyplane::Result<()> {
            if call == keyplane::layer::Call::Range {
                self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            Ok(())
        }
    }

    /// Writes `keys` in transactions of 100 puts.
    async fn load(store: &dyn Store, keys: impl Iterator<Item = String>) {
        let keys: Vec<String> = keys.collect();
        for chunk in keys.chunks(100) {
            let txn = keyplane::Txn::new().and_then(
                chunk
                    .iter()
                    .map(|k| keyplane::TxnOp::put(k.as_bytes(), b"v")),
            );
            store.txn(txn).await.unwrap();
        }
    }

    /// A level under 100,000 keys costs a read per page of keys, or per directory: never a
    /// read of every key.
    #[tokio::test]
    async fn a_level_over_100_000_keys_reads_a_page_not_the_level() {
        use keyplane::layer::{FaultLayer, StoreExt};
        use std::sync::atomic::Ordering;
        let counted = std::sync::Arc::new(Reads::default());
        let store = MemStore::new().layer(FaultLayer::new(0).intercept(counted.clone()));
        load(&store, (0..100_000).map(|i| format!("big/{i:06}"))).await;
        load(
            &store,
            (0..100_000).map(|i| format!("deep/{}/{i:06}", i % 10)),
        )
        .await;
        let reads = || counted.0.swap(0, Ordering::SeqCst);
        reads();

        let (page, next) = children(&store, "big/", None, 100).await.unwrap();
        assert_eq!(page.len(), 100);
        assert_eq!(reads(), 1, "one read of 101 keys");
        let (page, _) = children(&store, "big/", next.as_deref(), 100)
            .await
            .unwrap();
        assert_eq!(page[0]["name"], "000100");
        assert_eq!(reads(), 1);

        let (dirs, next) = children(&store, "deep/", None, 100).await.unwrap();
        assert_eq!(dirs.len(), 10);
        assert_eq!(next, None);
        assert_eq!(reads(), 11, "a read per directory, and one finding no more");
    }
}
