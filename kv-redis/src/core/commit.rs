//! Group commit. Redis runs one command at a time, so what a write costs the server bounds
//! every writer's throughput, and a function call's own cost (about 6 µs before its first
//! command) is a large part of a write's. Writes issued at the same moment through one core
//! therefore go to the server as one call of the library's `batch` function, which runs each
//! write's function in turn: each keeps its own revision, events, result and error, as the
//! writes of a database's group commit share one fsync but not their outcomes.
//!
//! There is no timer: batches form as [`super::group`] says, only under load.
//!
//! A call holds the server for all the writes it carries, and Redis serves no other client
//! meanwhile: so a batch is bounded by its work as well as by its count and bytes. Each write
//! weighs the keys it may touch — one per op, and for a prefix delete the most keys one
//! transaction's prefix deletes may remove (`RedisConfig::max_prefix_delete_keys`) — and a
//! batch carries at most that bound of one transaction, so that no call holds the server
//! much longer than the largest write alone may. A write that weighs more goes alone.
//!
//! A batch needs the function library; when the store runs its scripts by `EVALSHA` (see
//! [`super::scripts`]) every write goes alone. A batch the server refuses as a whole (out of
//! memory, the library gone for good) is sent again write by write, each with the fallbacks
//! of [`Link::invoke`].

use crate::core::decode::corrupted;
use crate::core::group::{Carrier, Group, Limits, Queued, Turn};
use crate::core::link::{Link, function_missing, load_library, refused_fcall};
use crate::core::scripts::{Lua, Scripts};
use crate::error::map_error;
use keyplane_contract::{Error, ErrorKind, Result};
use redis::{Cmd, Value};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// The bounds of the group commit: 8 calls in flight (chosen by measuring 1, 2, 4 and 8 at
/// 16 and 64 writers), and at most 128 writes or 1 MiB of arguments per batch.
const LIMITS: Limits = Limits {
    in_flight: 8,
    items: 128,
    bytes: 1 << 20,
};

/// A write the group commit carries: which function runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Writer {
    /// `put.lua`, one plain put.
    Put,
    /// `delete.lua`, one delete.
    Delete,
    /// `txn.lua`, a transaction (collection ops included).
    Txn,
    /// `rotate.lua`, a transaction of one list rotation.
    Rotate,
}

impl Writer {
    /// Its name in the library's `batch` function.
    fn name(self) -> &'static str {
        match self {
            Writer::Put => "put",
            Writer::Delete => "delete",
            Writer::Txn => "txn",
            Writer::Rotate => "rotate",
        }
    }

    /// Its script.
    fn lua(self, scripts: &Scripts) -> &Lua {
        match self {
            Writer::Put => &scripts.put,
            Writer::Delete => &scripts.delete,
            Writer::Txn => &scripts.txn,
            Writer::Rotate => &scripts.rotate,
        }
    }
}

/// The group commit of one core's writes.
pub(crate) struct Committer {
    group: Group<Batcher>,
}

/// What sends a core's writes: alone, or a batch as one call of `batch`.
struct Batcher {
    link: Link,
    scripts: Arc<Scripts>,
    /// The most work (keys) one batch carries: what one transaction may do.
    budget: u64,
}

/// A write: its function, its arguments, its work (see [`Committer::submit`]), and the
/// operation it serves (for errors).
struct Write {
    writer: Writer,
    args: Cmd,
    weight: u64,
    op: &'static str,
}

impl Committer {
    /// The group commit of the writes sent over `link`; a batch carries at most `budget`
    /// keys of work (the most one transaction's prefix deletes may remove).
    pub(crate) fn new(link: Link, scripts: Arc<Scripts>, budget: u64) -> Self {
        let batcher = Batcher {
            link,
            scripts,
            budget,
        };
        Committer {
            group: Group::new(batcher, LIMITS),
        }
    }

