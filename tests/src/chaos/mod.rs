//! `cargo xtask chaos`: concurrent clients run random operations on each backend while
//! faults are injected, every client records a history, and the histories are checked for
//! linearizability per key and for the six watch properties.
//!
//! - **Operations**: gets, puts, deletes, compare-and-set transactions (on the value or on
//!   the mod revision read before), pair writes (one transaction, two keys), set adds,
//!   removes and reads, and leased puts, by 6 clients on 8 plain keys, 2 sets of 4 members
//!   and leased keys under a fresh root. Every written value is unique in the run.
//! - **Faults**: MemStore behind a [`FaultLayer`](keyplane_core::layer::FaultLayer)
//!   (refused calls, answers lost after the write was applied, latency, dropped watches);
//!   SledStore's clients in a child process killed with SIGKILL and restarted over the same
//!   database; Redis killed with SIGKILL and restarted, or paused with SIGSTOP/SIGCONT; a
//!   3-member etcd cluster whose leader or a follower is killed and restarted, or a member
//!   paused, or which is partitioned (a follower cut off from the others, the leader alone
//!   on the minority side with its clients, the clients cut off from a member); Redis under
//!   Sentinel, partitioned (the master cut off from its replicas and the sentinels until a
//!   replica is promoted, then healed; the master cut off for less than the sentinels'
//!   down-after time; a replica cut off). The partitions are made by the harness's proxies
//!   ([`crate::harness::Network`]), on loopback.
//! - **Outcomes**: an operation that answered is `Ok`; one that certainly did not take
//!   effect (`Error::is_unapplied`, or a definite error such as `LeaseNotFound`) or a read
//!   that failed is `Fail`; a write that timed out or lost its connection is `Unknown`: it
//!   may take effect at any time after its invocation, or never. A watch over the root,
//!   resumed after every failure, settles most unknown writes afterwards: a write the watch
//!   delivered happened at its revision, before the watch received it; a write it never
//!   delivered while it covered the whole run had no effect.
//! - **Checks** ([`check`]): revisions of acknowledged writes are unique and grow with real
//!   time, and a read's mod revision is its value's write revision; every plain key and set
//!   is linearizable ([`linearizability`], Wing–Gong with porcupine's memoization, bounded:
//!   a search over budget is reported as inconclusive, not as an anomaly); the watches are
//!   ordered, unique, atomic, bookmarkable, reliable and resumable ([`watch`]); a leased key
//!   never disappears before its TTL and always does after it, with a delete event.
//!
//! - **Redis under Sentinel** ([`sentinel`]): replication is asynchronous, so half the
//!   clients write with `wait_replicas = 1` and half without. A write acknowledged with
//!   `wait_replicas` that the final history (one watch read after the faults) lacks is an
//!   anomaly ([`durability`]); the writes not waited for that a failover lost, and what the
//!   linearizability, revision and watch checks find once writes could be lost, are counted
//!   apart and printed as `apart:` lines.
//!
//! The binary `chaos` (`cargo xtask chaos`) runs each backend for its share of
//! `--minutes`, prints a line per backend and every anomaly with the operations involved,
//! and closes with `chaos: N operations, M faults, K anomalies`. With `KV_CHAOS_RECORDS=DIR`
//! it saves each backend's records there, one line each.
//!
//! **Redis persistence**: the run's server uses the AOF with `appendfsync always`, which
//! fsyncs every write before Redis answers, so a `kill -9` loses no acknowledged write.
//! With `appendfsync everysec` (Redis's default when the AOF is on) Redis promises only
//! that about one second of writes may be lost on a crash: acknowledged writes from the last
//! second before a `kill -9` may vanish on restart, which this run would report as lost
//! writes (linearizability and watch anomalies). Run `everysec` only where that loss is
//! acceptable.

pub mod check;
pub mod durability;
pub mod embedded;
pub mod faults;
pub mod history;
pub mod linearizability;
mod lines;
mod resolve;
pub mod run;
pub mod sentinel;
pub mod watch;
pub mod workload;
