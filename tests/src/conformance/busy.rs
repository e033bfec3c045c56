//! Reads at a revision on a busy store: a paged listing keeps every page at its first page's
//! revision and succeeds while other tasks write as fast as they can, elsewhere in the store
//! or in the listed directory itself.
//!
//! The writers are [`Writers`]: in this process, yielding after each
//! write, bounded well inside every backend's retention.

use super::support::{all_pages, key, put, root};
use crate::busy::{NAMES_PER_WRITER, WRITERS, Writers};
use keyplane_core::{Entry, RangeOptions, RangeResult, Store};
use std::sync::Arc;

/// A directory nobody changes, listed in pages while other tasks write elsewhere as fast as
/// they can: every page at the first page's revision, together exactly the directory.
pub async fn paged_listing_of_a_quiet_directory_while_others_write(store: Arc<dyn Store>) {
    let (root, elsewhere) = (root(), root());
    let st = &*store;
    for i in 0..60 {
        put(st, &key(&root, format!("k{i:02}")), format!("v{i}")).await;
    }
    let expected = st.range(RangeOptions::prefix(&root)).await.unwrap().entries;
    let mut writers = Writers::start(&store, &elsewhere);
    writers.advance(WRITERS).await;
    let opts = RangeOptions::prefix(&root).limit(10);
    let first = st.range(opts.clone()).await.expect("page 1");
    let (listed, pages) = pages_while_writing(st, &mut writers, opts, &first, "others write").await;
    let counted = st
        .range(
            RangeOptions::prefix(&root)
                .at_revision(first.revision)
                .count_only(),
        )
        .await
        .expect("a count at the first page's revision while others write");
    writers.stop().await;
    assert_eq!(pages, 6);
    assert_eq!(listed, expected, "the pages together are the directory");
    assert_eq!(counted.count, 60);
}

/// A directory whose own keys are overwritten, deleted and created by other tasks as fast as
/// they can once its first page is read: every later page stays at the first page's revision
/// and returns exactly that revision's keys and values, and so does a count at it.
pub async fn paged_listing_while_its_own_keys_are_written(store: Arc<dyn Store>) {
    let root = root();
    let st = &*store;
    for w in 0..WRITERS {
        for i in 0..NAMES_PER_WRITER {
            put(st, &key(&root, format!("w{w}-{i:02}")), "initial").await;
        }
    }
    let expected = st.range(RangeOptions::prefix(&root)).await.unwrap().entries;
    let opts = RangeOptions::prefix(&root).limit(16);
    let first = st.range(opts.clone()).await.expect("page 1");
    let mut writers = Writers::start(&store, &root);
    let (listed, pages) =
        pages_while_writing(st, &mut writers, opts, &first, "its keys are written").await;
    writers.advance(WRITERS).await;
    let pinned = all_pages(
        st,
        RangeOptions::prefix(&root)
            .limit(7)
            .at_revision(first.revision),
    )
    .await;
    writers.stop().await;
    assert_eq!(pages, 5);
    assert_eq!(
        listed, expected,
        "the pages together are the first page's revision"
    );
    assert_eq!(
        pinned.entries, expected,
        "a listing pinned to that revision"
    );
    assert!(pinned.revisions.iter().all(|r| *r == first.revision));
}

/// Reads the pages of `opts` after `first`, letting the writers go on before each, and checks
/// that every page is read at `first`'s revision (`during` says what happens meanwhile, for
/// the failure's message). Returns every entry listed, `first`'s included, and the number of
/// pages.
async fn pages_while_writing(
    st: &dyn Store,
    writers: &mut Writers,
    mut opts: RangeOptions,
    first: &RangeResult,
    during: &str,
) -> (Vec<Entry>, usize) {
    let mut listed = first.entries.clone();
    let mut next = first.next.clone();
    let mut pages = 1;
    while let Some(continuation) = next {
        writers.advance(WRITERS).await;
        opts = opts.after(continuation);
        pages += 1;
        let page = st
            .range(opts.clone())
            .await
            .unwrap_or_else(|e| panic!("page {pages} while {during}: {e}"));
        assert_eq!(page.revision, first.revision, "page {pages}'s revision");
        listed.extend(page.entries);
        next = page.next;
    }
    (listed, pages)
}
