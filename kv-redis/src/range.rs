//! Reads: the revision counter; `get` as one MULTI/EXEC of HGET and GET; paged ranges over
//! the ordered index (ZRANGEBYLEX, never SCAN), reconciling first the keys of the page that
//! other programs deleted; at a past revision, the current entries rewound through the
//! event log.

pub(crate) mod span;

use crate::core::decode::{array, byte_list, corrupted, entry, int, opt_bytes};
use crate::core::history::Log;
use crate::core::{Core, LogStart};
use crate::error::map_error;
use crate::reconcile::{Mode, reconcile_keys};
use keyplane_contract::raw::emulation::{Touched, merge_page, rewind, rewind_with_collections};
use keyplane_contract::{
    CollectionEntry, CollectionKind, Entry, Error, ErrorKind, RangeOptions, RangeResult, Result,
};
use redis::Value;

/// The store revision (see [`Core::revision`]).
pub(crate) async fn revision(core: &Core) -> Result<i64> {
    core.revision().await
}

/// The entry of a plain key: its metadata and value read in one atomic MULTI/EXEC, which
/// costs the server far less than a script run and, like the read scripts, is served by
/// read-only replicas. A string another program wrote (a value without metadata) is adopted
/// by the reconcile script and read again: two more round trips, once per such key. `key`
/// was checked by the contract's front.
pub(crate) async fn get(core: &Core, key: &[u8]) -> Result<Option<Entry>> {
    // A key that another program keeps rewriting and deleting between the read and the
    // adoption could keep this going; a few rounds are plenty in practice.
    for _ in 0..4 {
        match read_key(core, key).await? {
            KeyRead::Entry(entry) => return Ok(Some(entry)),
            KeyRead::Absent => return Ok(None),
            KeyRead::Foreign => {
                reconcile_keys(core, &[key.to_vec()], Mode::Full).await?;
            }
        }
    }
    Err(Error::new(
        ErrorKind::Unavailable,
        "another program keeps replacing the key while it is read",
    )
    .with_context("key", keyplane_contract::raw::escape_bytes(key))
    .set_retryable(true))
}

/// What one atomic read of a key found.
enum KeyRead {
    Entry(Entry),
    Absent,
    /// A string without metadata: another program wrote it.
    Foreign,
}

/// Values up to this size are read by [`read_key_fast`] first.
const FAST_READ_MAX: usize = 64 << 10;

async fn read_key(core: &Core, key: &[u8]) -> Result<KeyRead> {
    let pair = core.reads.meta_and_value(key).await?;
    if pair.atomic {
        return settle(key, pair.meta, pair.value);
    }
    if let Some(read) = read_key_fast(key, pair.meta, pair.value)? {
        return Ok(read);
    }
    read_key_atomic(core, key).await
}

/// What a read without MULTI/EXEC found: the metadata, then the value, pipelined (under load
/// the gets of a moment are read together, atomically: see [`crate::core::reads`]). Every
/// script writes a key's value and its metadata together, and the metadata holds the value's
/// digest, so a value whose digest is the one of the metadata read just before is the value
/// that metadata was written with: the pair is the key as it was when the metadata was read, a
/// moment within the call. A key that is absent at both reads is absent when the value was
/// read (any metadata then without a value is another program's delete, which reads as
/// absent too). `None` for anything else (digests differ, no digest, a collection, another
/// program's string, a large value), which the atomic read settles.
fn read_key_fast(key: &[u8], meta: Value, value: Value) -> Result<Option<KeyRead>> {
    Ok(match (meta, value) {
        (Value::Nil, Value::Nil) => Some(KeyRead::Absent),
        (Value::BulkString(meta), Value::BulkString(value))
            if value.len() <= FAST_READ_MAX && digest_matches(&meta, &value) =>
        {
            Some(KeyRead::Entry(entry(key.to_vec(), value, &meta)?))
        }
        _ => None,
    })
}

/// Whether metadata `meta` records the digest of `value`: the first 16 hex digits of its
/// SHA-1, as the scripts write it.
fn digest_matches(meta: &[u8], value: &[u8]) -> bool {
    let Some(recorded) = meta.rsplit(|&b| b == b':').next() else {
        return false;
    };
    if recorded.len() != 16 || meta.iter().filter(|&&b| b == b':').count() != 4 {
        return false;
    }
    crate::core::value_digest(value) == *recorded
}

