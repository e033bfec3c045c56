//! Reads at a revision on a busy store: a paged listing keeps every page at its first page's
//! revision and succeeds while other tasks write as fast as they can, elsewhere in the store
//! or in the listed directory itself.
//!
//! The writers run in this process, so each yields after every write, as a network client
//! does while it waits for its answer, and each stops after [`WRITES_PER_WRITER`] writes, so
//! that all of them together stay well inside every backend's default retention: a listing
//! that fails here fails for being busy, not for reading a revision the store let go.

use super::support::{all_pages, key, put, root};
use keyplane_core::{PutOptions, RangeOptions, Store};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::watch;

/// Writing tasks.
const WRITERS: usize = 8;
/// The most writes of one writer.
const WRITES_PER_WRITER: u64 = 1_000;
/// Names each writer cycles through: overwrites, deletes and creations of a bounded set.
const NAMES_PER_WRITER: u64 = 10;

/// Writers under `root`, each cycling over its own names (put, put, delete), until `stop` or
/// their last write; `written` counts every write.
struct Writers {
    stop: Arc<AtomicBool>,
    written: watch::Receiver<u64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Writers {
    fn start(store: &Arc<dyn Store>, root: &[u8]) -> Writers {
        let stop = Arc::new(AtomicBool::new(false));
        let (count, written) = watch::channel(0u64);
        let count = Arc::new(count);
        let tasks = (0..WRITERS)
            .map(|w| {
                let (store, stop, count) = (store.clone(), stop.clone(), count.clone());
                let root = root.to_vec();
                tokio::spawn(async move {
                    for i in 0..WRITES_PER_WRITER {
                        if stop.load(Ordering::Relaxed) {
                            return;
                        }
                        let k = key(&root, format!("w{w}-{:02}", i % NAMES_PER_WRITER));
                        if i % 3 == 2 {
                            store.delete(&k).await.expect("a writer's delete");
                        } else {
                            let value = format!("{w}:{i}");
                            store
                                .put(&k, value.as_bytes(), PutOptions::default())
                                .await
                                .expect("a writer's put");
                        }
                        count.send_modify(|n| *n += 1);
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        Writers {
            stop,
            written,
            tasks,
        }
    }

    /// Waits until the writers have written `more` times since the last wait (or have all
    /// finished), so that the next read overlaps their writes.
    async fn advance(&mut self, more: u64) {
        let target = *self.written.borrow_and_update() + more;
        let _ = self.written.wait_for(|n| *n >= target).await;
    }

    async fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for task in self.tasks {
            task.await.expect("a writer task");
        }
    }
}

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
    writers.advance(WRITERS as u64).await;
    let mut opts = RangeOptions::prefix(&root).limit(10);
    let first = st.range(opts.clone()).await.expect("page 1");
    let mut listed = first.entries.clone();
    let mut next = first.next;
    let mut pages = 1;
    while let Some(continuation) = next {
        writers.advance(WRITERS as u64).await;
        opts = opts.after(continuation);
        pages += 1;
        let page = st
            .range(opts.clone())
            .await
            .unwrap_or_else(|e| panic!("page {pages} while others write: {e}"));
        assert_eq!(page.revision, first.revision, "page {pages}'s revision");
        listed.extend(page.entries);
        next = page.next;
    }
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
    let mut opts = RangeOptions::prefix(&root).limit(16);
    let first = st.range(opts.clone()).await.expect("page 1");
    let mut writers = Writers::start(&store, &root);
    let mut listed = first.entries.clone();
    let mut next = first.next;
    let mut pages = 1;
    while let Some(continuation) = next {
        writers.advance(WRITERS as u64).await;
        opts = opts.after(continuation);
        pages += 1;
        let page = st
            .range(opts.clone())
            .await
            .unwrap_or_else(|e| panic!("page {pages} while its keys are written: {e}"));
        assert_eq!(page.revision, first.revision, "page {pages}'s revision");
        listed.extend(page.entries);
        next = page.next;
    }
    writers.advance(WRITERS as u64).await;
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
