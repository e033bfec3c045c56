//! [`Core`]: what every operation and background task shares (the connection, the
//! configuration, the capabilities, the scripts, the internal prefix), and the request
//! helpers of the op files: running a script, naming internal keys, rejecting reserved keys,
//! reading where the event log stands and the revision counter, and the lex bounds of a
//! prefix. Under it: [`decode`], the decoding of script replies and log entries;
//! [`history`], the event log as reads at a past revision rewind through it; [`scripts`], the
//! Lua scripts; [`link`], how a script run reaches the server; [`commit`] and [`reads`], the
//! group commit and the grouped reads, both built on [`group`]; [`hub`], the one follower of
//! the event log's tail that every watch shares. Reconciling, which reads and writes run
//! before acting on keys another program touched, is a room of its own
//! (`crate::reconcile`).

pub(crate) mod cluster;
pub(crate) mod commit;
pub(crate) mod decode;
pub(crate) mod group;
pub(crate) mod history;
pub(crate) mod hub;
pub(crate) mod link;
pub(crate) mod marks;
pub(crate) mod reads;
pub(crate) mod route;
pub(crate) mod scripts;

use crate::con::{Con, Dial, Following};
use crate::config::RedisConfig;
use crate::core::commit::{Committer, Writer};
use crate::core::decode::{array, corrupted, int};
use crate::core::link::{Link, serves_functions};
use crate::core::reads::Reads;
use crate::core::scripts::{Lua, Scripts};
use crate::error::map_error;
use keyplane_contract::{Capabilities, Error, ForeignWrites, Result, Retention, Sharding, Support};
use redis::aio::ConnectionManagerConfig;
use redis::{Cmd, FromRedisValue, Value};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// The largest value the store accepts (Redis takes up to 512 MiB; larger values would stall
/// the single-threaded server inside a script).
const MAX_VALUE_BYTES: usize = 16 << 20;

/// What the store's operations and its background tasks share. On a Redis Cluster each
/// co-location group has a `Core` of its own ([`Core::group`]): the same connection, with the
/// group's internal prefix, under which its revision, metadata, index, log and leases live.
pub(crate) struct Core {
    pub(crate) con: Con,
    pub(crate) dial: Dial,
    pub(crate) config: RedisConfig,
    pub(crate) caps: Capabilities,
    pub(crate) scripts: Arc<Scripts>,
    /// Whether scripts run as the functions of the library (`FCALL`), else by `EVALSHA`:
    /// see [`scripts`]. Cleared for good when the server stops serving the library.
    pub(crate) functions: Arc<AtomicBool>,
    /// The prefix of this core's internal keys: the configured internal prefix, followed on
    /// a cluster by the group's hash tag and `:`.
    pub(crate) prefix: Vec<u8>,
    /// The revision counter, `prefix` + `rev`: every script run declares it as its key.
    pub(crate) rev_key: Vec<u8>,
    /// Wakes the lease sweeper when a lease is granted.
    pub(crate) sweeper_wake: Arc<Notify>,
    /// The database index, which keyspace notification channels name.
    pub(crate) db: i64,
    /// The one follower of the event log's tail that every watch shares.
    pub(crate) hub: Arc<hub::Hub>,
    /// How requests reach the server.
    pub(crate) link: Link,
    /// The group commit of this core's writes.
    committer: Committer,
    /// The grouped reads of this core's gets.
    pub(crate) reads: Reads,
    /// On a cluster, a group's entry in the registry of groups, made before its first write.
    registration: Option<Registration>,
}

/// A co-location group's entry in the cluster's registry of groups (the set
/// `{internal prefix}groups`), which ranges and watches spanning groups read: added by every
/// store before its first write to the group, so that a group with data is always named there.
struct Registration {
    registry: Vec<u8>,
    tag: Vec<u8>,
    done: AtomicBool,
}

/// What every core of one store shares, whatever its internal prefix.
struct Shared {
    con: Con,
    dial: Dial,
    config: RedisConfig,
    caps: Capabilities,
    scripts: Arc<Scripts>,
    functions: Arc<AtomicBool>,
    db: i64,
}

