//! Single-key operations with their own cheaper paths: `get` as one MULTI/EXEC of HGET and
//! GET, `put` and `delete` as dedicated scripts that share the transaction script's helpers.

use crate::decode::{array, corrupted, entry, int, opt_bytes, opt_entry};
use crate::error::map_redis_error;
use crate::reconcile::{Mode, reconcile_keys};
use crate::store::Inner;
use kv_core::{Entry, Error, ErrorKind, PutOptions, PutResult, Result};
use redis::Value;

/// The entry of a plain key: its metadata and value read in one atomic MULTI/EXEC, which
/// costs the server far less than a script run and, like the read scripts, is served by
/// read-only replicas. A string another program wrote (a value without metadata) is adopted
/// by the reconcile script and read again: two more round trips, once per such key.
pub(crate) async fn get(inner: &Inner, key: &[u8]) -> Result<Option<Entry>> {
    kv_core::validate_key(key)?;
    inner.check_key(key)?;
    // A key that another program keeps rewriting and deleting between the read and the
    // adoption could keep this going; a few rounds are plenty in practice.
    for _ in 0..4 {
        match read(inner, key).await? {
            Read::Entry(entry) => return Ok(Some(entry)),
            Read::Absent => return Ok(None),
            Read::Foreign => {
                reconcile_keys(inner, &[key.to_vec()], Mode::Full).await?;
            }
        }
    }
    Err(Error::new(
        ErrorKind::Unavailable,
        "another program keeps replacing the key while it is read",
    )
    .with_context("key", kv_core::escape_bytes(key))
    .set_retryable(true))
}

/// What one atomic read of a key found.
enum Read {
    Entry(Entry),
    Absent,
    /// A string without metadata: another program wrote it.
    Foreign,
}

async fn read(inner: &Inner, key: &[u8]) -> Result<Read> {
    let mut pipe = redis::pipe();
    pipe.atomic()
        .cmd("HGET")
        .arg(inner.meta_key.as_slice())
        .arg(key)
        .cmd("GET")
        .arg(key)
        // A key without metadata may hold a collection, which makes GET fail; that reply is
        // ignored below, since such a key is not a plain entry.
        .ignore_errors();
    let mut con = inner.con.clone();
    let reply: Value = pipe
        .query_async(&mut con)
        .await
        .map_err(|e| map_redis_error(e, "get"))?;
    let mut parts = array(reply)?.into_iter();
    let (Some(meta), Some(value)) = (parts.next(), parts.next()) else {
        return Err(corrupted("a get reply has metadata and a value"));
    };
    let Some(meta) = opt_bytes(reply_or_error(meta)?)? else {
        // Without metadata: a collection (its GET failed) is not a plain entry; a string is
        // another program's.
        return Ok(match value {
            Value::BulkString(_) | Value::SimpleString(_) => Read::Foreign,
            _ => Read::Absent,
        });
    };
    match value {
        Value::BulkString(value) => entry(key.to_vec(), value, &meta).map(Read::Entry),
        // Metadata without a string: another program deleted the key or replaced it with
        // a collection, which the reconcile script records before the key is read again.
        Value::Nil | Value::ServerError(_) => Ok(Read::Foreign),
        other => Err(corrupted(format!("a GET reply of {other:?}"))),
    }
}

/// The error of one command inside a MULTI/EXEC reply, mapped like any other.
fn reply_or_error(value: Value) -> Result<Value> {
    match value {
        Value::ServerError(e) => Err(map_redis_error(e.into(), "get")),
        other => Ok(other),
    }
}

/// One put through `scripts/put.lua`: the same checks, revision, metadata, index, lease and
/// log entry as a one-op transaction.
pub(crate) async fn put(
    inner: &Inner,
    key: &[u8],
    value: &[u8],
    opts: PutOptions,
) -> Result<PutResult> {
    kv_core::validate_key(key)?;
    inner.check_key(key)?;
    inner.caps.validate_value(value)?;
    let lease = opts.lease.map_or(0, |l| l.0).to_string();
    let want_prev: &[u8] = if opts.prev { b"1" } else { b"0" };
    let reply: Value = inner
        .run_write(
            &inner.scripts.put,
            &[key, value, lease.as_bytes(), want_prev],
            "put",
        )
        .await?;
    let (revision, prev) = revision_and_prev(key, reply)?;
    Ok(PutResult { revision, prev })
}

/// One delete through `scripts/delete.lua`; returns the previous entry of the plain key.
pub(crate) async fn delete(inner: &Inner, key: &[u8]) -> Result<Option<Entry>> {
    kv_core::validate_key(key)?;
    inner.check_key(key)?;
    let reply: Value = inner
        .run_write(&inner.scripts.delete, &[key], "delete")
        .await?;
    Ok(revision_and_prev(key, reply)?.1)
}

/// A `{ revision, { value, meta } or false }` reply.
fn revision_and_prev(key: &[u8], reply: Value) -> Result<(i64, Option<Entry>)> {
    let mut parts = array(reply)?.into_iter();
    let (Some(revision), Some(prev)) = (parts.next(), parts.next()) else {
        return Err(corrupted(
            "a write reply has a revision and a previous entry",
        ));
    };
    Ok((int(revision)?, opt_entry(key, prev)?))
}