/// A read of the metadata and the value in one MULTI/EXEC.
async fn read_key_atomic(core: &Core, key: &[u8]) -> Result<KeyRead> {
    let pair = core.reads.meta_and_value_atomic(key).await?;
    settle(key, pair.meta, pair.value)
}

/// What a key's metadata and value, read at one moment, say it is.
fn settle(key: &[u8], meta: Value, value: Value) -> Result<KeyRead> {
    let Some(meta) = opt_bytes(reply_or_error(meta)?)? else {
        // Without metadata: a collection (its GET failed) is not a plain entry; a string is
        // another program's.
        return Ok(match value {
            Value::BulkString(_) | Value::SimpleString(_) => KeyRead::Foreign,
            _ => KeyRead::Absent,
        });
    };
    match value {
        Value::BulkString(value) => entry(key.to_vec(), value, &meta).map(KeyRead::Entry),
        // Metadata without a string: another program deleted the key or replaced it with
        // a collection, which the reconcile script records before the key is read again.
        Value::Nil | Value::ServerError(_) => Ok(KeyRead::Foreign),
        other => Err(corrupted(format!("a GET reply of {other:?}"))),
    }
}

/// The error of one command inside a MULTI/EXEC reply, mapped like any other.
fn reply_or_error(value: Value) -> Result<Value> {
    match value {
        Value::ServerError(e) => Err(map_error("get", e.into())),
        other => Ok(other),
    }
}

/// One page of `opts` (checked by the contract's front).
pub(crate) async fn range(core: &Core, opts: RangeOptions) -> Result<RangeResult> {
    if opts.collections {
        return range_with_collections(core, &opts).await;
    }
    let read = if opts.count_only {
        Read::Count
    } else {
        Read::Entries {
            limit: opts.limit,
            values: !opts.keys_only,
            collections: None,
            checked: false,
        }
    };
    // A page pinned to a revision (every page after a listing's first) goes straight to
    // the read at a revision, which costs the same round trip when nothing moved and saves
    // one when something did. A pinned count reads the count first: rewinding needs every
    // key of the range, which only a moved revision justifies.
    if let Some(revision) = opts.pinned_revision().filter(|_| !opts.count_only) {
        return range_at(core, &opts, revision).await;
    }
    let current = read_current(core, &opts, read, At::of(&opts)).await?;
    match opts.pinned_revision() {
        Some(revision) => {
            core.reads
                .marks
                .check(revision, current.revision, &current.mark)?;
            if revision != current.revision {
                // Pinned to a revision that has passed: the read above is of no use.
                return range_at(core, &opts, revision).await;
            }
            Ok(page_now(&opts, current))
        }
        None => {
            core.reads.marks.read_now(current.revision, &current.mark);
            Ok(page_now(&opts, current))
        }
    }
}

/// Which revision a run of the range script reads at, and what it reads of the log for it.
#[derive(Clone, Copy)]
enum At {
    /// The current revision, marked when more keys follow the page (see `range.lua`): the
    /// first page of a listing, whose next pages are read at its revision.
    Now,
    /// A past revision, first read: its mark, and the log after it.
    Pinned(i64),
    /// A past revision read again: the log already read is enough.
    Again,
}

impl At {
    /// A read of `opts` at the revision it is pinned to, else now.
    fn of(opts: &RangeOptions) -> At {
        opts.pinned_revision().map_or(At::Now, At::Pinned)
    }
}

/// A page of plain entries and collections, both read by one script run.
async fn range_with_collections(core: &Core, opts: &RangeOptions) -> Result<RangeResult> {
    let per_source = opts.limit.filter(|_| !opts.count_only).map(|l| l + 1);
    let read = Read::Entries {
        limit: per_source,
        values: !(opts.keys_only || opts.count_only),
        collections: Some(per_source),
        checked: false,
    };
    if let Some(revision) = opts.pinned_revision().filter(|_| !opts.count_only) {
        return range_at(core, opts, revision).await;
    }
    let current = read_current(core, opts, read, At::of(opts)).await?;
    match opts.pinned_revision() {
        Some(revision) => {
            core.reads
                .marks
                .check(revision, current.revision, &current.mark)?;
            if revision != current.revision {
                return range_at(core, opts, revision).await;
            }
        }
        None => core.reads.marks.read_now(current.revision, &current.mark),
    }
    Ok(merge_page(
        opts,
        current.revision,
        current.entries,
        current.collections,
    ))
}

