//! [`Marks`]: what the reads of one core have learnt of the history they read, which tells
//! a revision of that history from the same revision of another one (a failover that lost
//! writes).

use keyplane_contract::{Error, Result};

/// How many revisions' marks a core keeps: a listing's pages follow its first within
/// moments, so the newest suffice.
const MARKS_KEPT: usize = 1024;

/// What the reads of one core have learnt of the history they read, to tell a revision of
/// it from the same revision of another history: the highest revision any read found, and
/// the marks (see `range.lua`: the SHA-1 of the events the log holds for a revision) of the
/// revisions pages were read at.
///
/// A failover to a replica that lacked the master's last writes (acknowledged without
/// `wait_replicas`) takes the store back to an earlier revision, and the new master gives
/// the lost revisions to other writes. A read pinned to a revision R of the lost history
/// (every page of a listing after its first is) then finds the store before R, or a log
/// whose events at R are not the ones the first page was read after: either way the
/// history the listing read is gone, and the read answers `Compacted`, as a watch does when
/// it finds the log no longer holds what it read, so that the reader relists.
///
/// Only what this core read is known: a revision another process read, or one a first page
/// that no page followed was read at, is checked from its first pinned read on (a pinned
/// read that finds no mark of its revision keeps the one it reads); before that, one beyond
/// the store's current revision is `InvalidArgument`, as a revision no history reached.
#[derive(Default)]
pub(crate) struct Marks {
    known: std::sync::Mutex<Known>,
}

#[derive(Default)]
struct Known {
    highest: i64,
    marks: std::collections::HashMap<i64, Vec<u8>>,
    /// The revisions of `marks`, oldest first.
    order: std::collections::VecDeque<i64>,
}

impl Known {
    /// Keeps `mark` for `revision` (nothing for an empty mark).
    fn keep(&mut self, revision: i64, mark: &[u8]) {
        if mark.is_empty() {
            return;
        }
        if let Some(kept) = self.marks.get_mut(&revision) {
            if kept.as_slice() != mark {
                *kept = mark.to_vec();
            }
            return;
        }
        if self.order.len() >= MARKS_KEPT
            && let Some(oldest) = self.order.pop_front()
        {
            self.marks.remove(&oldest);
        }
        self.marks.insert(revision, mark.to_vec());
        self.order.push_back(revision);
    }
}

impl Marks {
    fn known(&self) -> std::sync::MutexGuard<'_, Known> {
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes in a read of the current revision `current`, and the mark of that revision
    /// (empty when none was read). The mark is the present history's: it replaces one an
    /// earlier read kept, which was of a lost history (so a listing whose first page is read
    /// at the very revision of a page of the lost history is not told apart from it).
    pub(crate) fn read_now(&self, current: i64, mark: &[u8]) {
        let mut known = self.known();
        known.highest = known.highest.max(current);
        known.keep(current, mark);
    }

    /// Checks a read at `revision`, which found the store at `current` and `mark` for that
    /// revision (empty when the log does not hold it), against what earlier reads found.
    ///
    /// # Errors
    /// `Compacted` when the store's history is no longer the one `revision` was read in.
    pub(crate) fn check(&self, revision: i64, current: i64, mark: &[u8]) -> Result<()> {
        let mut known = self.known();
        let rewound = if revision > current {
            revision <= known.highest
        } else {
            match known.marks.get(&revision) {
                Some(seen) => !mark.is_empty() && seen.as_slice() != mark,
                None => {
                    known.keep(revision, mark);
                    false
                }
            }
        };
        known.highest = known.highest.max(current);
        if !rewound {
            return Ok(());
        }
        Err(Error::compacted(revision + 1)
            .with_context("revision", revision)
            .with_context(
                "reason",
                format!(
                    "the store's history no longer holds revision {revision} as this store \
                     read it (a failover to a replica that lacked it; the store is now at \
                     {current}): relist"
                ),
            ))
    }
}