/// The event log's state when a watch or a pinned read starts.
pub(crate) struct LogStart {
    /// The store revision.
    pub(crate) current: i64,
    /// The first revision the log still holds (0 when it is empty).
    pub(crate) first: i64,
    /// The compaction floor (0 when never compacted).
    pub(crate) compacted: i64,
    /// The log entries read, from the revision asked for on.
    pub(crate) entries: Vec<Value>,
}

impl Core {
    /// Connects to the Redis server or cluster of `config` (a connection that reconnects)
    /// and derives the capabilities from the configuration.
    ///
    /// # Errors
    /// As [`RedisStore::open`](crate::RedisStore::open).
    pub(crate) async fn connect(config: RedisConfig) -> Result<Core> {
        let (con, dial, db) = if config.is_cluster() {
            let (nodes, username, password) = config.cluster_nodes()?;
            let dial = Dial::Cluster {
                nodes,
                username,
                password,
                #[cfg(feature = "tls")]
                certificates: match &config.tls {
                    Some(tls) => Some(crate::config::certificates(tls)?),
                    None => None,
                },
            };
            let client = dial
                .cluster_client(config.connect_timeout, config.request_timeout)
                .map_err(|e| map_error("connect", e))?;
            let con = client
                .get_async_connection()
                .await
                .map_err(|e| map_error("connect", e))?;
            (Con::Cluster(con), dial, 0)
        } else if config.is_sentinel() {
            let target = config.sentinel_target()?;
            let db = target.settings.db();
            let con = Following::connect(
                target.clone(),
                config.connect_timeout,
                config.request_timeout,
            )
            .await
            .map_err(|e| map_error("connect", e))?;
            (Con::Sentinel(con), Dial::Sentinel(target), db)
        } else {
            let info = config.connection_info()?;
            let db = info.redis_settings().db();
            #[cfg(feature = "tls")]
            let client = match &config.tls {
                Some(tls) => redis::Client::build_with_tls(info, crate::config::certificates(tls)?),
                None => redis::Client::open(info),
            };
            #[cfg(not(feature = "tls"))]
            let client = redis::Client::open(info);
            let client = client.map_err(|e| map_error("connect", e))?;
            let manager_config = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(config.connect_timeout))
                .set_response_timeout(Some(config.request_timeout))
                .set_number_of_retries(3);
            let con = client
                .get_connection_manager_with_config(manager_config)
                .await
                .map_err(|e| map_error("connect", e))?;
            (Con::Manager(con), Dial::Single(client), db)
        };
        let caps = Capabilities {
            backend: "redis",
            max_txn_ops: config.max_txn_ops,
            max_value_bytes: MAX_VALUE_BYTES,
            max_key_bytes: keyplane_contract::raw::MAX_KEY_LEN,
            ttl_granularity: Duration::from_millis(1),
            history_retention: Retention::Revisions(config.history_retention),
            txn: Support::Native,
            leases: Support::Emulated,
            watch: Support::Emulated,
            collections: Support::Native,
            persistent: config.persistent,
            foreign_writes: ForeignWrites::Reconciled {
                interval: config.reconcile_period(),
            },
            sharding: if config.is_cluster() {
                Sharding::HashTagGroups
            } else {
                Sharding::Unsharded
            },
        };
        let scripts = Arc::new(Scripts::new());
        let functions = config.functions && serves_functions(&mut con.clone(), &scripts).await?;
        let shared = Shared {
            con,
            dial,
            config,
            caps,
            scripts,
            functions: Arc::new(AtomicBool::new(functions)),
            db,
        };
        let prefix = shared.config.internal_prefix.as_bytes().to_vec();
        Ok(Core::under(shared, prefix))
    }

    /// The core of the co-location group whose hash tag is `tag` (on a cluster): the same
    /// connection and scripts, with the internal prefix `{internal prefix}{tag}:`, so that
    /// every internal key of the group hashes to the slot of its user keys.
    pub(crate) fn group(&self, tag: &[u8]) -> Core {
        let prefix = [self.config.internal_prefix.as_bytes(), b"{", tag, b"}:"].concat();
        let shared = Shared {
            con: self.con.clone(),
            dial: self.dial.clone(),
            config: self.config.clone(),
            // A group's own store is unsharded: its whole contract is the group's.
            caps: Capabilities {
                sharding: Sharding::Unsharded,
                ..self.caps.clone()
            },
            scripts: Arc::clone(&self.scripts),
            functions: Arc::clone(&self.functions),
            db: self.db,
        };
        let mut core = Core::under(shared, prefix);
        core.registration = Some(Registration {
            registry: self.internal("groups"),
            tag: tag.to_vec(),
            done: AtomicBool::new(false),
        });
        core
    }

    /// Adds this core's group to the registry of groups, once per core, before its first
    /// write (nothing to do off a cluster).
    ///
    /// # Errors
    /// Backend errors: the write is then not sent.
    async fn register(&self, op: &'static str) -> Result<()> {
        let Some(reg) = &self.registration else {
            return Ok(());
        };
        if reg.done.load(Ordering::Relaxed) {
            return Ok(());
        }
        let mut con = self.con.clone();
        let _: i64 = redis::cmd("SADD")
            .arg(reg.registry.as_slice())
            .arg(reg.tag.as_slice())
            .query_async(&mut con)
            .await
            .map_err(|e| map_error(op, e))?;
        reg.done.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// The core of `shared` whose internal keys are under `prefix`, with the names derived
    /// from it and a watch hub of its own.
    fn under(shared: Shared, prefix: Vec<u8>) -> Core {
        let Shared {
            con,
            dial,
            config,
            caps,
            scripts,
            functions,
            db,
        } = shared;
        let rev_key = [prefix.as_slice(), b"rev"].concat();
        let link = Link {
            con: con.clone(),
            functions: Arc::clone(&functions),
            rev_key: rev_key.as_slice().into(),
            prefix: prefix.as_slice().into(),
            retention: config.history_retention,
            wait_replicas: config.wait_replicas,
            wait_timeout_ms: u64::try_from(config.wait_timeout.as_millis()).unwrap_or(u64::MAX),
        };
        Core {
            committer: Committer::new(
                link.clone(),
                Arc::clone(&scripts),
                config.max_prefix_delete_keys,
            ),
            reads: Reads::new(con.clone(), &[prefix.as_slice(), b"meta"].concat()),
            link,
            hub: Arc::new(hub::Hub::new(dial.clone(), con.clone(), &prefix, &config)),
            con,
            dial,
            rev_key,
            prefix,
            config,
            caps,
            scripts,
            functions,
            sweeper_wake: Arc::new(Notify::new()),
            db,
            registration: None,
        }
    }

    /// The name of an internal key: the prefix and `name`.
    pub(crate) fn internal(&self, name: &str) -> Vec<u8> {
        let mut key = self.prefix.clone();
        key.extend_from_slice(name.as_bytes());
        key
    }

    /// Rejects user keys under the internal prefix.
    pub(crate) fn check_key(&self, key: &[u8]) -> Result<()> {
        let reserved = self.config.internal_prefix.as_bytes();
        if key.starts_with(reserved) {
            return Err(
                Error::invalid_key("keys under the store's internal prefix are reserved")
                    .with_context("key", keyplane_contract::raw::escape_bytes(key))
                    .with_context("prefix", keyplane_contract::raw::escape_bytes(reserved)),
            );
        }
        Ok(())
    }

    /// Runs a script with the prefix as its first argument, then `args`.
    pub(crate) async fn run<T: FromRedisValue>(
        &self,
        script: &Lua,
        args: &[&[u8]],
        op: &'static str,
    ) -> Result<T> {
        let mut call = self.link.script_call(script);
        for arg in args {
            call.arg(*arg);
        }
        self.link.invoke(script, &call, op).await
    }

    /// Runs a writing script: the prefix, the log retention, then `args`; on a cluster the
    /// group joins the registry first; then waits for the replicas, when configured.
    pub(crate) async fn run_write<T: FromRedisValue>(
        &self,
        script: &Lua,
        args: &[&[u8]],
        op: &'static str,
    ) -> Result<T> {
        let mut call = self.link.write_call(script);
        for arg in args {
            call.arg(*arg);
        }
        self.register(op).await?;
        self.link.send_write(script, &call, op).await
    }

    /// Runs a writing script as [`Core::run_write`] does, without waiting for the replicas:
    /// for the index's conversion steps (`scripts/index_upgrade.lua`), which change no data,
    /// so that a step a failover loses leaves a valid index and is done again.
    pub(crate) async fn run_write_unacked<T: FromRedisValue>(
        &self,
        script: &Lua,
        op: &'static str,
    ) -> Result<T> {
        let call = self.link.write_call(script);
        self.link.invoke(script, &call, op).await
    }

    /// Sends the write `args` of `writer` (its arguments after the prefix and the retention)
    /// through the group commit (see `core::commit`): alone while few of this core's calls are in
    /// flight, else in one call with the writes that queued meanwhile. Then waits for the
    /// replicas, when configured. On a cluster the group joins the registry first. `weight`
    /// is the write's work, which bounds a batch's (see `core::commit`).
    pub(crate) async fn commit(
        &self,
        writer: Writer,
        args: Cmd,
        weight: u64,
        op: &'static str,
    ) -> Result<Value> {
        self.register(op).await?;
        self.committer.submit(writer, args, weight, op).await
    }

    /// Where the event log stands, read atomically with its entries from revision `from` on
    /// (at most `count`): see `scripts/watch_from.lua`.
    pub(crate) async fn log_start(
        &self,
        from: i64,
        count: usize,
        op: &'static str,
    ) -> Result<LogStart> {
        let (from, count) = (from.to_string(), count.to_string());
        let reply: Value = self
            .run(
                &self.scripts.watch_from,
                &[from.as_bytes(), count.as_bytes()],
                op,
            )
            .await?;
        let mut parts = array(reply)?.into_iter();
        let (Some(current), Some(first), Some(compacted), Some(entries)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(corrupted("a watch start reply has four parts"));
        };
        Ok(LogStart {
            current: int(current)?,
            first: int(first)?,
            compacted: int(compacted)?,
            entries: array(entries)?,
        })
    }

    /// The store revision: the revision counter `P rev`, 0 before the first write (ranges
    /// and watches read it too).
    pub(crate) async fn revision(&self) -> Result<i64> {
        let mut con = self.con.clone();
        let rev: Option<i64> = redis::cmd("GET")
            .arg(self.rev_key.as_slice())
            .query_async(&mut con)
            .await
            .map_err(|e| map_error("revision", e))?;
        Ok(rev.unwrap_or(0))
    }
}

