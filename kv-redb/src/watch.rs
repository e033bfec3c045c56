//! Persistent watch: every stream reads the `log` table, first the retained history from
//! its start revision, then each newly committed revision. Replay and live delivery are the
//! same path, so nothing falls between them, and a watcher that saw revision `r` before a
//! restart resumes from `r + 1` after it.

use crate::core::codec::{Select, decode_events_with};
use crate::core::tables::LOG;
use crate::core::{Core, Shared};
use crate::error::RedbResult;
use futures::StreamExt;
use keyplane_contract::{Error, ErrorKind, Result, WatchBatch, WatchOptions, WatchStream};
use std::collections::VecDeque;
use std::sync::{Arc, Weak};
use tokio::sync::watch;

/// Log records read per step of a stream.
const READ_BATCH: usize = 256;

/// A watch of `opts` (checked by the contract's front).
pub(crate) fn watch(shared: &Arc<Shared>, opts: WatchOptions) -> Result<WatchStream> {
    let next = match opts.start_revision {
        Some(rev) if rev > 0 => rev,
        _ => shared.revision() + 1,
    };
    let oldest = shared.oldest();
    if next < oldest {
        return Err(Error::compacted(oldest));
    }
    let state = Cursor {
        // The store's revision now: the progress mark waits until the log is read past it.
        mark: opts.progress.then(|| shared.revision()),
        shared: Arc::downgrade(shared),
        published: shared.published.subscribe(),
        opts,
        next,
        ready: VecDeque::new(),
        done: false,
    };
    Ok(futures::stream::unfold(state, Cursor::step).boxed())
}

struct Cursor {
    shared: Weak<Shared>,
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
                    "the redb store was closed while a watch was open",
                )
                .set_retryable(false);
                return Some((Err(err), self));
            }
        }
    }

    /// Reads up to [`READ_BATCH`] log records in `[next, published]`.
    fn read(&mut self, published: i64) -> Result<()> {
        let Some(shared) = self.shared.upgrade() else {
            return Err(Error::new(
                ErrorKind::Unavailable,
                "the redb store was closed",
            ));
        };
        let txn = shared.read("watch")?;
        let log = txn.open_table(LOG).redb("watch")?;
        let records = log
            .range(self.next..=published)
            .redb("watch")?
            .take(READ_BATCH)
            .map(|kv| kv.map(|(rev, record)| (rev.value(), record.value().to_vec())))
            .collect::<std::result::Result<Vec<_>, _>>()
            .redb("watch")?;
        // Compaction only moves forward: if `next` is still retained now, every record
        // read above was there when it was read.
        let oldest = shared.oldest();
        if self.next < oldest {
            return Err(Error::compacted(oldest));
        }
        let opts = &self.opts;
        let select = Select {
            event: &|key, collection| opts.covers_key(key, collection),
            prev: opts.prev,
        };
        for (revision, record) in records {
            if revision != self.next {
                return Err(crate::core::codec::corrupted(format!(
                    "the event log has no record of revision {}",
                    self.next
                )));
            }
            let logged = decode_events_with(revision, &record, &select)?;
            if !logged.events.is_empty() {
                self.ready
                    .push_back(WatchBatch::new(logged.revision, logged.events));
            }
            self.next = revision + 1;
        }
        Ok(())
    }
}

pub(crate) async fn compact(core: &Core, revision: i64) -> Result<()> {
    core.writer
        .write(move |s| {
            let current = s.w.revision;
            if revision > current {
                return Err(Error::invalid_argument(format!(
                    "cannot compact to revision {revision}: the store is at revision {current}"
                )));
            }
            let oldest = crate::core::oldest(
                current,
                s.w.compact_floor,
                s.shared.config.history_retention,
            );
            if revision < oldest {
                return Err(Error::compacted(oldest));
            }
            if revision == oldest {
                return Ok(());
            }
            s.compact_to(revision)
        })
        .await
}
