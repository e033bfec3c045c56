//! Which directories this process has open: a second open of a directory whose store is
//! open fails at once, and one whose store is closing waits for it to close, before sled's
//! own lock is tried.

use keyplane_contract::retry::Backoff;
use keyplane_contract::{Error, ErrorKind, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The pauses of an open that waits for a lock to be released, or for a closing store of the
/// same directory to close: short, as both take moments,
/// and bounded by the open's wait for sled's lock and [`CLOSING_WAIT`].
pub(crate) const LOCK_POLL: Backoff = Backoff::requests()
    .initial(Duration::from_millis(2))
    .max_delay(Duration::from_millis(10));

/// The directories open in this process, each with whether every handle to its store is
/// gone (the store is closing: a background task may still hold it for a moment). A second
/// open of a directory whose store has handles fails at once, without waiting for sled's
/// lock; one whose store is closing waits for it to close.
static OPEN_PATHS: Mutex<BTreeMap<PathBuf, bool>> = Mutex::new(BTreeMap::new());

/// How long an open waits for a store of the same directory that is closing.
const CLOSING_WAIT: Duration = Duration::from_secs(5);

/// This process's claim on a database directory, released when the store is dropped.
pub(crate) struct PathClaim(PathBuf);

impl PathClaim {
    pub(crate) fn new(path: &Path) -> Result<Self> {
        std::fs::create_dir_all(path).map_err(|e| {
            Error::new(
                ErrorKind::Config,
                "cannot create the sled database directory",
            )
            .with_source(e)
        })?;
        let path = path.canonicalize().map_err(|e| {
            Error::new(
                ErrorKind::Config,
                "cannot resolve the sled database directory",
            )
            .with_source(e)
        })?;
        let policy = LOCK_POLL.deadline(Some(CLOSING_WAIT));
        let mut attempts = policy.start();
        loop {
            let mut open = OPEN_PATHS.lock().unwrap_or_else(PoisonError::into_inner);
            let closing = match open.get(&path) {
                None => {
                    open.insert(path.clone(), false);
                    return Ok(PathClaim(path));
                }
                Some(closing) => *closing,
            };
            drop(open);
            if !closing || !attempts.wait_blocking() {
                return Err(Error::new(
                    ErrorKind::Unavailable,
                    "the sled database directory is already open in this process; share \
                     the open SledStore (it is cheap to clone) instead of opening it twice",
                )
                .set_retryable(false));
            }
        }
    }

    /// The handle that marks the directory's store as closing when the last
    /// [`SledStore`](crate::SledStore) clone is dropped.
    pub(crate) fn handle(&self) -> OpenHandle {
        OpenHandle(self.0.clone())
    }
}

impl Drop for PathClaim {
    fn drop(&mut self) {
        OPEN_PATHS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.0);
    }
}

/// Held (shared) by every [`SledStore`](crate::SledStore) clone: dropping the last one marks
/// the store as closing, so that an open of the same directory waits for the store's
/// background tasks to let go of it instead of failing.
pub(crate) struct OpenHandle(PathBuf);

impl Drop for OpenHandle {
    fn drop(&mut self) {
        if let Some(closing) = OPEN_PATHS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(&self.0)
        {
            *closing = true;
        }
    }
}