    /// Sends the write `args` of `writer` (its arguments after the prefix and the
    /// retention), alone or in a batch, and waits for the replicas when configured; returns
    /// the function's reply. `weight` is the write's work: the most keys it may touch (one
    /// per op; a prefix delete, the most its transaction may remove).
    pub(crate) async fn submit(
        &self,
        writer: Writer,
        args: Cmd,
        weight: u64,
        op: &'static str,
    ) -> Result<Value> {
        let Batcher { link, scripts, .. } = self.group.carrier();
        if !link.functions.load(Ordering::Relaxed) {
            return Box::pin(send_one(link, scripts, writer, &args, op)).await;
        }
        let write = Write {
            writer,
            args,
            weight,
            op,
        };
        match self.group.enter(write) {
            // Boxed: the lone call's future (its fallbacks, the wait for replicas) is large,
            // and every write's future would otherwise carry it. `_lead` hands the queue over
            // when the call returns or this future is dropped.
            Turn::Alone(_lead, w) => Box::pin(send_one(link, scripts, w.writer, &w.args, op)).await,
            Turn::Queued(answer) => answer.await.unwrap_or_else(|_| Err(abandoned(op))),
        }
    }
}

impl Carrier for Batcher {
    type Request = Write;
    type Answer = Result<Value>;

    fn size(write: &Write) -> usize {
        write.args.args_iter().map(arg_len).sum()
    }

    fn weight(write: &Write) -> u64 {
        write.weight
    }

    fn budget(&self) -> u64 {
        self.budget
    }

    async fn send(&self, batch: Vec<Queued<Self>>) {
        send_batch(&self.link, &self.scripts, batch).await;
    }
}

fn arg_len(arg: redis::Arg<&[u8]>) -> usize {
    match arg {
        redis::Arg::Simple(bytes) => bytes.len(),
        _ => 0,
    }
}

/// The error of a write whose batch was abandoned: the driver ended (its runtime shut down)
/// before the reply came. The write may have been applied.
fn abandoned(op: &'static str) -> Error {
    Error::new(
        ErrorKind::Unavailable,
        "the call carrying this write ended before Redis answered: it may have been applied",
    )
    .with_context("op", op)
}

/// One write in a call of its own (its function, or its script by `EVALSHA`).
async fn send_one(
    link: &Link,
    scripts: &Scripts,
    writer: Writer,
    args: &Cmd,
    op: &'static str,
) -> Result<Value> {
    let script = writer.lua(scripts);
    let mut call = link.write_call(script);
    for arg in args.args_iter() {
        if let redis::Arg::Simple(arg) = arg {
            call.arg(arg);
        }
    }
    link.send_write(script, &call, op).await
}

/// Sends a queued write in a call of its own, and answers it.
async fn send_alone(link: &Link, scripts: &Scripts, queued: Queued<Batcher>) {
    let Write {
        writer, args, op, ..
    } = &queued.request;
    let reply = send_one(link, scripts, *writer, args, op).await;
    let _ = queued.reply.send(reply);
}

