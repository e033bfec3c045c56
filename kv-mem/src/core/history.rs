//! Watches: the bounded event history, watcher registration, delivery and compaction.

use futures::StreamExt;
use keyplane_contract::raw::emulation::{DeletedSize, Logged};
use keyplane_contract::{Error, ErrorKind, Event, Result, WatchBatch, WatchOptions, WatchStream};
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;

/// The events of one revision, with every previous entry (stripped for watchers that did
/// not ask for them).
#[derive(Debug)]
struct Change {
    revision: i64,
    events: Vec<Event>,
    /// The sizes of the collections the revision deleted, for reads at a past revision.
    deleted: Vec<DeletedSize>,
}

/// A registered watch.
///
/// A slow watcher never blocks a writer: batches queue until the stream is polled, up to
/// `limit` of them; a change that would queue one more ends the watch with a `Lagged`
/// error instead. The watcher is dropped once its stream is.
#[derive(Debug)]
struct Watcher {
    opts: WatchOptions,
    start: i64,
    tx: mpsc::UnboundedSender<Result<WatchBatch>>,
    /// Batches sent and not yet taken by the reader.
    queued: Arc<AtomicUsize>,
    limit: usize,
}

impl Watcher {
    fn send(&self, batch: WatchBatch) -> bool {
        self.queued.fetch_add(1, Ordering::SeqCst);
        self.tx.send(Ok(batch)).is_ok()
    }

    /// Delivers the part of a live `change`; false when the stream is gone or fell behind.
    fn deliver_live(&self, change: &Change) -> bool {
        if change.revision >= self.start && self.queued.load(Ordering::SeqCst) >= self.limit {
            if self.covers_any(change) {
                let _ = self.tx.send(Err(Error::new(
                    ErrorKind::Lagged,
                    format!(
                        "the watch's reader fell {} batches behind (MemConfig::watch_buffer); \
                         resume from the revision after the last batch read",
                        self.limit
                    ),
                )
                .with_context("next_revision", change.revision)));
                return false;
            }
            return !self.tx.is_closed();
        }
        self.deliver(change)
    }

    fn covers_any(&self, change: &Change) -> bool {
        change.events.iter().any(|e| self.opts.covers(e))
    }

    /// Sends the part of `change` this watcher covers; false when its stream is gone.
    fn deliver(&self, change: &Change) -> bool {
        if change.revision < self.start {
            return true;
        }
        let events: Vec<Event> = change
            .events
            .iter()
            .filter(|e| self.opts.covers(e))
            .map(|e| self.opts.shape(e))
            .collect();
        if events.is_empty() {
            return !self.tx.is_closed();
        }
        self.send(WatchBatch::new(change.revision, events))
    }
}

/// The retained events and the live watchers.
#[derive(Debug)]
pub(crate) struct History {
    /// Changes with events, ascending by revision, all at or after the retained start.
    changes: VecDeque<Arc<Change>>,
    /// How many of the latest revisions are retained.
    capacity: usize,
    /// Revisions before this one were discarded by [`History::compact`].
    compacted: i64,
    watchers: Vec<Watcher>,
    /// Most batches queued for one watcher ([`MemConfig::watch_buffer`](crate::MemConfig)).
    buffer: usize,
}

impl History {
    pub(crate) fn new(capacity: usize, buffer: usize) -> Self {
        History {
            changes: VecDeque::new(),
            capacity,
            compacted: 1,
            watchers: Vec::new(),
            buffer: buffer.max(1),
        }
    }

    /// The oldest revision whose events are still retained at store revision `current`.
    fn retained_from(&self, current: i64) -> i64 {
        let capacity = i64::try_from(self.capacity).unwrap_or(i64::MAX);
        self.compacted
            .max(current.saturating_sub(capacity).saturating_add(1))
            .max(1)
    }

    fn trim(&mut self, current: i64) {
        let from = self.retained_from(current);
        while self.changes.front().is_some_and(|c| c.revision < from) {
            self.changes.pop_front();
        }
    }

    /// The oldest revision a range can still be read at, at store revision `current`: every
    /// later revision's events are retained, and it is not before a compaction.
    pub(crate) fn oldest_readable(&self, current: i64) -> i64 {
        (self.retained_from(current) - 1).max(self.compacted)
    }

    /// The retained changes after `revision`, ascending, with previous entries.
    pub(crate) fn since(&self, revision: i64) -> Vec<Logged> {
        self.changes
            .iter()
            .filter(|c| c.revision > revision)
            .map(|c| Logged {
                revision: c.revision,
                events: c.events.clone(),
                deleted: c.deleted.clone(),
            })
            .collect()
    }

