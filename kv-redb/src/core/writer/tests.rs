//! The group commit: writers share transactions, and a write given up still commits.
use crate::{Durability, RedbStore};
use keyplane_contract::{PutOptions, Store};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

async fn buffered() -> Arc<RedbStore> {
    Arc::new(
        RedbStore::temporary_with(|config| {
            config.durability(Durability::Buffered {
                flush_interval: Duration::from_secs(60),
            })
        })
        .await
        .unwrap(),
    )
}

fn commits(store: &RedbStore) -> u64 {
    store.inner.shared.commits.load(Ordering::Relaxed)
}

/// Writers that write in a loop share transactions, each write at its own revision.
async fn writers_share_transactions() {
    const WRITERS: i64 = 16;
    const EACH: i64 = 50;
    let store = buffered().await;
    let before = commits(&store);
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut revisions = Vec::new();
                for i in 0..EACH {
                    let key = format!("w{w}/{i}");
                    let put = store.put(key.as_bytes(), b"v", PutOptions::default());
                    revisions.push(put.await.unwrap().revision);
                }
                revisions
            })
        })
        .collect();
    let mut revisions = Vec::new();
    for writer in writers {
        revisions.extend(writer.await.unwrap());
    }
    revisions.sort_unstable();
    assert_eq!(revisions, (1..=WRITERS * EACH).collect::<Vec<i64>>());
    let made = commits(&store) - before;
    assert!(
        made <= (WRITERS * EACH / 2) as u64,
        "{} writes made {made} commits",
        WRITERS * EACH
    );
    for w in 0..WRITERS {
        for i in 0..EACH {
            let key = format!("w{w}/{i}");
            assert!(store.get(key.as_bytes()).await.unwrap().is_some());
        }
    }
    store.check_consistency().unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn writers_share_transactions_on_one_thread() {
    writers_share_transactions().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_share_transactions_on_two_threads() {
    writers_share_transactions().await;
}

/// A caller that gives up after queueing its write leaves it to the writer thread: it is
/// committed by the next flush, and the writes after it are not held up.
#[tokio::test(flavor = "current_thread")]
async fn a_write_given_up_after_queueing_is_still_committed() {
    let store = buffered().await;
    let others = &store.inner.writer.inner.in_flight;
    // Another write in flight: this one queues its job and lets it run first.
    others.fetch_add(1, Ordering::AcqRel);
    {
        let put = store.put(b"given-up", b"v", PutOptions::default());
        let mut put = std::pin::pin!(put);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        // Queued, then waiting for the other tasks: dropped there.
        assert!(put.as_mut().poll(&mut cx).is_pending());
    }
    others.fetch_sub(1, Ordering::AcqRel);
    store.flush().await.unwrap();
    assert!(store.get(b"given-up").await.unwrap().is_some());
    store
        .put(b"after", b"v", PutOptions::default())
        .await
        .unwrap();
    store.check_consistency().unwrap();
}

/// Writers on several threads, with idle moments between their writes, against a writer
/// thread that takes the writer state for each of its frequent flushes (and holds it a while
/// each time it looks at its deadline): a caller that finds the state held leaves its job to
/// the holder, and every holder (a caller or the thread) looks at the queue again once it
/// has let go, so no write is left queued while the thread sleeps.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_write_is_stranded_behind_a_holder_that_let_go() {
    const WRITERS: usize = 8;
    const EACH: usize = 400;
    let store = Arc::new(
        RedbStore::temporary_with(|config| {
            config.durability(Durability::Buffered {
                flush_interval: Duration::from_millis(1),
            })
        })
        .await
        .unwrap(),
    );
    store
        .inner
        .shared
        .deadline_hold_us
        .store(300, Ordering::Relaxed);
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0..EACH {
                    let key = format!("s{w}/{i}");
                    let put = store.put(key.as_bytes(), b"v", PutOptions::default());
                    tokio::time::timeout(Duration::from_secs(20), put)
                        .await
                        .unwrap_or_else(|_| panic!("the put of {key} was never committed"))
                        .unwrap();
                    if i % 7 == w % 7 {
                        // An idle moment: the writer thread flushes and goes back to sleep.
                        std::thread::sleep(Duration::from_micros(1500));
                    }
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    store.check_consistency().unwrap();
}
