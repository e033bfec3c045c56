//! The [`Hub`]: the store's one follower of the event log's tail. However many watches a
//! store has, it holds one blocking connection for them: a task, started by the first watch
//! and ended when no watch is left, reads the log with XREAD BLOCK and broadcasts each page,
//! decoded once, to every watch (see `crate::watch`, which reads what a watch missed from
//! the log itself).

use crate::con::{Con, Dial};
use crate::config::RedisConfig;
use crate::core::decode::{LogEntry, array, corrupted, flatten};
use crate::error::{map_error, unavailable};
use keyplane_contract::retry::Backoff;
use keyplane_contract::{Error, Event, Result};
use redis::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, watch};

/// Log entries read per round trip (by the hub, and by a watch reading what it missed).
pub(crate) const PAGE: usize = 512;
/// How long one XREAD blocks before it is reissued.
const BLOCK: Duration = Duration::from_secs(2);
/// Pages the hub keeps for watches that have not taken them yet; a watch further behind
/// reads what it missed from the log.
const HUB_PAGES: usize = 256;

/// Between attempts to reconnect the hub: 100 ms doubling up to 2 s.
pub(crate) const RECONNECT: Backoff = Backoff::requests()
    .initial(Duration::from_millis(100))
    .max_delay(Duration::from_secs(2));

/// One page of the log's tail, as the hub read and decoded it (once for every watch), or
/// the error that ended the hub.
pub(crate) type HubPage = std::result::Result<Arc<Vec<LogEntry>>, Error>;

/// The store's one follower of the log's tail: a task, started by the first watch and
/// ended when no watch is left, that reads the log with XREAD BLOCK on a connection of its
/// own and broadcasts each page to every watch.
pub(crate) struct Hub {
    dial: Dial,
    /// The store's shared connection, which finds the node of the log on a cluster.
    shared: Con,
    /// The event log, which the watches' catch-up reads use too.
    pub(crate) log: Vec<u8>,
    rev: Vec<u8>,
    /// Reconnections in a row before the hub gives up (`RedisConfig::watch_retries`); the
    /// watches' reads of what they missed retry as often.
    pub(crate) retries: u32,
    request_timeout: Duration,
    connect_timeout: Duration,
    /// The running hub's sender, and whether it has found its starting revision; `None`
    /// when no hub runs.
    running: Mutex<Option<(broadcast::Sender<HubPage>, watch::Receiver<bool>)>>,
}

impl Hub {
    /// The hub of the log under the internal `prefix` of a store connecting by `dial` with
    /// `config`, whose shared connection is `shared` (not started until a watch needs it).
    pub(crate) fn new(dial: Dial, shared: Con, prefix: &[u8], config: &RedisConfig) -> Self {
        Hub {
            dial,
            shared,
            log: [prefix, b"log"].concat(),
            rev: [prefix, b"rev"].concat(),
            retries: config.watch_retries,
            request_timeout: BLOCK + config.request_timeout,
            connect_timeout: config.connect_timeout,
            running: Mutex::new(None),
        }
    }

