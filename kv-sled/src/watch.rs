//! Persistent watch: every stream reads the event log tree, first the retained history from
//! its start revision, then each newly published revision. Replay and live delivery are the
//! same path, so nothing falls between them, and a watcher that saw revision `r` before a
//! restart resumes from `r + 1` after it.

use crate::core::codec::{COMPACT_KEY, Select, be, decode_log_record_with};
use crate::core::{Core, Plan};
use crate::error::map_error;
use futures::StreamExt;
use keyplane_contract::{Error, ErrorKind, Result, WatchBatch, WatchOptions, WatchStream};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use tokio::sync::watch;

/// Log records read per step of a stream (each holds one revision or more).
const READ_BATCH: usize = 256;

/// A watch of `opts` (checked by the contract's front).
pub(crate) fn watch(inner: &Arc<Core>, opts: WatchOptions) -> Result<WatchStream> {
    let next = match opts.start_revision {
        Some(rev) if rev > 0 => rev,
        _ => inner.revision() + 1,
    };
    let oldest = inner.oldest();
    if next < oldest {
        return Err(Error::compacted(oldest));
    }
    let state = Cursor {
        // The store's revision now: the progress mark waits until the log is read past it.
        mark: opts.progress.then(|| inner.revision()),
        inner: Arc::downgrade(inner),
        published: inner.published.subscribe(),
        opts,
        next,
        ready: VecDeque::new(),
        done: false,
    };
    Ok(futures::stream::unfold(state, Cursor::step).boxed())
}

struct Cursor {
    inner: Weak<Core>,
    published: watch::Receiver<i64>,
    opts: WatchOptions,
    /// The first revision not yet read from the log.
    next: i64,
    ready: VecDeque<WatchBatch>,
    /// With progress asked for: the revision the progress mark is owed for.
    mark: Option<i64>,
    done: bool,
}

impl Cursor {
    async fn step(mut self) -> Option<(Result<WatchBatch>, Cursor)> {
        loop {
            if self.done {
                return None;
            }
            if let Some(batch) = self.ready.pop_front() {
                return Some((Ok(batch), self));
            }
            if self.mark.is_some_and(|mark| self.next > mark) {
                self.mark = None;
                return Some((Ok(WatchBatch::progress(self.next - 1)), self));
            }
            let published = *self.published.borrow_and_update();
            if self.next <= published {
                if let Err(err) = self.read(published) {
                    self.done = true;
                    return Some((Err(err), self));
                }
                continue;
            }
            if self.published.changed().await.is_err() {
                self.done = true;
                let err = Error::new(
                    ErrorKind::Unavailable,
                    "the sled store was closed while a watch was open",
                )
                .set_retryable(false);
                return Some((Err(err), self));
            }
        }
    }

    /// Reads up to [`READ_BATCH`] log records in `[next, published]`.
    fn read(&mut self, published: i64) -> Result<()> {
        let Some(inner) = self.inner.upgrade() else {
            return Err(Error::new(
                ErrorKind::Unavailable,
                "the sled store was closed",
            ));
        };
        let records = inner
            .trees
            .log
            .range(be(self.next)..=be(published))
            .take(READ_BATCH)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| map_error("watch", e))?;
        // Compaction only moves forward: if `next` is still retained now, every record
        // read above was there when it was read.
        let oldest = inner.oldest();
        if self.next < oldest {
            return Err(Error::compacted(oldest));
        }
        let opts = &self.opts;
        let select = Select {
            event: &|key, collection| opts.covers_key(key, collection),
            prev: opts.prev,
        };
        for (key, record) in records {
            // Keyed by its last revision, the first record read may begin before `next`.
            for logged in decode_log_record_with(&key, &record, &select)? {
                if logged.revision < self.next {
                    continue;
                }
                if logged.revision != self.next {
                    return Err(crate::core::codec::corrupted(format!(
                        "the event log has no record of revision {}",
                        self.next
                    )));
                }
                // Decoded as `covers` and `shape` would leave them.
                if !logged.events.is_empty() {
                    self.ready
                        .push_back(WatchBatch::new(logged.revision, logged.events));
                }
                self.next = logged.revision + 1;
            }
        }
        Ok(())
    }
}

pub(crate) async fn compact(inner: &Core, revision: i64) -> Result<()> {
    inner
        .write(|inner, w, commits| {
            let current = inner.revision();
            if revision > current {
                return Err(Error::invalid_argument(format!(
                    "cannot compact to revision {revision}: the store is at revision {current}"
                )));
            }
            let oldest = inner.oldest();
            if revision < oldest {
                return Err(Error::compacted(oldest));
            }
            if revision == oldest {
                return Ok(());
            }
            let mut plan = Plan::default();
            plan.meta.push((COMPACT_KEY, be(revision).to_vec()));
            inner.commit(w, plan, commits)?;
            inner.compact_floor.store(revision, Ordering::Release);
            inner.prune(1)
        })
        .await
}
