//! Grouped reads. A `get` reads a key's metadata and then its value, pipelined (see
//! `crate::range::get`), which costs the server and the client two commands where a raw
//! `GET` costs one. Under load the gets issued at the same moment through one core share
//! their commands instead: one `MULTI`/`EXEC` of an `HMGET` of every key's metadata and an
//! `MGET` of every value, as [`super::group`] forms batches (no timer; a lone get goes alone,
//! at once). A batch's read is atomic, so its gets need not check the value's digest
//! against the metadata as a lone get's two reads do: the client saves the SHA-1, and the
//! server runs four commands for the whole batch.
//!
//! (`MGET` gives nil for a key holding a set, hash or list where `GET` fails; both mean "no
//! string here" to the get.)

use crate::con::Con;
use crate::core::decode::corrupted;
use crate::core::group::{Carrier, Group, Limits, Queued, Turn};
use crate::core::marks::Marks;
use crate::error::map_error;
use keyplane_contract::{Error, ErrorKind, Result};
use redis::Value;
use std::sync::Arc;

/// The bounds of grouped reads, chosen by measuring 1 to 16 calls in flight and 8 to 128
/// keys per batch at 16 and 64 readers on both runtimes: 16 calls in flight, so that up to
/// 16 readers go alone exactly as before (their lone calls pipeline on the connection), and
/// batches of at most 16 keys (or 1 MiB of keys), so that beyond that the batches of several
/// calls keep the client and the server busy at once.
const LIMITS: Limits = Limits {
    in_flight: 16,
    items: 16,
    bytes: 1 << 20,
};

/// The grouped reads of one core, and what its reads at a revision learnt of the history.
pub(crate) struct Reads {
    group: Group<Reader>,
    /// What the core's reads learnt of the store's history, which reads at a revision check
    /// (see [`Marks`]).
    pub(crate) marks: Marks,
}

/// What sends a core's reads.
struct Reader {
    con: Con,
    /// The metadata hash.
    meta_key: Arc<[u8]>,
}

impl Reads {
    pub(crate) fn new(con: Con, meta_key: &[u8]) -> Self {
        Reads {
            group: Group::new(
                Reader {
                    con,
                    meta_key: meta_key.into(),
                },
                LIMITS,
            ),
            marks: Marks::default(),
        }
    }

    /// The metadata of `key` and its value, each as the server replied (a `GET` that
    /// failed on a collection gives its error reply, a grouped read nil).
    pub(crate) async fn meta_and_value(&self, key: &[u8]) -> Result<Pair> {
        match self.group.enter(key.to_vec()) {
            Turn::Alone(_lead, key) => self.group.carrier().read_one(&key, false).await,
            Turn::Queued(answer) => answer.await.unwrap_or_else(|_| Err(abandoned())),
        }
    }

    /// The metadata of `key` and its value, read at one moment (one `MULTI`/`EXEC`, alone).
    pub(crate) async fn meta_and_value_atomic(&self, key: &[u8]) -> Result<Pair> {
        self.group.carrier().read_one(key, true).await
    }
}

/// A key's metadata and value, as read.
pub(crate) struct Pair {
    pub(crate) meta: Value,
    pub(crate) value: Value,
    /// Whether both were read at one moment (in one `MULTI`/`EXEC`), else the metadata
    /// first, then the value.
    pub(crate) atomic: bool,
}

impl Reader {
    /// One key's `HGET` and `GET`, pipelined, in one `MULTI`/`EXEC` when `atomic`.
    async fn read_one(&self, key: &[u8], atomic: bool) -> Result<Pair> {
        let mut pipe = redis::pipe();
        if atomic {
            pipe.atomic();
        }
        pipe.cmd("HGET")
            .arg(&*self.meta_key)
            .arg(key)
            .cmd("GET")
            .arg(key)
            .ignore_errors();
        let reply: Vec<Value> = pipe
            .query_async(&mut self.con.clone())
            .await
            .map_err(|e| map_error("get", e))?;
        let mut parts = reply.into_iter();
        match (parts.next(), parts.next()) {
            (Some(meta), Some(value)) => Ok(Pair {
                meta,
                value,
                atomic,
            }),
            _ => Err(corrupted("a get reply has metadata and a value")),
        }
    }

    /// A batch's `HMGET` and `MGET`, in one `MULTI`/`EXEC`: each key's metadata and value.
    async fn read_many(&self, keys: &[&[u8]]) -> Result<Vec<Pair>> {
        let mut pipe = redis::pipe();
        pipe.atomic().cmd("HMGET").arg(&*self.meta_key).arg(keys);
        pipe.cmd("MGET").arg(keys);
        let (metas, values): (Vec<Value>, Vec<Value>) = pipe
            .query_async(&mut self.con.clone())
            .await
            .map_err(|e| map_error("get", e))?;
        if metas.len() != keys.len() || values.len() != keys.len() {
            return Err(corrupted("a grouped read has a reply per key"));
        }
        Ok(metas
            .into_iter()
            .zip(values)
            .map(|(meta, value)| Pair {
                meta,
                value,
                atomic: true,
            })
            .collect())
    }
}

impl Carrier for Reader {
    type Request = Vec<u8>;
    type Answer = Result<Pair>;

    fn size(key: &Vec<u8>) -> usize {
        key.len()
    }

    async fn send(&self, batch: Vec<Queued<Self>>) {
        if batch.len() == 1 {
            for q in batch {
                let answer = self.read_one(&q.request, false).await;
                let _ = q.reply.send(answer);
            }
            return;
        }
        let keys: Vec<&[u8]> = batch.iter().map(|q| q.request.as_slice()).collect();
        match self.read_many(&keys).await {
            Ok(replies) => {
                for (q, reply) in batch.into_iter().zip(replies) {
                    let _ = q.reply.send(Ok(reply));
                }
            }
            Err(e) => {
                for q in batch {
                    let _ = q.reply.send(Err(e.clone()));
                }
            }
        }
    }
}

/// The error of a get whose batch was abandoned: the driver ended (its runtime shut down)
/// before the reply came.
fn abandoned() -> Error {
    Error::new(
        ErrorKind::Unavailable,
        "the call carrying this read ended before Redis answered",
    )
    .with_context("op", "get")
    .set_retryable(true)
}