/// Sends the writes of `batch` and answers each.
async fn send_batch(link: &Link, scripts: &Scripts, batch: Vec<Queued<Batcher>>) {
    if batch.len() == 1 {
        for queued in batch {
            send_alone(link, scripts, queued).await;
        }
        return;
    }
    let mut call = redis::cmd("FCALL");
    call.arg(&scripts.batch)
        .arg(1)
        .arg(&*link.rev_key)
        .arg(&*link.prefix)
        .arg(link.retention);
    for p in &batch {
        call.arg(p.request.writer.name())
            .arg(p.request.args.args_iter().count());
        for arg in p.request.args.args_iter() {
            if let redis::Arg::Simple(arg) = arg {
                call.arg(arg);
            }
        }
    }
    let mut con = link.con.clone();
    let wait = link.waits();
    let mut reply = link.query(&mut con, &call, wait).await;
    if let Err(e) = &reply
        && function_missing(e)
        && load_library(&mut con).await.is_ok()
    {
        reply = link.query(&mut con, &call, wait).await;
    }
    let (replies, acked) = match reply {
        Ok((Value::Array(replies), acked)) if replies.len() == 3 * batch.len() => (replies, acked),
        Ok(_) => {
            let e = corrupted("a batch reply has three values per write");
            for p in batch {
                let _ = p.reply.send(Err(e.clone()));
            }
            return;
        }
        Err(e) if refused_fcall(&e) || e.code() == Some("OOM") || function_missing(&e) => {
            // The server will not run this batch as a function: each write goes alone, with
            // the fallbacks of a lone write (EVALSHA, which Redis checks for memory at the
            // first write rather than before the start, so that deletes still run).
            if refused_fcall(&e) {
                link.functions.store(false, Ordering::Relaxed);
            }
            futures::future::join_all(
                batch
                    .into_iter()
                    .map(|queued| send_alone(link, scripts, queued)),
            )
            .await;
            return;
        }
        Err(e) => {
            for p in batch {
                let _ = p.reply.send(Err(map_error(p.request.op, e.clone())));
            }
            return;
        }
    };
    let mut replies = replies.into_iter();
    let mut results: Vec<Result<Value>> = batch
        .iter()
        .map(|p| {
            let (Some(a), Some(b), Some(c)) = (replies.next(), replies.next(), replies.next())
            else {
                return Err(corrupted("a batch reply has three values per write"));
            };
            outcome(p.request.op, a, b, c)
        })
        .collect();
    let waited = match acked {
        Some(acked) if results.iter().any(Result::is_ok) => link.check_acked(acked, "batch").await,
        _ => Ok(()),
    };
    if let Err(e) = waited {
        for result in &mut results {
            if result.is_ok() {
                *result = Err(e.clone());
            }
        }
    }
    for (p, result) in batch.into_iter().zip(results) {
        let _ = p.reply.send(result);
    }
}

/// One write's three values of a batch reply (see `scripts/batch.lua`), as the reply the
/// write's function gives alone: a put's or delete's revision with its previous value and
/// metadata, which become `{ revision, { value, meta } or nil }`; -3, a rotation's revision and
/// the item it moved, which become the transaction reply `{ 1, revision, { item } }`; -1 and a
/// transaction's reply; -2 and the text of the error reply (code and detail) the write
/// returned or raised.
fn outcome(op: &'static str, a: Value, b: Value, c: Value) -> Result<Value> {
    match (a, b) {
        (Value::Int(-2), Value::BulkString(text)) => Err(map_error(op, server_error(&text))),
        (Value::Int(-1), reply) => Ok(reply),
        (Value::Int(-3), Value::Int(revision)) => Ok(Value::Array(vec![
            Value::Int(1),
            Value::Int(revision),
            Value::Array(vec![c]),
        ])),
        (Value::Int(revision), Value::Nil) if revision >= 0 => {
            Ok(Value::Array(vec![Value::Int(revision), Value::Nil]))
        }
        (Value::Int(revision), prev) if revision >= 0 => Ok(Value::Array(vec![
            Value::Int(revision),
            Value::Array(vec![prev, c]),
        ])),
        _ => Err(corrupted(
            "a batched write's reply is not one the batch gives",
        )),
    }
}

/// The redis-rs error of an error reply's text, as if the server had sent it alone.
fn server_error(text: &[u8]) -> redis::RedisError {
    let mut resp = Vec::with_capacity(text.len() + 3);
    resp.push(b'-');
    resp.extend(
        text.iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
    resp.extend_from_slice(b"\r\n");
    match redis::parse_redis_value(&resp) {
        Ok(Value::ServerError(e)) => e.into(),
        Ok(_) => redis::RedisError::from((redis::ErrorKind::Parse, "not an error reply")),
        Err(e) => e,
    }
}

#[cfg(test)]
mod tests {
    use super::server_error;
    use crate::error::map_error;
    use keyplane_contract::ErrorKind;

    #[test]
    fn a_batched_error_maps_as_the_same_reply_alone() {
        let e = map_error("put", server_error(b"KVWRONGTYPE 1 holds a set"));
        assert_eq!(e.kind(), ErrorKind::WrongType);
        let e = map_error("put", server_error(b"KVLEASE 1 lease 7 not found"));
        assert_eq!(e.kind(), ErrorKind::LeaseNotFound);
        let e = map_error("put", server_error(b"ERR user_script:1: oops\r\nmore"));
        assert_eq!(e.kind(), ErrorKind::Backend);
    }
}