    /// Records the events of revision `revision` (the new store revision) and delivers them.
    pub(crate) fn record(&mut self, revision: i64, events: Vec<Event>, deleted: Vec<DeletedSize>) {
        if !events.is_empty() {
            let change = Arc::new(Change {
                revision,
                events,
                deleted,
            });
            self.watchers.retain(|w| w.deliver_live(&change));
            self.changes.push_back(change);
        } else {
            self.watchers.retain(|w| !w.tx.is_closed());
        }
        self.trim(revision);
    }

    /// Registers a watcher of `opts` (from after `current` without a start revision), first
    /// replaying the retained changes it covers. Called under the store's lock, so no change
    /// can fall between the replay and the live events.
    pub(crate) fn watch(&mut self, opts: &WatchOptions, current: i64) -> Result<WatchStream> {
        // At least 1: the contract's front checked it.
        let start = opts.start_revision.unwrap_or(current + 1);
        let from = self.retained_from(current);
        if start < from {
            return Err(Error::compacted(from).with_context("start_revision", start));
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let watcher = Watcher {
            opts: opts.clone(),
            start,
            tx,
            queued: Arc::clone(&queued),
            limit: self.buffer,
        };
        for change in self.changes.iter().filter(|c| c.revision >= start) {
            watcher.deliver(change);
        }
        if opts.progress {
            // Under the store's lock: every change up to `current` is queued before it.
            watcher.send(WatchBatch::progress(current));
        }
        self.watchers.push(watcher);
        Ok(UnboundedReceiverStream::new(rx)
            .inspect(move |item| {
                if item.is_ok() {
                    queued.fetch_sub(1, Ordering::SeqCst);
                }
            })
            .boxed())
    }

    /// Discards the events of revisions before `revision`.
    pub(crate) fn compact(&mut self, revision: i64, current: i64) -> Result<()> {
        if revision < 1 || revision > current {
            return Err(Error::invalid_argument(format!(
                "cannot compact at revision {revision}: the store is at revision {current}"
            )));
        }
        if revision < self.compacted {
            return Err(Error::compacted(self.compacted).with_context("revision", revision));
        }
        self.compacted = revision;
        self.trim(current);
        Ok(())
    }

    /// Ends every watch with an `Unavailable` item: the store is going away.
    pub(crate) fn close(&mut self) {
        for watcher in self.watchers.drain(..) {
            let _ = watcher.tx.send(Err(Error::new(
                ErrorKind::Unavailable,
                "the memory store was dropped",
            )));
        }
    }

    /// How many watchers are registered (for tests).
    #[cfg(test)]
    pub(crate) fn watchers(&self) -> usize {
        self.watchers.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use keyplane_contract::Entry;

    fn put(key: &str, revision: i64) -> Event {
        Event::Put {
            entry: Entry {
                key: key.as_bytes().to_vec(),
                value: Vec::new(),
                create_revision: revision,
                mod_revision: revision,
                version: 1,
                lease: None,
            },
            prev: None,
        }
    }

    #[test]
    fn a_dropped_watch_is_unregistered_on_the_next_change() {
        let mut history = History::new(10, 100);
        let stream = history.watch(&WatchOptions::prefix("a/"), 1).unwrap();
        assert_eq!(history.watchers(), 1);
        drop(stream);
        // A change outside the watched range still sweeps the closed watcher.
        history.record(2, vec![put("b", 2)], Vec::new());
        assert_eq!(history.watchers(), 0);
    }

    #[test]
    fn retention_is_bounded_by_capacity_and_compaction() {
        let mut history = History::new(3, 100);
        for revision in 2..=6 {
            history.record(revision, vec![put("k", revision)], Vec::new());
        }
        assert_eq!(history.changes.len(), 3);
        assert_eq!(history.retained_from(6), 4);
        let err = history
            .watch(&WatchOptions::key("k").from_revision(3), 6)
            .err()
            .unwrap();
        assert_eq!(err.compact_revision(), Some(4));
        history.compact(5, 6).unwrap();
        assert_eq!(history.retained_from(6), 5);
        assert_eq!(history.changes.len(), 2);
        assert!(history.compact(7, 6).is_err());
        assert_eq!(
            history.compact(4, 6).unwrap_err().compact_revision(),
            Some(5)
        );
    }
}