fn page_now(opts: &RangeOptions, current: Current) -> RangeResult {
    if opts.count_only {
        return RangeResult::counted(current.count, current.revision);
    }
    RangeResult::page(current.entries, !current.complete, current.revision)
}

/// How many times a read at a past revision reads the index again because keys of its own
/// range were written after it and the page it fetched may be short of them. Each round
/// fetches twice the allowance the last one found wanting, so only a range whose own keys
/// are rewritten faster than the allowance doubles could exhaust them.
const REWIND_ATTEMPTS: usize = 16;

/// A page of `opts` at a past `revision`: the index read now, at some revision C, with the
/// keys written after `revision` rewound to what they were then, from the log's events of
/// the revisions after `revision` up to C and no further.
///
/// The index read fixes C, so the log is read up to it and never chases writes landing
/// meanwhile: writes elsewhere in the database cost only the log entries read, and never
/// make the read start again. It starts again only when keys of the range itself were
/// written after `revision` more than the page's fetch allowed for (a page of `limit`
/// needs `limit` + one per rewound key + 1 current entries).
async fn range_at(core: &Core, opts: &RangeOptions, revision: i64) -> Result<RangeResult> {
    // Keys of the range the fetch allows for, written after `revision`.
    let mut allowance = 0usize;
    let mut log: Option<Log> = None;
    for _ in 0..REWIND_ATTEMPTS {
        let (fetch, read) = read_at(opts, allowance);
        // The first read brings the log after `revision` with the page, from the same
        // instant: one round trip, unless more than a page of the log was written since.
        let at = if log.is_none() {
            At::Pinned(revision)
        } else {
            At::Again
        };
        let mut current = read_current(core, opts, read, at).await?;
        if log.is_none() {
            // A page of another history than the one `revision` was read in is no page of
            // this listing.
            core.reads
                .marks
                .check(revision, current.revision, &current.mark)?;
            log = Some(match current.log.take() {
                Some(start) => Log::start(revision, start, core)?,
                None => Log::open(core, revision).await?,
            });
        }
        let Some(log) = log.as_mut() else {
            return Err(corrupted("a read at a revision holds its log"));
        };
        log.catch_up_to(core, current.revision).await?;
        // Another program's overwrite or delete after `revision` left its event without the
        // key's value then: taken from the log's record of the store's last write of it.
        log.fill_unknown(core, opts).await?;
        let touched = Touched::new(opts, revision, log.until(current.revision));
        if fetch.is_some() && touched.len() > allowance {
            allowance = touched.len().saturating_mul(2);
            continue;
        }
        if opts.collections {
            return rewind_with_collections(
                opts,
                revision,
                touched,
                current.entries,
                current.collections,
            );
        }
        // Counting needs every key, which the read above returned.
        let complete = opts.count_only || current.complete;
        return Ok(rewind(opts, revision, touched, current.entries, complete));
    }
    Err(Error::new(
        ErrorKind::Unavailable,
        "the range's own keys kept being written while it was read at a past revision",
    )
    .set_retryable(true))
}

/// What a read at a revision fetches of the index with `allowance` rewound keys allowed for:
/// `limit` + `allowance` + 1 entries (and as many collections), or all for a count.
fn read_at(opts: &RangeOptions, allowance: usize) -> (Option<usize>, Read) {
    let fetch = if opts.count_only {
        None
    } else {
        opts.limit
            .map(|limit| limit.saturating_add(allowance).saturating_add(1))
    };
    let values = !(opts.keys_only || opts.count_only);
    let read = Read::Entries {
        limit: fetch,
        values,
        collections: opts.collections.then_some(fetch),
        checked: values,
    };
    (fetch, read)
}

/// One atomic read of the index: the revision, the entries (at most `limit`) and whether
/// they were all there is, or the count for `count_only`.
struct Current {
    revision: i64,
    entries: Vec<Entry>,
    complete: bool,
    count: u64,
    collections: Vec<CollectionEntry>,
    /// For a read at a past revision, where the log stands and its entries after that
    /// revision, read with the page (see `range.lua`).
    log: Option<LogStart>,
    /// The mark of the revision read at (see `range.lua`), empty when there is none.
    mark: Vec<u8>,
}

