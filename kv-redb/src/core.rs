//! The shared state of an open store and the machinery every operation uses: opening the
//! database file and recovering the state ([`open`]), the tables ([`tables`]) and the
//! encoding of their values ([`codec`]), and the single writer ([`writer`]): every write is
//! a job queued; the jobs queued together run in one redb write transaction ([`section`]),
//! after the leases that are due expire, and the new revision is published to watchers once
//! the transaction is committed.

pub(crate) mod codec;
pub(crate) mod open;
mod section;
mod state;
pub(crate) mod tables;
pub(crate) mod writer;

pub(crate) use section::{Section, remove_lease};
pub(crate) use state::{Plan, Shared, Writer, now_ms, oldest};

use std::sync::Arc;
use tokio::sync::Notify;

/// An open store.
pub(crate) struct Core {
    pub(crate) shared: Arc<Shared>,
    /// The writer thread; dropping it lets the thread finish its queue and joins it (it and
    /// its thread hold the last other references to the database, so the file closes then).
    pub(crate) writer: writer::Handle,
    /// Wakes the lease expiry task (a lease was granted or renewed, or the store closed).
    pub(crate) expiry_wake: Arc<Notify>,
    /// The directory of a [`RedbStore::temporary`](crate::RedbStore::temporary) store,
    /// removed last.
    pub(crate) _temp_dir: Option<tempfile::TempDir>,
}

impl Drop for Core {
    fn drop(&mut self) {
        self.expiry_wake.notify_one();
    }
}
