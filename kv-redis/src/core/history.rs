//! [`Log`]: the event log after a revision, as a read at that revision rewinds through it,
//! with the previous entries that other programs' overwrites and deletes left unknown
//! filled in from the log itself where it still holds them.

use super::{Core, LogStart};
use crate::core::decode::{LogEntry, array, entry, log_entries};
use crate::error::map_error;
use keyplane_contract::raw::emulation::{Logged, check_revision};
use keyplane_contract::{Entry, Error, Event, RangeOptions, Result};
use redis::Value;

/// The event log after a revision, read page by page.
pub(crate) struct Log {
    /// The revision read at.
    from: i64,
    /// The last revision whose log entry was read.
    pub(crate) last: i64,
    /// Every revision read, ascending.
    pub(crate) events: Vec<Logged>,
    /// Events whose previous entry the log entry does not carry, not yet filled in.
    unknown: Vec<Unknown>,
    key: Vec<u8>,
}

/// An event of another program's overwrite or delete, as the reconcile script logged it:
/// the previous value was gone before the store saw the change, so the event carries only
/// the previous metadata.
struct Unknown {
    revision: i64,
    key: Vec<u8>,
    meta: Vec<u8>,
}

impl Log {
    /// Checks that the log still holds every revision after `from`.
    pub(crate) async fn open(core: &Core, from: i64) -> Result<Self> {
        let start = core.log_start(from.saturating_add(1), 1, "range").await?;
        Log::start(
            from,
            LogStart {
                entries: Vec::new(),
                ..start
            },
            core,
        )
    }

    /// The log after `from` as `start` found it: checks that it still holds every revision
    /// after `from`, and takes in the entries read with it (from `from` + 1 on).
    pub(crate) fn start(from: i64, start: LogStart, core: &Core) -> Result<Self> {
        let LogStart {
            current,
            first,
            compacted,
            entries,
        } = start;
        let oldest = if first > 0 { first - 1 } else { current }.max(compacted);
        check_revision(from, current, oldest)?;
        let mut log = Log {
            from,
            last: from,
            events: Vec::new(),
            unknown: Vec::new(),
            key: core.internal("log"),
        };
        log.take_in(entries)?;
        Ok(log)
    }

    /// Reads the log entries after the last one read, up to revision `to`: however fast
    /// others write meanwhile, the read ends there.
    ///
    /// # Errors
    /// `Compacted` when a revision up to `to` is no longer in the log.
    pub(crate) async fn catch_up_to(&mut self, core: &Core, to: i64) -> Result<()> {
        while self.last < to {
            // A stream entry holds one revision or more, so as many entries as revisions are
            // wanted reach `to`; the last may hold revisions after it.
            let count = usize::try_from(to - self.last).map_or(1000, |n| n.min(1000));
            let entries = self.read(core, self.last + 1, count).await?;
            let before = self.last;
            self.take_in(entries)?;
            if self.last == before {
                // Every revision is in the log: the ones missing were trimmed meanwhile.
                return Err(Error::compacted(self.last + 1).with_context("revision", self.from));
            }
        }
        Ok(())
    }

    /// Takes in log entries that follow the last one read, in order (the revisions of the
    /// first that were read already are skipped).
    fn take_in(&mut self, entries: Vec<Value>) -> Result<()> {
        for entry in entries.into_iter().map(log_entries) {
            for entry in entry? {
                self.take(entry)?;
            }
        }
        Ok(())
    }

    /// Takes in one revision of the log.
    fn take(&mut self, entry: LogEntry) -> Result<()> {
        if entry.revision <= self.last {
            return Ok(());
        }
        if entry.revision != self.last + 1 {
            // Every revision is in the log: a gap is history trimmed meanwhile.
            return Err(Error::compacted(entry.revision).with_context("revision", self.from));
        }
        self.last = entry.revision;
        self.unknown
            .extend(entry.unknown_prev.into_iter().map(|(key, meta)| Unknown {
                revision: entry.revision,
                key,
                meta,
            }));
        self.events.push(Logged {
            revision: entry.revision,
            events: entry.events,
            deleted: entry.deleted,
        });
        Ok(())
    }

