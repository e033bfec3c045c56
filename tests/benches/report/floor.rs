//! The floor of the Redis data model: the commands a put of the store needs, sent raw in one
//! `MULTI`/`EXEC` with no script. A put writes the value (`SET`), its metadata (`HSET` of the
//! `create:mod:version:lease:digest` text into the metadata hash), the index entry on a
//! create (the bucket's lookup in the directory, `ZREVRANGEBYLEX`, then `ZADD` and `ZCARD` of
//! the bucket: the store's index is a directory of small sorted sets), the next revision
//! (`INCR`, where the store's script reads and sets its counter) and the revision's event in
//! the log (`XADD`, trimmed to the retention by `MAXLEN ~`, where the script trims by
//! `MINID ~`), the event holding the key, the value and metadata, and the previous ones, as
//! the store's log entries do.
//!
//! A transaction or a bulk load's batch is one revision: its puts' commands, then one `INCR`
//! and one `XADD` of all their events ([`write`]).
//!
//! Whatever a store built on this layout does, its server time per put cannot fall below
//! this; the report sets the Redis writes against it.

use redis::aio::MultiplexedConnection;

/// The prefix of the floor's own structures (apart from the store's `__kv:`).
const PREFIX: &str = "__floor:";

/// The log's retention, as the store's default.
const RETENTION: u64 = 10_000;

/// A get's two reads at the floor: the metadata's `HGET` and the value's `GET` of `key`, raw
/// in one pipeline on `con` (a clone, as each raw call takes), with no decoding and no check
/// (the key must hold both).
pub async fn get(mut con: MultiplexedConnection, key: &str) {
    let (meta, value): (Vec<u8>, Vec<u8>) = redis::pipe()
        .cmd("HGET")
        .arg("__kv:meta")
        .arg(key)
        .cmd("GET")
        .arg(key)
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(!meta.is_empty() && !value.is_empty());
}

/// One put of `key` at the floor: `created` when the key is new (the index is written only
/// then, as the store does).
pub async fn put(con: &MultiplexedConnection, key: &str, value: &[u8], created: bool) {
    write(con, &[(key, created)], value).await;
}

/// The puts of one revision at the floor (a transaction's, a bulk load's batch): each key's
/// value, metadata and, when `created`, its index entry, then one revision and one log entry
/// holding every put's event, in one `MULTI`/`EXEC`. A lone created key is indexed as the
/// store's lone put does (lookup, `ZADD`, `ZCARD`); several are indexed with one `ZADD`, the
/// least any batching could send.
pub async fn write(con: &MultiplexedConnection, puts: &[(&str, bool)], value: &[u8]) {
    // The metadata text of a key rewritten many times: `create:mod:version:lease:digest`.
    const META: &str = "1024:123456:512:0:0123456789abcdef";
    let mut events = Vec::new();
    let mut pipe = redis::pipe();
    pipe.atomic();
    for &(key, created) in puts {
        events.push(b'p');
        for part in [
            key.as_bytes(),
            value,
            META.as_bytes(),
            value,
            META.as_bytes(),
        ] {
            events.extend_from_slice(format!("{}:", part.len()).as_bytes());
            events.extend_from_slice(part);
        }
        pipe.cmd("SET")
            .arg(key)
            .arg(value)
            .ignore()
            .cmd("HSET")
            .arg(format!("{PREFIX}meta"))
            .arg(key)
            .arg(META)
            .ignore();
        if created && puts.len() == 1 {
            // A bucket of the key's own (a raw pipeline cannot use the lookup's answer), among
            // as many as a store of a million keys has, so that each stays small.
            let bucket = format!(
                "{PREFIX}ix:{}",
                key.bytes()
                    .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)))
                    % 40_000
            );
            pipe.cmd("ZREVRANGEBYLEX")
                .arg(format!("{PREFIX}ixd"))
                .arg(format!("[{key}"))
                .arg("-")
                .arg("LIMIT")
                .arg(0)
                .arg(1)
                .ignore()
                .cmd("ZADD")
                .arg(&bucket)
                .arg(0)
                .arg(key)
                .ignore()
                .cmd("ZCARD")
                .arg(&bucket)
                .ignore();
        }
    }
    let created: Vec<&str> = puts
        .iter()
        .filter(|&&(_, created)| created)
        .map(|&(key, _)| key)
        .collect();
    if puts.len() > 1 && !created.is_empty() {
        pipe.cmd("ZADD").arg(format!("{PREFIX}ix:{}", created[0]));
        for key in created {
            pipe.arg(0).arg(key);
        }
        pipe.ignore();
    }
    pipe.cmd("INCR")
        .arg(format!("{PREFIX}rev"))
        .ignore()
        .cmd("XADD")
        .arg(format!("{PREFIX}log"))
        .arg("MAXLEN")
        .arg("~")
        .arg(RETENTION)
        .arg("*")
        .arg("e")
        .arg(events)
        .ignore();
    let () = pipe.query_async(&mut con.clone()).await.unwrap();
}

/// A 2-key compare-and-set at the floor, the way a client without scripts makes one: `WATCH`
/// of the compared key `a` and its `GET` in one pipeline; when it holds `want`, both puts of
/// `new` in one `MULTI`/`EXEC` ([`write`], which Redis would refuse had `a` changed since the
/// `WATCH`; the report's tasks each compare keys of their own, so none does); otherwise an
/// `UNWATCH`. `con` is the calling task's own connection, as a watch belongs to a connection.
/// Returns what `a` holds after: `new`, or the value that failed the compare.
pub async fn cas(
    con: &MultiplexedConnection,
    (a, b): (&str, &str),
    want: &[u8],
    new: &[u8],
) -> Vec<u8> {
    let ((), current): ((), Option<Vec<u8>>) = redis::pipe()
        .cmd("WATCH")
        .arg(a)
        .cmd("GET")
        .arg(a)
        .query_async(&mut con.clone())
        .await
        .unwrap();
    let current = current.unwrap_or_default();
    if current != want {
        let () = redis::cmd("UNWATCH")
            .query_async(&mut con.clone())
            .await
            .unwrap();
        return current;
    }
    write(con, &[(a, false), (b, false)], new).await;
    new.to_vec()
}
