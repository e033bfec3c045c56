//! The contender queue that [`Lock`](crate::recipes::Lock) and [`Election`](crate::recipes::Election) share,
//! built on a lease and transactions as etcd's concurrency recipes are.
//!
//! Each contender creates the key `<prefix><lease id in hex>` attached to its lease, in a txn
//! guarded by `Compare::absent`. Contenders are queued by the create revision of their keys:
//! the head is the key with the smallest one, and every waiter watches the deletion of the
//! key just before it (no polling, no thundering herd). A crashed head's key is deleted when
//! its lease expires, which hands the head on.

use super::held::Hold;
use crate::Entry;
use crate::LeaseId;
use crate::Store;
use crate::raw::validate_key;
use crate::retry::Backoff;
use crate::{Compare, CompareOp, OpResult, Txn, TxnOp};
use crate::{Error, ErrorKind, Result};
use crate::{Event, WatchOptions, WatchStream};
use crate::{KeyRange, RangeOptions};
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A queue of contenders: the keys directly under `prefix` named by a lease id in hex.
#[derive(Clone)]
pub(crate) struct Queue {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) prefix: Vec<u8>,
}

impl Queue {
    /// The queue whose contender keys are `<prefix><lease id in hex>`.
    ///
    /// # Errors
    /// `InvalidKey` when `prefix` is not a valid key.
    pub(crate) fn new(store: Arc<dyn Store>, prefix: Vec<u8>) -> Result<Self> {
        validate_key(&prefix)?;
        Ok(Queue { store, prefix })
    }

    /// Whether `key` (under the prefix) names a contender: only direct children named by a
    /// lease id are. The keys of a queue whose prefix extends this one are not contenders.
    pub(crate) fn is_contender(&self, key: &[u8]) -> bool {
        key.strip_prefix(self.prefix.as_slice())
            .is_some_and(|id| !id.is_empty() && id.iter().all(u8::is_ascii_hexdigit))
    }

    /// Creates this contender's key holding `value`, attached to `lease`, and waits until it
    /// heads the queue.
    ///
    /// Dropping the future while it waits leaves the queue.
    ///
    /// # Errors
    /// As [`Queue::enqueue`], and `LockLost` when the lease ended while waiting.
    pub(crate) async fn join_and_wait(&self, lease: LeaseId, value: &[u8]) -> Result<Held> {
        let entry = self.enqueue(lease, value).await?;
        loop {
            let (ahead, revision) = self.ahead_of(&entry).await?;
            let Some(ahead) = ahead else {
                return Ok(entry.into_held(revision));
            };
            self.wait_for_delete(&ahead.key, &entry.key, revision)
                .await?;
        }
    }

    /// Creates this contender's key and keeps it only if nobody is queued before it;
    /// otherwise deletes it again before returning `None`.
    ///
    /// # Errors
    /// As [`Queue::enqueue`].
    pub(crate) async fn try_join(&self, lease: LeaseId, value: &[u8]) -> Result<Option<Held>> {
        let entry = self.enqueue(lease, value).await?;
        match self.ahead_of(&entry).await? {
            (None, revision) => Ok(Some(entry.into_held(revision))),
            (Some(_), _) => {
                entry.leave().await?;
                Ok(None)
            }
        }
    }

    /// Creates this contender's key, attached to `lease`.
    ///
    /// # Errors
    /// `AlreadyExists` when the key exists: this lease is already queued.
    async fn enqueue(&self, lease: LeaseId, value: &[u8]) -> Result<Pending> {
        let mut key = self.prefix.clone();
        key.extend_from_slice(lease.to_string().as_bytes());
        let resp = self
            .store
            .txn(
                Txn::new()
                    .when([Compare::absent(&key)])
                    .and_then([TxnOp::put_with_lease(&key, value, lease)]),
            )
            .await?;
        if !resp.succeeded {
            return Err(Error::new(
                ErrorKind::AlreadyExists,
                "this lease already holds or waits for this lock",
            )
            .with_context("key", crate::raw::escape_bytes(&key)));
        }
        Ok(Pending {
            store: self.store.clone(),
            key,
            token: resp.revision,
            lease,
            armed: true,
        })
    }

