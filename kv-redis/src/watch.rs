//! Watches: read the event log stream (one entry `<revision>-0` per revision) with XRANGE for
//! the replay that starts a watch and whenever a watch falls behind, and follow its tail
//! through the store's one XREAD BLOCK loop (the [`Hub`], in `core`) whose pages every watch
//! of the store shares; and compaction of that log (`scripts/compact.lua`).
//!
//! Each watch is a task that takes the hub's pages (skipping what it has seen, reading the
//! gap with XRANGE on the store's shared connection when it missed pages) and hands batches
//! to its reader through a bounded channel.

pub(crate) mod span;

use crate::con::Con;
use crate::core::Core;
use crate::core::decode::{LogEntry, array, corrupted, flatten};
use crate::core::hub::{Hub, HubPage, PAGE, RECONNECT};
use crate::error::{map_error, unavailable};
use futures::StreamExt;
use keyplane_contract::{Error, Event, Result, WatchBatch, WatchOptions, WatchStream};
use redis::Value;
use std::sync::Arc;
use tokio::sync::{broadcast, mpsc, watch};

/// A watch of `opts` (checked by the contract's front) on one core.
pub(crate) async fn watch(core: &Core, opts: WatchOptions) -> Result<WatchStream> {
    // Subscribed before the replay is read: every entry appended after this point reaches
    // the watch through the hub, every one before through the replay or a catch-up.
    let (live, fresh) = core.hub.subscribe();
    let start = match opts.start_revision {
        Some(r) if r > 0 => r,
        _ => core.revision().await?.saturating_add(1),
    };
    let log = core.log_start(start, PAGE, "watch").await?;
    let (current, first, compacted) = (log.current, log.first, log.compacted);
    // The oldest revision a new watch may start from: the first one still in the log (every
    // revision up to the current one is there unless trimmed), and never before a compaction.
    let oldest = if first > 0 { first } else { current + 1 }.max(compacted);
    if start < oldest && start <= current {
        return Err(Error::compacted(oldest));
    }
    let mark = opts.progress.then_some(current);
    let mut follower = Follower {
        opts,
        last: start - 1,
        mark,
    };
    let replay = follower.accept(log.entries)?;
    let (tx, rx) = mpsc::channel(64);
    let task = Watcher {
        follower,
        con: core.con.clone(),
        hub: Arc::clone(&core.hub),
        tx,
    };
    tokio::spawn(task.run(replay, live, fresh));
    Ok(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    })
    .boxed())
}

/// Compacts the event log up to `revision` through `scripts/compact.lua`.
pub(crate) async fn compact(core: &Core, revision: i64) -> Result<()> {
    let revision = revision.to_string();
    let _: i64 = core
        .run_write(&core.scripts.compact, &[revision.as_bytes()], "compact")
        .await?;
    Ok(())
}

/// Turns log entries into batches, checking that revisions follow each other without a gap.
struct Follower {
    opts: WatchOptions,
    /// The last revision read from the log.
    last: i64,
    /// With progress asked for: the revision the progress mark is owed for.
    mark: Option<i64>,
}

impl Follower {
    fn accept(&mut self, entries: Vec<Value>) -> Result<Vec<WatchBatch>> {
        let entries = flatten(entries)?;
        match self.accept_page(&entries)? {
            Ok(batches) => Ok(batches),
            // Every revision has a log entry: a jump in what was read from the revision after
            // the last one means the entries in between were trimmed before it was read; the
            // first entry found is the oldest retained.
            Err(found) => Err(Error::compacted(found)),
        }
    }

    /// The batches of a page of consecutive entries, or the revision the page jumps to
    /// (nothing taken) when it starts after the revision following the last one read: the
    /// entries between must be read from the log first. Only the events the watch covers
    /// are copied.
    fn accept_page(
        &mut self,
        entries: &[LogEntry],
    ) -> Result<std::result::Result<Vec<WatchBatch>, i64>> {
        let mut batches = Vec::new();
        let mut taken = false;
        for entry in entries {
            let revision = entry.revision;
            if revision <= self.last {
                continue;
            }
            if revision != self.last + 1 {
                if !taken {
                    return Ok(Err(revision));
                }
                return Err(corrupted(format!(
                    "the event log has no entry for revision {}",
                    self.last + 1
                )));
            }
            taken = true;
            self.last = revision;
            let events: Vec<Event> = entry
                .events
                .iter()
                .filter(|e| self.opts.covers(e))
                .map(|e| self.opts.shape(e))
                .collect();
            if !events.is_empty() {
                batches.push(WatchBatch::new(revision, events));
            }
        }
        if self.mark.is_some_and(|mark| self.last >= mark) {
            self.mark = None;
            batches.push(WatchBatch::progress(self.last));
        }
        Ok(Ok(batches))
    }
}