/// The digest that a key's metadata keeps of the value the store wrote: the first 16 hex
/// digits of its SHA-1, as `digest` in `scripts/lib.lua` computes it for values another
/// program wrote. The client computes it for its own writes, so that the single-threaded
/// server does not.
pub(crate) fn value_digest(value: &[u8]) -> [u8; 16] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let sha = sha1_smol::Sha1::from(value).digest().bytes();
    let mut out = [0; 16];
    for (pair, byte) in out.chunks_exact_mut(2).zip(sha) {
        pair[0] = HEX[usize::from(byte >> 4)];
        pair[1] = HEX[usize::from(byte & 0xf)];
    }
    out
}

/// The lex bounds of every key starting with `prefix`, for ZRANGEBYLEX.
pub(crate) fn prefix_lex_bounds(prefix: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let min = [b"[".as_slice(), prefix].concat();
    let max = match keyplane_contract::raw::prefix_end(prefix) {
        Some(end) => [b"(".as_slice(), &end].concat(),
        None => b"+".to_vec(),
    };
    (min, max)
}

#[cfg(test)]
mod tests {
    use super::value_digest;

    #[test]
    fn the_digest_is_the_first_16_hex_digits_of_sha1() {
        assert_eq!(&value_digest(b"abc"), b"a9993e364706816a");
        assert_eq!(&value_digest(b""), b"da39a3ee5e6b4b0d");
    }
}