    /// Every contender's key, in queue order (by create revision), read at one revision; and
    /// that revision.
    pub(crate) async fn contenders(&self, keys_only: bool) -> Result<(Vec<Entry>, i64)> {
        let mut opts = RangeOptions::prefix(&self.prefix).limit(256);
        if keys_only {
            opts = opts.keys_only();
        }
        let mut all = Vec::new();
        let mut first_revision = None;
        loop {
            let page = self.store.range(opts.clone()).await?;
            first_revision.get_or_insert(page.revision);
            all.extend(
                page.entries
                    .into_iter()
                    .filter(|e| self.is_contender(&e.key)),
            );
            match page.next {
                Some(next) => opts = opts.after(next),
                None => break,
            }
        }
        all.sort_by_key(|e| e.create_revision);
        Ok((all, first_revision.unwrap_or_default()))
    }

    /// The contender queued just before `me` (the greatest create revision below its token),
    /// and the revision the queue was read at.
    ///
    /// # Errors
    /// `LockLost` when `me`'s key is gone (its lease ended).
    async fn ahead_of(&self, me: &Pending) -> Result<(Option<Entry>, i64)> {
        let (contenders, revision) = self.contenders(true).await?;
        if !contenders
            .iter()
            .any(|e| e.key == me.key && e.create_revision == me.token)
        {
            return Err(lost(&me.key, "the key was deleted while waiting"));
        }
        let ahead = contenders
            .into_iter()
            .take_while(|e| e.create_revision < me.token)
            .last();
        Ok((ahead, revision))
    }

    /// Waits until `ahead` is deleted after `revision`, or fails when `me` is.
    async fn wait_for_delete(&self, ahead: &[u8], me: &[u8], revision: i64) -> Result<()> {
        let from = |k: &[u8]| WatchOptions::key(k).from_revision(revision + 1);
        let mut ahead_watch = self.store.watch(from(ahead)).await?;
        let mut my_watch = self.store.watch(from(me)).await?;
        loop {
            tokio::select! {
                item = ahead_watch.next() => match deleted(item) {
                    Watched::Deleted | Watched::Recheck => return Ok(()),
                    Watched::Other => {}
                    Watched::Failed(e) => return Err(e),
                },
                item = my_watch.next() => match deleted(item) {
                    Watched::Deleted => {
                        return Err(lost(me, "the key was deleted while waiting"));
                    }
                    Watched::Recheck => return Ok(()),
                    Watched::Other => {}
                    Watched::Failed(e) => return Err(e),
                },
            }
        }
    }
}

/// What a watch item says about the watched key.
enum Watched {
    Deleted,
    Other,
    /// The history is no longer retained: read the queue again.
    Recheck,
    Failed(Error),
}

fn deleted(item: Option<Result<crate::WatchBatch>>) -> Watched {
    match item {
        Some(Ok(batch)) => {
            if batch
                .events
                .iter()
                .any(|e| matches!(e, Event::Delete { .. }))
            {
                Watched::Deleted
            } else {
                Watched::Other
            }
        }
        Some(Err(e)) if matches!(e.kind(), ErrorKind::Compacted { .. }) => Watched::Recheck,
        Some(Err(e)) => Watched::Failed(e),
        None => Watched::Failed(Error::new(
            ErrorKind::Unavailable,
            "the watch ended without an error",
        )),
    }
}

/// A `LockLost` error about `key`.
pub(crate) fn lost(key: &[u8], message: &str) -> Error {
    Error::new(ErrorKind::LockLost, message).with_context("key", crate::raw::escape_bytes(key))
}

/// Deletes `key` if it still has create revision `token`: releases exactly this holder's
/// claim, never a later one.
async fn release(store: &dyn Store, key: &[u8], token: i64) -> Result<bool> {
    let resp = store
        .txn(
            Txn::new()
                .when([Compare::create_revision(key, CompareOp::Equal, token)])
                .and_then([TxnOp::delete(key)]),
        )
        .await?;
    Ok(resp.succeeded && matches!(resp.results[..], [OpResult::Delete { deleted: 1 }]))
}

