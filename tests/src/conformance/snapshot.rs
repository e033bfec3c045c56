//! Snapshot reads: a range at a past revision, and paged ranges whose pages all read the
//! revision of the first page.

use super::support::{all_pages, expect_kind, key, put, root};
use keyplane_core::{Entry, ErrorKind, RangeOptions, Store};
use std::sync::Arc;

fn pairs(entries: &[Entry]) -> Vec<(String, String)> {
    entries
        .iter()
        .map(|e| {
            (
                String::from_utf8_lossy(&e.key).into_owned(),
                String::from_utf8_lossy(&e.value).into_owned(),
            )
        })
        .collect()
}

/// A range at a past revision returns the entries as they were then, with their metadata,
/// for values, keys only and counts; a future revision is refused.
pub async fn range_at_a_past_revision(store: Arc<dyn Store>) {
    let root = root();
    let st = &*store;
    let (a, b, c) = (key(&root, "a"), key(&root, "b"), key(&root, "c"));
    let r1 = put(st, &a, "1").await;
    let r2 = put(st, &b, "2").await;
    let then = st.range(RangeOptions::prefix(&root)).await.unwrap();
    put(st, &a, "3").await;
    st.delete(&b).await.unwrap();
    put(st, &c, "4").await;

    let at_r2 = st
        .range(RangeOptions::prefix(&root).at_revision(r2))
        .await
        .unwrap();
    assert_eq!(at_r2.revision, r2);
    assert_eq!(
        at_r2.entries, then.entries,
        "entries and metadata as they were"
    );
    let at_r1 = st
        .range(RangeOptions::prefix(&root).at_revision(r1))
        .await
        .unwrap();
    assert_eq!(pairs(&at_r1.entries), [(s(&a), "1".into())]);
    let count = st
        .range(RangeOptions::prefix(&root).at_revision(r2).count_only())
        .await
        .unwrap();
    assert_eq!(count.count, 2);
    let keys = st
        .range(RangeOptions::prefix(&root).at_revision(r2).keys_only())
        .await
        .unwrap();
    assert_eq!(
        pairs(&keys.entries),
        [(s(&a), String::new()), (s(&b), String::new())]
    );
    let one = st
        .range(RangeOptions::new(keyplane_core::KeyRange::Key(b.clone())).at_revision(r2))
        .await
        .unwrap();
    assert_eq!(pairs(&one.entries), [(s(&b), "2".into())]);

    let now = st.revision().await.unwrap();
    let current = st
        .range(RangeOptions::prefix(&root).at_revision(now))
        .await
        .unwrap();
    assert_eq!(
        pairs(&current.entries),
        [(s(&a), "3".into()), (s(&c), "4".into())]
    );
    expect_kind(
        st.range(RangeOptions::prefix(&root).at_revision(now + 1000))
            .await,
        ErrorKind::InvalidArgument,
    );
}

fn s(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

/// A paged range reads every page at the revision of its first page: writes between pages
/// (updates, deletes of keys not yet read, new keys) do not tear the listing.
pub async fn paged_range_reads_one_revision(store: Arc<dyn Store>) {
    let root = root();
    let st = &*store;
    for i in 0..12 {
        put(st, &key(&root, format!("k{i:02}")), format!("v{i}")).await;
    }
    let before = st.range(RangeOptions::prefix(&root)).await.unwrap();
    let mut opts = RangeOptions::prefix(&root).limit(4);
    let first = st.range(opts.clone()).await.unwrap();
    let mut listed = first.entries.clone();
    let mut revisions = vec![first.revision];
    let mut next = first.next;
    let mut round = 0;
    while let Some(continuation) = next {
        // Between pages: rewrite a key already read, delete one not yet read, add new keys
        // on both sides of the cursor.
        round += 1;
        put(st, &key(&root, "k00"), format!("changed{round}")).await;
        st.delete(&key(&root, format!("k{:02}", 12 - round)))
            .await
            .unwrap();
        put(st, &key(&root, format!("k{round:02}x")), "new").await;
        put(st, &key(&root, format!("z{round}")), "new").await;
        opts = opts.after(continuation);
        let page = st.range(opts.clone()).await.unwrap();
        listed.extend(page.entries);
        revisions.push(page.revision);
        next = page.next;
    }
    assert!(
        revisions.iter().all(|r| *r == first.revision),
        "every page at the first page's revision: {revisions:?}"
    );
    assert_eq!(
        listed, before.entries,
        "the pages together are the state of the first page's revision"
    );
    // The same read pinned explicitly, now that everything changed.
    let pinned = all_pages(
        st,
        RangeOptions::prefix(&root)
            .limit(5)
            .at_revision(first.revision),
    )
    .await;
    assert_eq!(pinned.entries, before.entries);
    assert!(pinned.revisions.iter().all(|r| *r == first.revision));
}

/// A range at a revision the store no longer keeps is `Compacted`.
pub async fn range_at_compacted_revision_is_rejected(store: Arc<dyn Store>) {
    let root = root();
    let st = &*store;
    let old = put(st, &key(&root, "a"), "1").await;
    put(st, &key(&root, "a"), "2").await;
    let current = st.revision().await.unwrap();
    st.compact(current).await.unwrap();
    let err = st
        .range(RangeOptions::prefix(&root).at_revision(old))
        .await
        .unwrap_err();
    let compacted = err
        .compact_revision()
        .unwrap_or_else(|| panic!("expected Compacted, got {err}"));
    assert!(compacted > old, "{err}");
    let at = st
        .range(RangeOptions::prefix(&root).at_revision(current))
        .await
        .unwrap();
    assert_eq!(pairs(&at.entries), [(s(&key(&root, "a")), "2".into())]);
}
