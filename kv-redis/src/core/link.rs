//! [`Link`]: how a core's requests reach the server. A script runs as a function of the
//! library (`FCALL`) or by `EVALSHA`, with the fallbacks between the two; a write waits for
//! the replicas when configured, its `WAIT` in one pipeline with it. A [`Link`] is cheap to clone, so that the group commit's
//! driver ([`super::commit`]) can own one.

use crate::con::Con;
use crate::core::scripts::{self, Lua, Scripts};
use crate::error::map_error;
use keyplane_contract::{Error, ErrorKind, Result};
use redis::{Cmd, FromRedisValue, RedisError, Value};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What sending a core's scripts needs: the connection, whether scripts run as functions,
/// the internal keys every call names, and the write settings.
#[derive(Clone)]
pub(crate) struct Link {
    pub(crate) con: Con,
    /// Whether scripts run as the functions of the library (`FCALL`), else by `EVALSHA`:
    /// see [`scripts`]. Cleared for good when the server stops serving the library.
    pub(crate) functions: Arc<AtomicBool>,
    /// The revision counter, which every script run declares as its one key.
    pub(crate) rev_key: Arc<[u8]>,
    /// The internal prefix, every script run's first argument.
    pub(crate) prefix: Arc<[u8]>,
    /// The revisions the event log retains, every writing script's second argument.
    pub(crate) retention: u64,
    /// How many replicas a write waits for (0: none), and for how long.
    pub(crate) wait_replicas: u32,
    pub(crate) wait_timeout_ms: u64,
}

impl Link {
    /// Sends a writing script's run from `write_call`, and waits for the replicas, when
    /// configured.
    pub(crate) async fn send_write<T: FromRedisValue>(
        &self,
        script: &Lua,
        call: &Cmd,
        op: &'static str,
    ) -> Result<T> {
        let (reply, acked) = self.run(script, call, op, self.waits()).await?;
        let reply = T::from_redis_value(reply).map_err(|e| map_error(op, e.into()))?;
        if let Some(acked) = acked {
            self.check_acked(acked, op).await?;
        }
        Ok(reply)
    }

    /// Whether a write waits for replicas. Its `WAIT` then travels with it, in one pipeline
    /// on one connection (on a cluster, to the node of the write's slot): `WAIT` counts the
    /// replicas that have the last write *of its connection*, so sent apart it could reach
    /// a connection opened after a reconnection, a failover or a move to a new master,
    /// which wrote nothing, and say yes at once for a write no replica has.
    pub(crate) fn waits(&self) -> bool {
        self.wait_replicas > 0
    }

    /// Sends `cmd` on `con`; with `wait`, in one pipeline with `WAIT`, whose answer (how
    /// many replicas acknowledged it) comes second. An error reply to `cmd` is the error.
    pub(crate) async fn query(
        &self,
        con: &mut Con,
        cmd: &Cmd,
        wait: bool,
    ) -> redis::RedisResult<(Value, Option<i64>)> {
        if !wait {
            return cmd.query_async::<Value>(con).await.map(|v| (v, None));
        }
        let mut pipe = redis::pipe();
        pipe.add_command(cmd.clone())
            .add_command(self.wait_command());
        let (reply, acked): (Value, i64) = pipe.query_async(con).await?;
        Ok((reply, Some(acked)))
    }

    fn wait_command(&self) -> Cmd {
        let mut wait = redis::cmd("WAIT");
        wait.arg(self.wait_replicas).arg(self.wait_timeout_ms);
        wait
    }

    /// The outcome of a write `acked` replicas acknowledged.
    ///
    /// # Errors
    /// `Timeout` when that is fewer than [`RedisConfig::wait_replicas`].
    pub(crate) async fn check_acked(&self, acked: i64, op: &'static str) -> Result<()> {
        let wanted = self.wait_replicas;
        if acked < i64::from(wanted) {
            // A master cut off from its replicas may have been replaced meanwhile.
            if let Con::Sentinel(following) = &self.con {
                following.recheck().await;
            }
            return Err(Error::new(
                ErrorKind::Timeout,
                format!(
                    "the write was applied on the master and acknowledged by {acked} of the \
                     {wanted} replicas RedisConfig::wait_replicas asks for within \
                     wait_timeout: a failover could lose it"
                ),
            )
            .with_context("op", op));
        }
        Ok(())
    }

    /// The run of `script` (`FCALL` or `EVALSHA`, its one key the revision counter) with the
    /// prefix as its first argument, for the caller to add the rest of its arguments to, in one buffer, and send
    /// with `invoke`.
    pub(crate) fn script_call(&self, script: &Lua) -> Cmd {
        let mut call = if self.functions.load(Ordering::Relaxed) {
            let mut call = redis::cmd("FCALL");
            call.arg(&script.function);
            call
        } else {
            let mut call = redis::cmd("EVALSHA");
            call.arg(script.script.get_hash());
            call
        };
        // The revision key, declared so that a cluster routes the call to the group's slot.
        call.arg(1).arg(&*self.rev_key).arg(&*self.prefix);
        call
    }

    /// The run of a writing script: the prefix, then the log retention.
    pub(crate) fn write_call(&self, script: &Lua) -> Cmd {
        let mut call = self.script_call(script);
        call.arg(self.retention);
        call
    }

