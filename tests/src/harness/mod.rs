//! Real `etcd` and `redis-server` processes for tests: free loopback ports, temporary data
//! directories, readiness checks, kill and restart on demand, a 3-member etcd cluster, a
//! Redis Cluster and a Redis deployment under Sentinel ([`RedisSentinel`]), and network
//! partitions between them ([`Network`]).
//! [`Browser`] drives a headless Chromium through `chromedriver`, for tests of web pages.
//!
//! A test binary shares one server of each kind across its tests ([`shared_etcd`],
//! [`shared_redis`]); each test isolates itself with its own key root. Fault tests start servers
//! of their own ([`EtcdServer::start`], [`RedisServer::start`], [`EtcdCluster::start`]).
//!
//! When a binary is missing, the functions return `None` after printing a loud `SKIP` line,
//! unless `KV_REQUIRE_SERVERS=1` (as CI sets), where they panic: a missing server is then a
//! failure, never a silent pass.
//!
//! Every server process is paired with a watchdog that kills it when the test process exits,
//! so servers shared through statics (never dropped) do not outlive their test binary.

mod browser;
mod etcd;
mod http;
mod partition;
mod process;
mod redis;
mod sentinel;
mod tls;

pub use browser::Browser;
pub use etcd::{EtcdCluster, EtcdServer, shared_etcd};
pub use http::http_request;
pub use partition::{CLIENT, Network};
pub use process::{complete_lines, find_binary, servers_required};
pub use redis::cluster::{RedisCluster, shared_redis_cluster};
pub use redis::{
    RedisServer, own_redis_store, redis_command_calls, redis_command_stat, redis_commands,
    redis_connection, redis_lrange, redis_scan, shared_redis, write_layout_before_buckets,
};
pub use sentinel::{RedisSentinel, SENTINEL_MASTER, shared_redis_sentinel};
pub use tls::{TestCerts, TlsEtcd, TlsRedis};

/// A fresh random key root for one test, such as `t-6f1c.../`, so tests sharing a server never
/// see each other's keys.
pub fn key_root(tag: &str) -> String {
    format!("{tag}-{}/", uuid::Uuid::new_v4().simple())
}
