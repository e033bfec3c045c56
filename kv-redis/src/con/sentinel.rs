//! The connection to a master that Sentinel names, which follows a failover: after a failure
//! that may mean the master moved (a dropped connection, a refused one, a timeout, `READONLY`
//! from a demoted master, a write its replicas did not acknowledge), it asks the sentinels
//! for the master again and moves to it. The failed call returns its error, which the
//! caller's retry policy sees as usual.
//!
//! One lookup runs at a time, and the callers that failed before it started take its
//! outcome rather than each starting another: a caller's error never waits for more than
//! about two lookups, however many callers fail together. When no sentinel answers, the
//! master this connection knew is tried directly, and taken when it says it is still the
//! master: sentinels that are down or cut off do not take a healthy master away. (That
//! master may be one the sentinels demoted unseen behind a partition; a connection that had
//! not dropped would go on writing to it just the same, and the writes' `WAIT` for replicas,
//! when configured, is what refuses them there.)

use crate::config::SentinelTarget;
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{Cmd, Pipeline, RedisError, RedisFuture, RedisResult, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// The master's connection, shared by clones, and what it takes to find the next master.
#[derive(Clone)]
pub(crate) struct Following {
    inner: Arc<Inner>,
}

struct Inner {
    target: SentinelTarget,
    connect_timeout: Duration,
    request_timeout: Duration,
    /// The connection in use, its master's address, and how many times it was replaced.
    current: Mutex<Current>,
    /// Held while the master is looked up again, so that concurrent failures look it up
    /// once; holds whether the last lookup came after a dropped connection (see
    /// [`Following::follow`]).
    moving: tokio::sync::Mutex<bool>,
    /// How many lookups have started (each under `moving`).
    lookups: AtomicU64,
}

#[derive(Clone)]
struct Current {
    generation: u64,
    address: (String, u16),
    con: MultiplexedConnection,
}

impl Following {
    /// Connects to the master the sentinels name.
    pub(crate) async fn connect(
        target: SentinelTarget,
        connect_timeout: Duration,
        request_timeout: Duration,
    ) -> RedisResult<Self> {
        let (address, con) = master(&target, connect_timeout, request_timeout).await?;
        Ok(Following {
            inner: Arc::new(Inner {
                target,
                connect_timeout,
                request_timeout,
                current: Mutex::new(Current {
                    generation: 0,
                    address,
                    con,
                }),
                moving: tokio::sync::Mutex::new(false),
                lookups: AtomicU64::new(0),
            }),
        })
    }

    /// The `host` and `port` of the master in use.
    pub(crate) fn address(&self) -> (String, u16) {
        self.current().address
    }

    fn current(&self) -> Current {
        self.inner
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// After a call on the connection of `generation` failed with `err`: when the failure
    /// may mean the master moved, asks the sentinels and moves to the master they name (a
    /// timeout moves only when they name another one: a slow master is still the master).
    async fn after(&self, generation: u64, err: &RedisError) {
        let moved = err.is_io_error()
            || err.is_connection_dropped()
            || err.is_connection_refusal()
            || matches!(
                err.kind(),
                redis::ErrorKind::Server(
                    redis::ServerErrorKind::ReadOnly | redis::ServerErrorKind::MasterDown
                )
            );
        if moved || err.is_timeout() {
            let seen = self.inner.lookups.load(Ordering::SeqCst);
            self.follow(generation, seen, moved).await;
        }
    }

    /// After a write that fewer replicas acknowledged than it waited for: the master may
    /// be cut off from its replicas, and the sentinels may have promoted one of them. Moves
    /// only when they name another master.
    pub(crate) async fn recheck(&self) {
        let seen = self.inner.lookups.load(Ordering::SeqCst);
        self.follow(self.current().generation, seen, false).await;
    }

    /// Asks the sentinels for the master and moves to it, unless the connection of
    /// `generation` was replaced meanwhile, or (when not `moved`) they name the same one.
    /// `seen` is how many lookups had started when the caller failed: a lookup that started
    /// since then has ended once the caller holds `moving`, and the caller takes its outcome
    /// (unless it was only a check of a live connection, and this one dropped). When no
    /// sentinel answers and the connection dropped (`moved`), the master it knew is tried.
    async fn follow(&self, generation: u64, seen: u64, moved: bool) {
        let mut last_moved = self.inner.moving.lock().await;
        let current = self.current();
        if current.generation != generation {
            return;
        }
        if self.inner.lookups.load(Ordering::SeqCst) != seen && (*last_moved || !moved) {
            return;
        }
        self.inner.lookups.fetch_add(1, Ordering::SeqCst);
        *last_moved = moved;
        let (connect_timeout, request_timeout) =
            (self.inner.connect_timeout, self.inner.request_timeout);
        let (address, con) =
            match master(&self.inner.target, connect_timeout, request_timeout).await {
                Ok(found) => found,
                Err(_) if moved => {
                    let (host, port) = &current.address;
                    let config = connection_config(connect_timeout, request_timeout);
                    match confirmed(&self.inner.target, host, *port, &config).await {
                        Ok(con) => (current.address.clone(), con),
                        Err(_) => return,
                    }
                }
                Err(_) => return,
            };
        if !moved && address == current.address {
            return;
        }
        *self
            .inner
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Current {
            generation: generation + 1,
            address,
            con,
        };
    }
}

impl Following {
    /// A connection of its own to the master the sentinels name, or when none answers, to
    /// the master this connection knows, once it says it is still the master (for the watch
    /// hub's blocking reads).
    pub(crate) async fn dedicated(&self) -> RedisResult<MultiplexedConnection> {
        let Inner {
            target,
            connect_timeout,
            request_timeout,
            ..
        } = &*self.inner;
        match master(target, *connect_timeout, *request_timeout).await {
            Ok((_, con)) => Ok(con),
            Err(err) => {
                let (host, port) = self.current().address;
                let config = connection_config(*connect_timeout, *request_timeout);
                confirmed(target, &host, port, &config)
                    .await
                    .map_err(|_| err)
            }
        }
    }
}

impl ConnectionLike for Following {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let Current {
                generation,
                mut con,
                ..
            } = self.current();
            let answer = con.req_packed_command(cmd).await;
            if let Err(err) = &answer {
                self.after(generation, err).await;
            }
            answer
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let Current {
                generation,
                mut con,
                ..
            } = self.current();
            let answer = con.req_packed_commands(cmd, offset, count).await;
            if let Err(err) = &answer {
                self.after(generation, err).await;
            }
            answer
        })
    }

    fn get_db(&self) -> i64 {
        self.inner.target.settings.db()
    }
}