    /// Sends a script run from `script_call`. A function the server lacks (a restarted
    /// server without persistence, or one whose functions were flushed) is loaded and called
    /// again; a server that no longer serves the library (the user lost the permission to
    /// call or load it) gets the script by `EVALSHA` from then on. A function refused
    /// because the server is out of memory runs once more by `EVALSHA`, which Redis checks
    /// at the script's first write instead of before it starts, so that deletes, which free
    /// memory, still run. A script the server lacks is loaded and sent again.
    pub(crate) async fn invoke<T: FromRedisValue>(
        &self,
        script: &Lua,
        call: &Cmd,
        op: &'static str,
    ) -> Result<T> {
        let (reply, _) = self.run(script, call, op, false).await?;
        T::from_redis_value(reply).map_err(|e| map_error(op, e.into()))
    }

    /// [`Link::invoke`], each run of the script followed in its pipeline by `WAIT` when
    /// `wait` (see [`Link::query`]): the reply, and how many replicas acknowledged it.
    async fn run(
        &self,
        script: &Lua,
        call: &Cmd,
        op: &'static str,
        wait: bool,
    ) -> Result<(Value, Option<i64>)> {
        let mut con = self.con.clone();
        let mut reply = self.query(&mut con, call, wait).await;
        if is_fcall(call) {
            let mut eval = false;
            if let Err(e) = &reply {
                if function_missing(e) {
                    match load_library(&mut con).await {
                        Ok(()) => reply = self.query(&mut con, call, wait).await,
                        Err(e) if unreachable(&e) => reply = Err(e),
                        Err(_) => {
                            self.functions.store(false, Ordering::Relaxed);
                            eval = true;
                        }
                    }
                } else if refused_fcall(e) {
                    self.functions.store(false, Ordering::Relaxed);
                    eval = true;
                } else if e.code() == Some("OOM") {
                    eval = true;
                }
            }
            if eval {
                reply = self.query(&mut con, &as_evalsha(script, call), wait).await;
            }
        }
        let reply = match reply {
            Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
                match script.script.load_async(&mut con).await {
                    Ok(_) => self.query(&mut con, &as_evalsha(script, call), wait).await,
                    Err(e) => Err(e),
                }
            }
            reply => reply,
        };
        reply.map_err(|e| map_error(op, e))
    }
}

/// Whether the server serves the function library to this connection's user: the library's
/// `hello` function answers, or the library loads. Servers before Redis 7 (no `FCALL`), users
/// who may not call it, or users who may not load it when it is missing answer no.
///
/// # Errors
/// `Unavailable` when the server cannot be reached.
pub(crate) async fn serves_functions(con: &mut Con, scripts: &Scripts) -> Result<bool> {
    let hello: redis::RedisResult<i64> = redis::cmd("FCALL")
        .arg(&scripts.hello)
        .arg(0)
        .query_async(con)
        .await;
    match hello {
        Ok(_) => Ok(true),
        Err(e) if function_missing(&e) => match load_library(con).await {
            Ok(()) => Ok(true),
            Err(e) if unreachable(&e) => Err(map_error("connect", e)),
            Err(_) => Ok(false),
        },
        Err(e) if unreachable(&e) => Err(map_error("connect", e)),
        Err(_) => Ok(false),
    }
}

/// Whether `e` says nothing of the server's answer (the connection failed or timed out), as
/// opposed to a refusal.
fn unreachable(e: &RedisError) -> bool {
    e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() || e.is_timeout()
}

/// Loads the function library; one that is already loaded (by another store) counts as
/// loaded.
pub(crate) async fn load_library(con: &mut Con) -> redis::RedisResult<()> {
    let library = scripts::library();
    let loaded: redis::RedisResult<String> = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(&library.code)
        .query_async(con)
        .await;
    match loaded {
        Err(e) if !e.detail().unwrap_or_default().contains("already exists") => Err(e),
        _ => Ok(()),
    }
}

/// Whether `call` is an `FCALL`.
fn is_fcall(call: &Cmd) -> bool {
    matches!(call.args_iter().next(), Some(redis::Arg::Simple(b"FCALL")))
}

/// Whether the server answered that the function does not exist.
pub(crate) fn function_missing(e: &RedisError) -> bool {
    e.code() == Some("ERR")
        && e.detail()
            .unwrap_or_default()
            .starts_with("Function not found")
}

/// Whether the server refused `FCALL` itself: it does not know the command, or the user may
/// not run it (not an error a function returned, which names no command).
pub(crate) fn refused_fcall(e: &RedisError) -> bool {
    let detail = e.detail().unwrap_or_default().to_ascii_lowercase();
    match e.code() {
        Some("NOPERM") => detail.contains("'fcall'"),
        Some("ERR") => detail.starts_with("unknown command") && detail.contains("fcall"),
        _ => false,
    }
}

/// The `EVALSHA` form of an `FCALL` (or `EVALSHA`) from `script_call`: the same keys and
/// arguments.
fn as_evalsha(script: &Lua, call: &Cmd) -> Cmd {
    let mut eval = redis::cmd("EVALSHA");
    eval.arg(script.script.get_hash());
    for arg in call.args_iter().skip(2) {
        if let redis::Arg::Simple(arg) = arg {
            eval.arg(arg);
        }
    }
    eval
}