/// The task behind one watch: takes the hub's pages, reads from the log what it missed,
/// and hands its batches to the reader.
struct Watcher {
    follower: Follower,
    /// The store's shared connection, for the non-blocking reads of missed entries.
    con: Con,
    /// The store's hub, whose log key the missed entries are read from too.
    hub: Arc<Hub>,
    tx: mpsc::Sender<Result<WatchBatch>>,
}

impl Watcher {
    async fn run(
        mut self,
        replay: Vec<WatchBatch>,
        mut live: broadcast::Receiver<HubPage>,
        fresh: Option<watch::Receiver<bool>>,
    ) {
        if !self.send(replay).await {
            return;
        }
        // The replay is one page: the rest of the backlog is read from the log now, not when
        // the next write wakes the hub (a running hub's pages hold only later entries).
        let caught_up = match fresh {
            Some(ready) => self.join(ready).await,
            None => self.catch_up().await,
        };
        if !caught_up {
            return;
        }
        loop {
            let page = tokio::select! {
                _ = self.tx.closed() => return,
                page = live.recv() => page,
            };
            let caught_up = match page {
                Ok(Ok(entries)) => match self.follower.accept_page(&entries) {
                    Ok(Ok(batches)) => self.send(batches).await,
                    // Pages were missed: read them from the log.
                    Ok(Err(_)) => self.catch_up().await,
                    Err(err) => self.end(err).await,
                },
                Ok(Err(err)) => self.end(err).await,
                // Too far behind the hub: read what was missed from the log.
                Err(broadcast::error::RecvError::Lagged(_)) => self.catch_up().await,
                // The hub stopped (no watch was left for a moment): join the next one.
                Err(broadcast::error::RecvError::Closed) => {
                    let (next, fresh) = self.hub.subscribe();
                    live = next;
                    match fresh {
                        Some(ready) => self.join(ready).await,
                        None => self.catch_up().await,
                    }
                }
            };
            if !caught_up {
                return;
            }
        }
    }

    /// Joins a hub that is finding where the log ends: once it has, reads the log from the
    /// revision after the last one read up to there (a running hub's pages hold every later
    /// entry). False when the watch ended.
    async fn join(&mut self, mut ready: watch::Receiver<bool>) -> bool {
        // Its sender goes when the hub fails before starting; the hub's error follows.
        let _ = tokio::select! {
            _ = self.tx.closed() => return false,
            started = ready.wait_for(|started| *started) => started.map(drop),
        };
        self.catch_up().await
    }

    /// Sends batches; false when the reader is gone.
    async fn send(&self, batches: Vec<WatchBatch>) -> bool {
        for batch in batches {
            if self.tx.send(Ok(batch)).await.is_err() {
                return false;
            }
        }
        true
    }

    /// Ends the watch with `err`; always false.
    async fn end(&self, err: Error) -> bool {
        let _ = self.tx.send(Err(err)).await;
        false
    }

    /// Reads the log from the revision after the last one read up to its end (XRANGE, on the
    /// shared connection); false when the watch ended.
    async fn catch_up(&mut self) -> bool {
        let policy = RECONNECT.max_attempts(self.hub.retries.saturating_add(1));
        let mut failures = policy.start_at_failure();
        loop {
            let from = format!("{}-0", self.follower.last.saturating_add(1));
            let mut con = self.con.clone();
            let reply: std::result::Result<Value, _> = redis::cmd("XRANGE")
                .arg(self.hub.log.as_slice())
                .arg(from)
                .arg("+")
                .arg("COUNT")
                .arg(PAGE)
                .query_async(&mut con)
                .await;
            let entries = match reply.map_err(|e| unavailable(map_error("watch", e))) {
                Ok(reply) => match array(reply) {
                    Ok(entries) => entries,
                    Err(err) => return self.end(err).await,
                },
                // A dropped connection loses nothing: the log still holds what was missed,
                // so the read is made again (the shared connection reconnects), as the hub
                // does, before the watch gives up.
                Err(err) if err.is_retryable() => match failures.next_delay() {
                    Some(delay) => {
                        tokio::select! {
                            _ = self.tx.closed() => return false,
                            _ = tokio::time::sleep(delay) => continue,
                        }
                    }
                    None => return self.end(err).await,
                },
                Err(err) => return self.end(err).await,
            };
            failures.reset();
            let full = entries.len() >= PAGE;
            let batches = match self.follower.accept(entries) {
                Ok(batches) => batches,
                Err(err) => return self.end(err).await,
            };
            if !self.send(batches).await {
                return false;
            }
            if !full {
                return true;
            }
        }
    }
}