/// A connection of its own to the master the sentinels name (for the watch hub's blocking
/// reads).
pub(crate) async fn dedicated(
    target: &SentinelTarget,
    connect_timeout: Duration,
    request_timeout: Duration,
) -> RedisResult<MultiplexedConnection> {
    master(target, connect_timeout, request_timeout)
        .await
        .map(|(_, con)| con)
}

/// The client of the master the sentinels name (for the reconciler's subscription).
pub(crate) async fn master_client(
    target: &SentinelTarget,
    connect_timeout: Duration,
    request_timeout: Duration,
) -> RedisResult<redis::Client> {
    let ((host, port), _) = master(target, connect_timeout, request_timeout).await?;
    target.client(target.master_info(&host, port)?)
}

/// The master the first answering sentinel names, once it says it is the master (a sentinel
/// may still name a demoted one for a moment after a failover), and a connection to it.
async fn master(
    target: &SentinelTarget,
    connect_timeout: Duration,
    request_timeout: Duration,
) -> RedisResult<((String, u16), MultiplexedConnection)> {
    let config = connection_config(connect_timeout, request_timeout);
    let mut last: Option<RedisError> = None;
    for sentinel in &target.sentinels {
        let attempt = async {
            let mut con = target
                .client(sentinel.clone())?
                .get_multiplexed_async_connection_with_config(&config)
                .await?;
            let (host, port): (String, u16) = redis::cmd("SENTINEL")
                .arg("GET-MASTER-ADDR-BY-NAME")
                .arg(&target.master)
                .query_async(&mut con)
                .await?;
            let master = confirmed(target, &host, port, &config).await?;
            Ok(((host, port), master))
        };
        match attempt.await {
            Ok(found) => return Ok(found),
            Err(err) => last = Some(err),
        }
    }
    Err(last
        .unwrap_or_else(|| RedisError::from((redis::ErrorKind::Io, "no sentinel is configured"))))
}

/// The settings of every connection to a sentinel or a master.
fn connection_config(
    connect_timeout: Duration,
    request_timeout: Duration,
) -> redis::AsyncConnectionConfig {
    redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(connect_timeout))
        .set_response_timeout(Some(request_timeout))
}

/// A connection to the server at `host:port`, once it says it is a master (`ROLE`): a
/// sentinel may still name a demoted one for a moment after a failover, and the master a
/// connection knew may have been demoted since.
async fn confirmed(
    target: &SentinelTarget,
    host: &str,
    port: u16,
    config: &redis::AsyncConnectionConfig,
) -> RedisResult<MultiplexedConnection> {
    let mut master = target
        .client(target.master_info(host, port)?)?
        .get_multiplexed_async_connection_with_config(config)
        .await?;
    let role: Vec<Value> = redis::cmd("ROLE").query_async(&mut master).await?;
    match role.first() {
        Some(Value::BulkString(role)) if role == b"master" => Ok(master),
        _ => Err(RedisError::from((
            redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly),
            "the server is not a master (yet)",
        ))),
    }
}