    /// The revisions read, from the first after the revision read at up to `to`.
    pub(crate) fn until(&self, to: i64) -> &[Logged] {
        &self.events[..self.events.partition_point(|l| l.revision <= to)]
    }

    /// Fills in the previous entries of the events of `opts`'s keys that lack them.
    ///
    /// Such an event's previous metadata names the revision of the key's last write the
    /// store saw, and that revision's log entry holds the value it wrote (the metadata
    /// matches it field for field): in the store's history the key held that value until
    /// the event, so a read at any revision in between lists it. Nothing is made up: where
    /// the log no longer holds that revision, the read is `Compacted` at the event.
    pub(crate) async fn fill_unknown(&mut self, core: &Core, opts: &RangeOptions) -> Result<()> {
        let (start, end) = opts.effective_bounds();
        let in_read = |key: &[u8]| {
            key >= start.as_slice()
                && end.as_ref().is_none_or(|e| key < e.as_slice())
                && opts.range.contains(key)
        };
        let (wanted, rest): (Vec<Unknown>, Vec<Unknown>) = std::mem::take(&mut self.unknown)
            .into_iter()
            .partition(|u| in_read(&u.key));
        self.unknown = rest;
        for unknown in wanted {
            // Only a key's first event after the revision read at gives its entry then.
            let earlier = self
                .events
                .iter()
                .take_while(|l| l.revision < unknown.revision)
                .any(|l| l.events.iter().any(|e| e.key() == unknown.key.as_slice()));
            if earlier {
                continue;
            }
            let prev = self.written(core, &unknown).await?.ok_or_else(|| {
                Error::compacted(unknown.revision).with_context("revision", self.from)
            })?;
            let logged = self
                .events
                .iter_mut()
                .find(|l| l.revision == unknown.revision);
            for event in logged.into_iter().flat_map(|l| l.events.iter_mut()) {
                match event {
                    Event::Put { entry, prev: p } if entry.key == unknown.key => {
                        *p = Some(prev.clone())
                    }
                    Event::Delete { key, prev: p } if *key == unknown.key => {
                        *p = Some(prev.clone())
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// The entry the store wrote with `unknown`'s previous metadata, from the log entry of
    /// that write; `None` when the log no longer holds it.
    async fn written(&self, core: &Core, unknown: &Unknown) -> Result<Option<Entry>> {
        if unknown.meta.is_empty() {
            return Ok(None);
        }
        let meta = entry(unknown.key.clone(), Vec::new(), &unknown.meta)?;
        let at = meta.mod_revision;
        // The stream entry that holds revision `at`: the first whose id is not below it.
        let Some(raw) = self.read(core, at, 1).await?.pop() else {
            return Ok(None);
        };
        let Some(written) = log_entries(raw)?.into_iter().find(|e| e.revision == at) else {
            return Ok(None);
        };
        Ok(written.events.into_iter().find_map(|event| match event {
            Event::Put { entry, .. }
                if entry.key == meta.key
                    && (
                        entry.create_revision,
                        entry.mod_revision,
                        entry.version,
                        entry.lease,
                    ) == (
                        meta.create_revision,
                        meta.mod_revision,
                        meta.version,
                        meta.lease,
                    ) =>
            {
                Some(entry)
            }
            _ => None,
        }))
    }

    /// At most `count` stream entries of the log, from the one holding revision `from` on.
    async fn read(&self, core: &Core, from: i64, count: usize) -> Result<Vec<Value>> {
        let reply: Value = redis::cmd("XRANGE")
            .arg(self.key.as_slice())
            .arg(format!("{from}-0"))
            .arg("+")
            .arg("COUNT")
            .arg(count)
            .query_async(&mut core.con.clone())
            .await
            .map_err(|e| map_error("range", e))?;
        array(reply)
    }
}
