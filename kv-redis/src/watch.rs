//! Watches: read the event log stream (one entry `<revision>-0` per revision) with XRANGE for
//! the replay that starts a watch and XREAD BLOCK on a dedicated connection after that; and
//! compaction of that log (`scripts/compact.lua`).

use crate::core::Core;
use crate::core::decode::{array, corrupted, log_entry};
use crate::error::map_error;
use futures::StreamExt;
use keyplane_core::{Error, ErrorKind, Event, Result, WatchBatch, WatchOptions, WatchStream};
use redis::{AsyncConnectionConfig, Value};
use std::time::Duration;
use tokio::sync::mpsc;

/// Log entries read per round trip.
const PAGE: usize = 512;
/// How long one XREAD blocks before it is reissued.
const BLOCK: Duration = Duration::from_secs(2);

pub(crate) async fn watch(core: &Core, opts: WatchOptions) -> Result<WatchStream> {
    core.check_range(&opts.range)?;
    let start = match opts.start_revision {
        Some(r) if r > 0 => r,
        _ => core.revision().await? + 1,
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
    let reader = Reader {
        client: core.client.clone(),
        log: core.internal("log"),
        retries: core.config.watch_retries,
        response_timeout: BLOCK + core.config.response_timeout(),
        connect_timeout: core.config.connect_timeout(),
    };
    tokio::spawn(reader.run(follower, replay, tx));
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
        let mut batches = Vec::new();
        for raw in entries {
            let crate::core::decode::LogEntry {
                revision, events, ..
            } = log_entry(raw)?;
            if revision <= self.last {
                continue;
            }
            if revision != self.last + 1 {
                // Every revision has a log entry: a jump means the entries in between were
                // trimmed before this watch read them.
                return Err(Error::compacted(revision));
            }
            self.last = revision;
            let events: Vec<Event> = events
                .into_iter()
                .filter(|e| self.opts.covers(e))
                .map(|e| self.opts.shape(&e))
                .collect();
            if !events.is_empty() {
                batches.push(WatchBatch { revision, events });
            }
        }
        if self.mark.is_some_and(|mark| self.last >= mark) {
            self.mark = None;
            batches.push(WatchBatch::progress(self.last));
        }
        Ok(batches)
    }
}

/// The task behind one watch: follows the log on its own connection, reconnecting and
/// resuming after the last revision read when the connection is lost.
struct Reader {
    client: redis::Client,
    log: Vec<u8>,
    retries: u32,
    response_timeout: Duration,
    connect_timeout: Duration,
}

type Sender = mpsc::Sender<Result<WatchBatch>>;

impl Reader {
    async fn run(self, mut follower: Follower, replay: Vec<WatchBatch>, tx: Sender) {
        for batch in replay {
            if tx.send(Ok(batch)).await.is_err() {
                return;
            }
        }
        let mut con = None;
        let mut failures = 0u32;
        loop {
            let result = tokio::select! {
                _ = tx.closed() => return,
                result = self.read(&mut con, follower.last) => result,
            };
            let entries = match result {
                Ok(entries) => {
                    failures = 0;
                    entries
                }
                Err(err) if err.is_retryable() && failures < self.retries => {
                    con = None;
                    failures += 1;
                    tracing::debug!(%err, failures, "watch connection lost; reconnecting");
                    let backoff =
                        Duration::from_millis(50 << failures.min(6)).min(Duration::from_secs(2));
                    tokio::select! {
                        _ = tx.closed() => return,
                        _ = tokio::time::sleep(backoff) => continue,
                    }
                }
                Err(err) => {
                    let _ = tx.send(Err(err)).await;
                    return;
                }
            };
            match follower.accept(entries) {
                Ok(batches) => {
                    for batch in batches {
                        if tx.send(Ok(batch)).await.is_err() {
                            return;
                        }
                    }
                }
                Err(err) => {
                    let _ = tx.send(Err(err)).await;
                    return;
                }
            }
        }
    }

    /// One XREAD BLOCK after revision `last`, connecting first when needed.
    async fn read(
        &self,
        con: &mut Option<redis::aio::MultiplexedConnection>,
        last: i64,
    ) -> Result<Vec<Value>> {
        if con.is_none() {
            let config = AsyncConnectionConfig::new()
                .set_connection_timeout(Some(self.connect_timeout))
                .set_response_timeout(Some(self.response_timeout));
            let fresh = self
                .client
                .get_multiplexed_async_connection_with_config(&config)
                .await
                .map_err(|e| unavailable(map_error("watch", e)))?;
            *con = Some(fresh);
        }
        let Some(c) = con.as_mut() else {
            return Err(corrupted("no watch connection"));
        };
        let reply: Value = redis::cmd("XREAD")
            .arg("COUNT")
            .arg(PAGE)
            .arg("BLOCK")
            .arg(BLOCK.as_millis() as u64)
            .arg("STREAMS")
            .arg(self.log.as_slice())
            .arg(format!("{last}-0"))
            .query_async(c)
            .await
            .map_err(|e| unavailable(map_error("watch", e)))?;
        // Nil on timeout; otherwise [[stream, [entries...]]].
        let mut streams = array(reply)?.into_iter();
        match streams.next() {
            None => Ok(Vec::new()),
            Some(stream) => {
                let mut parts = array(stream)?.into_iter();
                parts.nth(1).map(array).unwrap_or(Ok(Vec::new()))
            }
        }
    }
}

/// Connection failures of a watch are retried; a restarting server answers LOADING, which is
/// retried too.
fn unavailable(err: Error) -> Error {
    match err.kind() {
        ErrorKind::Unavailable | ErrorKind::Timeout => err.set_retryable(true),
        _ => err,
    }
}