/// What [`read_current`] reads.
#[derive(Clone, Copy)]
enum Read {
    /// The number of keys.
    Count,
    /// At most `limit` entries, with or without their values, and the collections too
    /// (`collections`: `None` for none, else at most `limit` of them). With `checked`, each
    /// value is checked against the digest its metadata keeps: one that differs is another
    /// program's overwrite, stale (see [`read_index`]).
    Entries {
        limit: Option<usize>,
        values: bool,
        collections: Option<Option<usize>>,
        checked: bool,
    },
}

/// How many times a read reconciles the keys it found stale and reads again: another
/// program would have to keep deleting keys of the range between the rounds to exhaust them.
const STALE_ROUNDS: usize = 4;

/// One atomic read of the index (see [`Read`]) in which every listed or counted key holds
/// what the index says. A key the index names that another program deleted or replaced with
/// another type is reconciled first, as `get` does (a delete event at a revision of its own;
/// a collection it became is tracked as one), and the read starts again: the page is then
/// the index at a revision that already has those events, so it never lists a value a key
/// does not have and a watch from the page's revision never reports a delete of a key the
/// page left out.
async fn read_current(core: &Core, opts: &RangeOptions, read: Read, at: At) -> Result<Current> {
    for _ in 0..STALE_ROUNDS {
        match read_index(core, opts, read, at).await? {
            Indexed::Current(current) => return Ok(current),
            Indexed::Stale(keys) => {
                reconcile_keys(core, &keys, Mode::Full).await?;
            }
        }
    }
    Err(Error::new(
        ErrorKind::Unavailable,
        "other programs kept deleting keys of the range while it was read",
    )
    .set_retryable(true))
}

/// What one run of the range script found.
enum Indexed {
    /// The page, every key of it as the index says.
    Current(Current),
    /// Keys the index names that no longer hold what it says (see `range.lua`).
    Stale(Vec<Vec<u8>>),
}

async fn read_index(core: &Core, opts: &RangeOptions, read: Read, at: At) -> Result<Indexed> {
    let (start, end) = opts.effective_bounds();
    let min = [b"[".as_slice(), &start].concat();
    let max = match &end {
        Some(end) => [b"(".as_slice(), end].concat(),
        None => b"+".to_vec(),
    };
    if end.as_ref().is_some_and(|end| *end <= start) {
        return Ok(Indexed::Current(Current {
            revision: core.revision().await?,
            entries: Vec::new(),
            complete: true,
            count: 0,
            collections: Vec::new(),
            log: None,
            mark: Vec::new(),
        }));
    }
    let (mode, limit, with_values, collections, checked): (&[u8], _, _, _, _) = match read {
        Read::Count => (b"c", None, false, None, false),
        Read::Entries {
            limit,
            values,
            collections,
            checked,
        } => (
            if values { b"v" } else { b"k" },
            limit,
            values,
            collections,
            checked,
        ),
    };
    let collections_arg = match collections {
        None => String::new(),
        Some(limit) => limit.map_or(-1, |l| l as i64).to_string(),
    };
    // One key more than asked, to learn whether more follow.
    let fetch = limit.map_or(-1, |l| l.saturating_add(1) as i64).to_string();
    let (after, marked) = match at {
        At::Now => (String::new(), b"1".as_slice()),
        At::Pinned(r) => (r.saturating_add(1).to_string(), b"".as_slice()),
        At::Again => (String::new(), b"".as_slice()),
    };
    let reply: Value = core
        .run(
            &core.scripts.range,
            &[
                &min,
                &max,
                fetch.as_bytes(),
                mode,
                collections_arg.as_bytes(),
                after.as_bytes(),
                marked,
            ],
            "range",
        )
        .await?;
    let mut parts = array(reply)?.into_iter();
    let revision = int(parts.next().ok_or_else(|| corrupted("empty range reply"))?)?;
    if matches!(read, Read::Count) {
        let (Some(count), Some(stale), Some(mark)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(corrupted(
                "a count reply has a count, stale keys and a mark",
            ));
        };
        let stale = byte_list(stale)?;
        if !stale.is_empty() {
            return Ok(Indexed::Stale(stale));
        }
        return Ok(Indexed::Current(Current {
            revision,
            entries: Vec::new(),
            complete: true,
            count: u64::try_from(int(count)?).unwrap_or(0),
            collections: Vec::new(),
            log: None,
            mark: opt_bytes(mark)?.unwrap_or_default(),
        }));
    }
    let (Some(keys), Some(metas), Some(values), Some(listed), Some(stale), Some(log), Some(mark)) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return Err(corrupted(
            "a range reply has keys, metadata, values, collections, stale keys, the log and a \
             mark",
        ));
    };
    let stale = byte_list(stale)?;
    if !stale.is_empty() {
        return Ok(Indexed::Stale(stale));
    }
    let keys = byte_list(keys)?;
    let metas = array(metas)?;
    let mut values = array(values)?.into_iter();
    let mut entries = Vec::with_capacity(keys.len());
    let mut overwritten = Vec::new();
    for (key, meta) in keys.into_iter().zip(metas) {
        let value = if with_values {
            // No key is stale, so every value is there.
            opt_bytes(values.next().unwrap_or(Value::Nil))?
                .ok_or_else(|| corrupted("a listed key has no value"))?
        } else {
            Vec::new()
        };
        let meta = opt_bytes(meta)?.ok_or_else(|| corrupted("an indexed key has no metadata"))?;
        if checked && overwritten_by_another(&meta, &value) {
            overwritten.push(key);
            continue;
        }
        entries.push(entry(key, value, &meta)?);
    }
    // A read at a past revision rewinds only the keys whose events the log holds after it:
    // a value another program wrote over the store's (its digest is not the one of the
    // metadata) has no event yet, and would be listed as the key's value then. Reconciled
    // first, it is an event whose key's value then the log gives (see `Log::fill_unknown`).
    if !overwritten.is_empty() {
        return Ok(Indexed::Stale(overwritten));
    }
    let complete = limit.is_none_or(|limit| entries.len() <= limit);
    if let Some(limit) = limit {
        entries.truncate(limit);
    }
    Ok(Indexed::Current(Current {
        revision,
        count: entries.len() as u64,
        entries,
        complete,
        collections: decode_collections(listed)?,
        log: decode_log(revision, log)?,
        mark: opt_bytes(mark)?.unwrap_or_default(),
    }))
}