/// Releases `key` from a spawned task, when a runtime is available (otherwise the lease's
/// expiry releases it).
fn release_in_background(store: &Arc<dyn Store>, key: &[u8], token: i64) {
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        let (store, key) = (store.clone(), key.to_vec());
        handle.spawn(async move {
            if let Err(e) = release(&*store, &key, token).await {
                tracing::warn!(key = %crate::raw::escape_bytes(&key), error = %e, "queue key release failed");
            }
        });
    }
}

/// A contender's key while it waits; leaves the queue when dropped.
struct Pending {
    store: Arc<dyn Store>,
    key: Vec<u8>,
    token: i64,
    lease: LeaseId,
    armed: bool,
}

impl Pending {
    /// Leaves the queue now, deleting the key before returning. When that fails, the drop
    /// tries again in the background.
    async fn leave(mut self) -> Result<()> {
        release(&*self.store, &self.key, self.token).await?;
        self.armed = false;
        Ok(())
    }

    fn into_held(mut self, revision: i64) -> Held {
        self.armed = false;
        let (tx, rx) = watch::channel(false);
        let monitor = tokio::spawn(monitor(
            self.store.clone(),
            self.key.clone(),
            self.token,
            revision,
            tx,
        ));
        tracing::debug!(key = %crate::raw::escape_bytes(&self.key), "queue head reached");
        Held {
            store: self.store.clone(),
            key: std::mem::take(&mut self.key),
            token: self.token,
            lease: self.lease,
            lost: rx,
            monitor,
            released: false,
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if self.armed {
            release_in_background(&self.store, &self.key, self.token);
        }
    }
}

/// Watches the key from `revision + 1` and reports when it is deleted or recreated.
async fn monitor(
    store: Arc<dyn Store>,
    key: Vec<u8>,
    token: i64,
    mut revision: i64,
    lost: watch::Sender<bool>,
) {
    // Between a failed watch and the next: quick at first, never more than 100 ms, which
    // bounds how late a loss is seen.
    let policy = Backoff::requests().max_delay(Duration::from_millis(100));
    let mut failures = policy.start_at_failure();
    loop {
        let watch = WatchOptions::key(&key).from_revision(revision + 1);
        if let Ok(mut stream) = store.watch(watch).await
            && ended(&mut stream, token).await
        {
            lost.send_replace(true);
            return;
        }
        // The watch failed: confirm by reading the key, then watch again from there.
        match store
            .range(RangeOptions::new(KeyRange::Key(key.clone())))
            .await
        {
            Ok(page)
                if page
                    .entries
                    .first()
                    .is_some_and(|e| e.create_revision == token) =>
            {
                revision = page.revision;
                // The policy has no bound: this pauses and never gives up.
                failures.wait().await;
            }
            _ => {
                lost.send_replace(true);
                return;
            }
        }
    }
}

/// Reads the stream until the key is deleted or recreated (`true`) or the stream fails
/// (`false`).
async fn ended(stream: &mut WatchStream, token: i64) -> bool {
    while let Some(Ok(batch)) = stream.next().await {
        for event in batch.events {
            match event {
                Event::Delete { .. } => return true,
                Event::Put { entry, .. } if entry.create_revision != token => return true,
                Event::Put { .. } | Event::Collection(_) => {}
            }
        }
    }
    false
}

/// The head of a queue: its key, watched until it is released or lost. Released in the
/// background when dropped.
pub(crate) struct Held {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) key: Vec<u8>,
    pub(crate) token: i64,
    pub(crate) lease: LeaseId,
    lost: watch::Receiver<bool>,
    monitor: JoinHandle<()>,
    released: bool,
}

impl Held {
    /// The [`Hold`] of this head, for the handle that embeds it; `message` is what its loss
    /// error says.
    pub(crate) fn hold(&self, message: &'static str) -> Hold {
        Hold::of_key(
            self.key.clone(),
            self.token,
            self.lease,
            self.lost.clone(),
            message,
        )
    }

    /// Deletes the key if it is still this head's.
    ///
    /// # Errors
    /// `LockLost` (with `message`) when it was not; backend errors.
    pub(crate) async fn release(mut self, message: &str) -> Result<()> {
        self.monitor.abort();
        self.released = true;
        if release(&*self.store, &self.key, self.token).await? {
            Ok(())
        } else {
            Err(lost(&self.key, message))
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.monitor.abort();
        if !self.released {
            release_in_background(&self.store, &self.key, self.token);
        }
    }
}
