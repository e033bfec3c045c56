//! Keys another program deletes behind the store's back: ranges never list them, count them
//! or give them a value, whether or not the backend has settled the delete yet.

use super::super::support::{all_pages, key, names, put, rel, root};
use super::{HANG, RawWriter};
use futures::StreamExt;
use keyplane_core::raw::escape_bytes;
use keyplane_core::{Entry, Event, RangeOptions, Store, WatchOptions};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The store writes `a` to `f`, another program deletes `c` and `e` (nothing settles it),
/// then:
/// - a paged listing (pages of 2) and the events after its revision replay to exactly what
///   the server holds, and every value it lists is one the store wrote;
/// - reads at the current revision (with values, keys only, count only, paged) list
///   exactly `a`, `b`, `d`, `f` with their values;
/// - a watch from such a read's revision reports nothing more about `c` and `e`;
/// - a read at the revision of the last put, before the deletes, lists all six with the
///   values they had.
pub async fn foreign_deletes_are_never_listed(store: Arc<dyn Store>, raw: Arc<dyn RawWriter>) {
    let root = root();
    let all = ["a", "b", "c", "d", "e", "f"];
    let mut before = 0;
    for name in all {
        before = put(&*store, &key(&root, name), value_of(name)).await;
    }
    for gone in ["c", "e"] {
        assert!(raw.del(&key(&root, gone)).await, "{gone} existed");
    }
    let live = ["a", "b", "d", "f"];
    let expected: BTreeMap<String, Vec<u8>> = live
        .iter()
        .map(|n| ((*n).to_owned(), value_of(n)))
        .collect();

    // Paged first, so that the second page may be the read that finds `e` gone.
    let pages = all_pages(&*store, RangeOptions::prefix(&root).limit(2)).await;
    assert!(
        pages.revisions.windows(2).all(|w| w[0] == w[1]),
        "one revision"
    );
    let replayed = replay(&*store, &root, &pages.entries, pages.revisions[0]).await;
    assert_eq!(replayed, expected, "the pages and the events after them");

    let current = store.range(RangeOptions::prefix(&root)).await.unwrap();
    assert_eq!(names(&root, &current.entries), live);
    for entry in &current.entries {
        assert_eq!(entry.value, value_of(&rel(&root, &entry.key)));
    }
    let replayed = replay(&*store, &root, &current.entries, current.revision).await;
    assert_eq!(replayed, expected, "nothing about c and e after the range");

    let keys = store
        .range(RangeOptions::prefix(&root).keys_only())
        .await
        .unwrap();
    assert_eq!(names(&root, &keys.entries), live, "keys only");
    let counted = store
        .range(RangeOptions::prefix(&root).count_only())
        .await
        .unwrap();
    assert_eq!(counted.count, 4, "count only");
    let paged = all_pages(&*store, RangeOptions::prefix(&root).limit(2)).await;
    assert_eq!(paged.entries, current.entries, "pages of 2 once settled");

    let then = store
        .range(RangeOptions::prefix(&root).at_revision(before))
        .await
        .unwrap_or_else(|e| panic!("the range at revision {before}: {e}"));
    assert_eq!(names(&root, &then.entries), all, "at the revision before");
    for entry in &then.entries {
        assert_eq!(entry.value, value_of(&rel(&root, &entry.key)));
    }
}

/// What the cases write at `name`.
fn value_of(name: &str) -> Vec<u8> {
    format!("value of {name}").into_bytes()
}

/// `listed` (read at `revision`) with every event after `revision` applied, up to a sentinel
/// put that the store then deletes: the keys under `root` (relative) with their values.
/// Panics on a listed or put value that is empty (none of the cases writes one).
async fn replay(
    store: &dyn Store,
    root: &[u8],
    listed: &[Entry],
    revision: i64,
) -> BTreeMap<String, Vec<u8>> {
    let mut state = BTreeMap::new();
    for entry in listed {
        assert!(
            !entry.value.is_empty(),
            "{} listed without its value",
            escape_bytes(&entry.key)
        );
        state.insert(rel(root, &entry.key), entry.value.clone());
    }
    let mut watch = store
        .watch(WatchOptions::prefix(root).from_revision(revision + 1))
        .await
        .expect("watch from the listing's revision");
    let sentinel = key(root, "~sentinel");
    put(store, &sentinel, "sentinel").await;
    let replayed = tokio::time::timeout(HANG, async {
        loop {
            let batch = match watch.next().await {
                Some(Ok(batch)) => batch,
                Some(Err(e)) => panic!("watch failed: {e}"),
                None => panic!("the watch ended"),
            };
            for event in batch.events {
                match event {
                    Event::Put { entry, .. } if entry.key == sentinel => return state,
                    Event::Put { entry, .. } => {
                        assert!(!entry.value.is_empty(), "a put without its value");
                        state.insert(rel(root, &entry.key), entry.value);
                    }
                    Event::Delete { key, .. } => {
                        state.remove(&rel(root, &key));
                    }
                    Event::Collection(_) => {}
                }
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the sentinel put did not arrive within {HANG:?}"));
    store.delete(&sentinel).await.expect("delete the sentinel");
    replayed
}