    /// A receiver of the hub's pages, starting the hub when none runs. A hub that has not
    /// yet found where the log ends may start after entries the subscriber has not read:
    /// then the second part is `Some`, to wait on before reading the log up to the hub's
    /// start.
    pub(crate) fn subscribe(
        self: &Arc<Self>,
    ) -> (broadcast::Receiver<HubPage>, Option<watch::Receiver<bool>>) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((tx, ready)) = running.as_ref() {
            let fresh = (!*ready.borrow()).then(|| ready.clone());
            return (tx.subscribe(), fresh);
        }
        let (tx, rx) = broadcast::channel(HUB_PAGES);
        let (ready_tx, ready) = watch::channel(false);
        *running = Some((tx.clone(), ready.clone()));
        tokio::spawn(Arc::clone(self).run(tx, ready_tx));
        (rx, Some(ready))
    }

    /// Whether the hub should stop: no watch is left. Decided under the lock that
    /// [`subscribe`](Self::subscribe) takes, so a new watch never joins a stopping hub.
    fn stop_if_unwatched(&self, tx: &broadcast::Sender<HubPage>) -> bool {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if tx.receiver_count() == 0 {
            *running = None;
            return true;
        }
        false
    }

    /// Ends the hub with `error`, which every watch receives.
    fn fail(&self, tx: &broadcast::Sender<HubPage>, error: Error) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        *running = None;
        let _ = tx.send(Err(error));
    }

    async fn run(self: Arc<Self>, tx: broadcast::Sender<HubPage>, ready: watch::Sender<bool>) {
        let mut con = None;
        let mut last = Tail::default();
        let policy = RECONNECT.max_attempts(self.retries.saturating_add(1));
        let mut failures = policy.start_at_failure();
        loop {
            if self.stop_if_unwatched(&tx) {
                return;
            }
            match self.read(&mut con, &mut last, &ready).await {
                Ok(entries) => {
                    failures.reset();
                    if !entries.is_empty() {
                        let _ = tx.send(Ok(Arc::new(entries)));
                    }
                }
                Err(err) => match err.is_retryable().then(|| failures.next_delay()).flatten() {
                    Some(delay) => {
                        con = None;
                        let failed = failures.failed();
                        tracing::debug!(%err, failures = failed, "watch connection lost; reconnecting");
                        tokio::time::sleep(delay).await;
                    }
                    None => {
                        self.fail(&tx, err);
                        return;
                    }
                },
            }
        }
    }

    /// One XREAD BLOCK after the revision of `last` (the current revision when the hub
    /// starts, which `ready` then announces), connecting first when needed, and then
    /// checking that the log still holds the last entry read; moves `last` to the last
    /// entry read.
    async fn read(
        &self,
        con: &mut Option<Con>,
        last: &mut Tail,
        ready: &watch::Sender<bool>,
    ) -> Result<Vec<LogEntry>> {
        if con.is_none() {
            let mut fresh = self
                .dial
                .dedicated(
                    &self.log,
                    &self.shared,
                    self.connect_timeout,
                    self.request_timeout,
                )
                .await
                .map_err(|e| unavailable(map_error("watch", e)))?;
            self.check_continuity(&mut fresh, last).await?;
            *con = Some(fresh);
        }
        let Some(c) = con.as_mut() else {
            return Err(corrupted("no watch connection"));
        };
        let from = match last.revision {
            Some(last) => last,
            None => {
                let rev: Option<i64> = redis::cmd("GET")
                    .arg(self.rev.as_slice())
                    .query_async(c)
                    .await
                    .map_err(|e| unavailable(map_error("watch", e)))?;
                let rev = rev.unwrap_or(0);
                // Both known before either is kept: a read that fails here starts over
                // from the revision counter, and announces the start only then.
                let events = self.events_of(c, rev).await?;
                (last.revision, last.events) = (Some(rev), events);
                ready.send_replace(true);
                rev
            }
        };
        let reply: Value = redis::cmd("XREAD")
            .arg("COUNT")
            .arg(PAGE)
            .arg("BLOCK")
            .arg(BLOCK.as_millis() as u64)
            .arg("STREAMS")
            .arg(self.log.as_slice())
            .arg(format!("{from}-0"))
            .query_async(c)
            .await
            .map_err(|e| unavailable(map_error("watch", e)))?;
        // Nil on timeout; otherwise [[stream, [entries...]]].
        let mut streams = array(reply)?.into_iter();
        let raw = match streams.next() {
            None => Vec::new(),
            Some(stream) => {
                let mut parts = array(stream)?.into_iter();
                parts.nth(1).map(array).unwrap_or(Ok(Vec::new()))?
            }
        };
        let entries = flatten(raw)?;
        if let Some(entry) = entries.last() {
            last.revision = Some(entry.revision);
            last.events = Some(entry.events.clone());
        }
        Ok(entries)
    }

    /// The events of `revision` in the log entry whose id is that revision: the last one
    /// the hub read, or the log's newest when the hub read the revision counter (what the
    /// hub compares after a reconnection, even before it has read an entry of its own).
    /// A group's entry holds several revisions, the last one its id's, so the record of
    /// that revision is looked for among them. `None` when the log holds it no longer, or
    /// holds it in the entry of a group written since (whose id is a later revision).
    async fn events_of(&self, con: &mut Con, revision: i64) -> Result<Option<Vec<Event>>> {
        let id = format!("{revision}-0");
        let reply: Value = redis::cmd("XRANGE")
            .arg(self.log.as_slice())
            .arg(&id)
            .arg(&id)
            .query_async(con)
            .await
            .map_err(|e| unavailable(map_error("watch", e)))?;
        let newest = flatten(array(reply)?)?;
        Ok(newest
            .into_iter()
            .find(|entry| entry.revision == revision)
            .map(|entry| entry.events))
    }

    /// After a reconnection: whether the server still holds the last entry the hub read,
    /// as it read it. A failover to a replica that lacks the entries a cut-off master
    /// acknowledged without `wait_replicas` rewinds the log; the new master then issues
    /// those revisions again to other writes, and reading on after `last` would skip them
    /// without a word. The hub ends instead, with `Compacted`: every watch learns that the
    /// history it read is gone, and relists.
    async fn check_continuity(&self, con: &mut Con, last: &Tail) -> Result<()> {
        let (Some(revision), Some(events)) = (last.revision, &last.events) else {
            return Ok(());
        };
        match self.events_of(con, revision).await? {
            Some(found) if found == *events => Ok(()),
            _ => Err(Error::compacted(revision + 1).with_context(
                "reason",
                format!(
                    "the log no longer holds revision {revision} as this watch read it (a \
                     failover to a replica that lacked it, or the log trimmed past it): \
                     relist"
                ),
            )),
        }
    }
}

/// Where the hub has read to: the last revision, and that entry's events once it has read
/// one (to check after a reconnection that the log still holds it).
#[derive(Default)]
struct Tail {
    revision: Option<i64>,
    events: Option<Vec<Event>>,
}
