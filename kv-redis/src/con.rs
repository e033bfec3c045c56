//! The connection every operation sends on: one Redis server (a connection manager that
//! reconnects) or a Redis Cluster (redis-rs' cluster connection, which follows `MOVED` and
//! `ASK` and refreshes its slot map after a failover), behind one [`ConnectionLike`]; and
//! [`Dial`], which opens connections of their own (for the watch hub's blocking reads).

mod node;
mod sentinel;

pub(crate) use sentinel::Following;

use crate::config::SentinelTarget;
use redis::aio::{ConnectionLike, ConnectionManager, MultiplexedConnection};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};
use std::time::Duration;

/// A connection to one server or to a cluster.
#[derive(Clone)]
pub(crate) enum Con {
    /// The store's shared connection to one server.
    Manager(ConnectionManager),
    /// A connection of its own to one server.
    Multiplexed(MultiplexedConnection),
    /// A connection to a cluster, routing each command by its key's slot.
    Cluster(ClusterConnection),
    /// The store's shared connection to the master Sentinel names, following failovers.
    Sentinel(Following),
}

impl ConnectionLike for Con {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Con::Manager(c) => c.req_packed_command(cmd),
            Con::Multiplexed(c) => c.req_packed_command(cmd),
            Con::Cluster(c) => c.req_packed_command(cmd),
            Con::Sentinel(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Con::Manager(c) => c.req_packed_commands(cmd, offset, count),
            Con::Multiplexed(c) => c.req_packed_commands(cmd, offset, count),
            Con::Cluster(c) => c.req_packed_commands(cmd, offset, count),
            Con::Sentinel(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Con::Manager(c) => c.get_db(),
            Con::Multiplexed(c) => c.get_db(),
            Con::Cluster(c) => c.get_db(),
            Con::Sentinel(c) => c.get_db(),
        }
    }
}

/// What opens new connections: the client of one server, or the seed nodes and credentials
/// of a cluster.
#[derive(Clone)]
pub(crate) enum Dial {
    Single(redis::Client),
    Cluster {
        nodes: Vec<redis::ConnectionInfo>,
        username: Option<String>,
        password: Option<String>,
        /// The CA and client certificate of a cluster whose nodes speak TLS.
        #[cfg(feature = "tls")]
        certificates: Option<redis::TlsCertificates>,
    },
    /// The sentinels, asked for the master at every new connection.
    Sentinel(SentinelTarget),
}

impl Dial {
    /// A connection of its own (not shared with the store's operations) to the server that
    /// holds `key`: the one server, the master the sentinels name, or the master of the
    /// key's slot in a cluster, as the store's `shared` connection learns it (a connection
    /// to that one node, which ends rather than moves when the slot's master changes).
    pub(crate) async fn dedicated(
        &self,
        key: &[u8],
        shared: &Con,
        connect_timeout: Duration,
        request_timeout: Duration,
    ) -> RedisResult<Con> {
        match self {
            Dial::Single(client) => {
                let config = redis::AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(connect_timeout))
                    .set_response_timeout(Some(request_timeout));
                Ok(Con::Multiplexed(
                    client
                        .get_multiplexed_async_connection_with_config(&config)
                        .await?,
                ))
            }
            // The store's connection knows the master, which it tries when no sentinel answers.
            Dial::Sentinel(_) if let Con::Sentinel(following) = shared => {
                Ok(Con::Multiplexed(following.dedicated().await?))
            }
            Dial::Sentinel(target) => Ok(Con::Multiplexed(
                sentinel::dedicated(target, connect_timeout, request_timeout).await?,
            )),
            Dial::Cluster { .. } => Ok(Con::Multiplexed(
                self.node_of(key, shared, connect_timeout, request_timeout)
                    .await?,
            )),
        }
    }

    /// The client of the cluster, with these timeouts.
    pub(crate) fn cluster_client(
        &self,
        connect_timeout: Duration,
        request_timeout: Duration,
    ) -> RedisResult<ClusterClient> {
        let Dial::Cluster {
            nodes,
            username,
            password,
            #[cfg(feature = "tls")]
            certificates,
        } = self
        else {
            return Err(redis::RedisError::from((
                redis::ErrorKind::InvalidClientConfig,
                "not a cluster",
            )));
        };
        let mut builder = ClusterClient::builder(nodes.clone())
            .connection_timeout(connect_timeout)
            .response_timeout(request_timeout)
            .retries(6);
        if let Some(username) = username {
            builder = builder.username(username);
        }
        if let Some(password) = password {
            builder = builder.password(password);
        }
        #[cfg(feature = "tls")]
        if let Some(certificates) = certificates {
            builder = builder.certs(certificates.clone());
        }
        builder.build()
    }

    /// The client of the server to subscribe to for the reconciler's keyspace
    /// notifications: the one server, or the master the sentinels name now (`None` on a
    /// cluster, where the reconciler does not run).
    pub(crate) async fn pubsub_client(
        &self,
        connect_timeout: Duration,
        request_timeout: Duration,
    ) -> RedisResult<Option<redis::Client>> {
        match self {
            Dial::Single(client) => Ok(Some(client.clone())),
            Dial::Sentinel(target) => {
                sentinel::master_client(target, connect_timeout, request_timeout)
                    .await
                    .map(Some)
            }
            Dial::Cluster { .. } => Ok(None),
        }
    }
}