/// Whether `value` is not the one the store wrote with metadata `meta`: the metadata keeps
/// a digest (metadata from before digests were kept has none, and says nothing) and it is not
/// the value's.
fn overwritten_by_another(meta: &[u8], value: &[u8]) -> bool {
    let fields = meta.split(|&b| b == b':').count();
    match meta.rsplit(|&b| b == b':').next() {
        Some(recorded) if fields == 5 && !recorded.is_empty() => {
            crate::core::value_digest(value) != *recorded
        }
        _ => false,
    }
}

/// The `{ first, compacted, entries }` of the log a read at a past revision read with its
/// page; `None` when it asked for none (an empty reply).
fn decode_log(revision: i64, log: Value) -> Result<Option<LogStart>> {
    let mut parts = array(log)?.into_iter();
    let Some(first) = parts.next() else {
        return Ok(None);
    };
    let (Some(compacted), Some(entries)) = (parts.next(), parts.next()) else {
        return Err(corrupted(
            "a range's log has its first revision, floor and entries",
        ));
    };
    Ok(Some(LogStart {
        current: revision,
        first: int(first)?,
        compacted: int(compacted)?,
        entries: array(entries)?,
    }))
}

/// The `{ keys, types, sizes }` of the collections a range listed.
fn decode_collections(listed: Value) -> Result<Vec<CollectionEntry>> {
    let mut parts = array(listed)?.into_iter();
    let (Some(keys), Some(types), Some(sizes)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(corrupted("listed collections have keys, types and sizes"));
    };
    let (keys, types, sizes) = (byte_list(keys)?, byte_list(types)?, array(sizes)?);
    keys.into_iter()
        .zip(types)
        .zip(sizes)
        .map(|((key, kind), size)| {
            let kind = match kind.as_slice() {
                b"set" => CollectionKind::Set,
                b"hash" => CollectionKind::Map,
                b"list" => CollectionKind::List,
                other => {
                    return Err(corrupted(format!(
                        "a listed collection of type {}",
                        String::from_utf8_lossy(other)
                    )));
                }
            };
            Ok(CollectionEntry {
                key,
                kind,
                size: u64::try_from(int(size)?).unwrap_or(0),
            })
        })
        .collect()
}
