//! [`Mirror`], the handle readers hold, and what it shares with the mirror's task.

use super::batch::{MirrorBatch, MirrorHealth};
use super::snapshot::MirrorSnapshot;
use crate::{Error, ErrorKind, Result};
use arc_swap::ArcSwap;
use futures::Stream;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::sync::{mpsc, watch};

/// What the mirror's task shares with its handles.
pub(crate) struct Shared<K, V> {
    pub(super) current: ArcSwap<MirrorSnapshot<K, V>>,
    pub(super) revision: watch::Sender<i64>,
    pub(super) subscribers: Mutex<Vec<mpsc::UnboundedSender<MirrorBatch<K, V>>>>,
    pub(super) health: Mutex<Stats>,
}

pub(crate) struct Stats {
    pub(super) store_revision: i64,
    pub(super) current_at: Instant,
    pub(super) relists: u64,
    pub(super) resyncs: u64,
    pub(super) repaired: u64,
    pub(super) last_error: Option<Error>,
}

pub(super) struct Handle<K, V> {
    pub(super) shared: Arc<Shared<K, V>>,
    pub(super) confirm: mpsc::UnboundedSender<i64>,
    pub(super) task: tokio::task::JoinHandle<()>,
}

impl<K, V> Drop for Handle<K, V> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A typed local copy of a directory ([`TypedStore::mirror`](crate::keyspace::TypedStore::mirror)) or of a whole keyspace
/// ([`TypedStore::mirror_keyspace`](crate::keyspace::TypedStore::mirror_keyspace)), kept current by a background task; see the
/// [module documentation](crate::mirror).
///
/// Cheap to clone: clones share the copy; the task stops when the last clone is dropped.
pub struct Mirror<K, V> {
    pub(super) handle: Arc<Handle<K, V>>,
}

impl<K, V> Clone for Mirror<K, V> {
    fn clone(&self) -> Self {
        Mirror {
            handle: Arc::clone(&self.handle),
        }
    }
}

impl<K, V> fmt::Debug for Mirror<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let view = self.handle.shared.current.load();
        f.debug_struct("Mirror")
            .field("revision", &view.revision())
            .field("keys", &view.len())
            .finish()
    }
}

impl<K, V> Mirror<K, V>
where
    K: Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// The current view: loaded without locks, never half a transaction.
    pub fn snapshot(&self) -> Arc<MirrorSnapshot<K, V>> {
        self.handle.shared.current.load_full()
    }

    /// The revision the current view reflects.
    pub fn revision(&self) -> i64 {
        self.handle.shared.current.load().revision()
    }

    /// The view once it reflects the store at `revision` or later: after a write returned
    /// `revision`, the mirror shows it (or something newer). A revision no write under the
    /// range reached is confirmed by reopening the watch from the view's revision with a
    /// [progress mark](crate::WatchOptions::with_progress): nothing is listed again.
    ///
    /// # Errors
    /// `Unavailable` when the mirror's task has stopped.
    pub async fn wait_for(&self, revision: i64) -> Result<Arc<MirrorSnapshot<K, V>>> {
        let mut seen = self.handle.shared.revision.subscribe();
        loop {
            if *seen.borrow_and_update() >= revision {
                return Ok(self.snapshot());
            }
            let _ = self.handle.confirm.send(revision);
            if seen.changed().await.is_err() {
                return Err(Error::new(
                    ErrorKind::Unavailable,
                    "the mirror's task has stopped",
                ));
            }
        }
    }

    /// The typed changes from now on, one [`MirrorBatch`] per published view, in order: each
    /// change exactly once, after it is visible in [`snapshot`](Self::snapshot). The stream
    /// buffers what its reader has not taken yet.
    pub fn subscribe(&self) -> MirrorSubscription<K, V> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.handle
            .shared
            .subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(tx);
        MirrorSubscription { rx }
    }

    /// How the mirror is doing.
    pub fn health(&self) -> MirrorHealth {
        let view = self.handle.shared.current.load();
        let stats = self
            .handle
            .shared
            .health
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        MirrorHealth {
            revision: view.revision(),
            keys: view.len(),
            unreadable: view.unreadable.len(),
            collections: view.collection_count(),
            store_revision: stats.store_revision,
            lag_revisions: (stats.store_revision - view.revision()).max(0),
            since_current: stats.current_at.elapsed(),
            relists: stats.relists,
            resyncs: stats.resyncs,
            repaired: stats.repaired,
            last_error: stats.last_error.clone(),
        }
    }
}

/// The stream of a mirror's [`MirrorBatch`]es ([`Mirror::subscribe`]); it ends when the
/// mirror stops.
pub struct MirrorSubscription<K, V> {
    pub(super) rx: mpsc::UnboundedReceiver<MirrorBatch<K, V>>,
}

impl<K, V> Stream for MirrorSubscription<K, V> {
    type Item = MirrorBatch<K, V>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().rx.poll_recv(cx)
    }
}

impl<K, V> fmt::Debug for MirrorSubscription<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MirrorSubscription").finish_non_exhaustive()
    }
}
