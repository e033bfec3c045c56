//! Watches and compaction, served from the store's bounded event history.

use crate::core::Shared;
use keyplane_contract::driver::Checked;
use keyplane_contract::{Result, WatchOptions, WatchStream};

/// A watch of `opts.range` from `opts.start_revision` (or from now).
pub(crate) fn watch(shared: &Shared, opts: Checked<WatchOptions>) -> Result<WatchStream> {
    let mut state = shared.state()?;
    let current = state.revision;
    state.history.watch(&opts, current)
}

/// Discards the history before `revision`.
pub(crate) fn compact(shared: &Shared, revision: i64) -> Result<()> {
    let mut state = shared.state()?;
    let current = state.revision;
    state.history.compact(revision, current)
}
