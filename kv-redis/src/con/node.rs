//! A connection of its own to the Cluster node that serves one key: the master of the key's
//! slot, as the cluster's slot map names it now.
//!
//! The watch hub reads the log of its group this way rather than through redis-rs' cluster
//! connection, which reconnects and follows a failover or a `MOVED` by itself and resends
//! the read: the hub would never learn that it reads from another server than before, and
//! could not check that this server still holds the history it read (a replica promoted
//! without the last writes of its master). On its own connection to the node, a drop, a
//! failover and a moved slot all end the connection; the hub connects again, to the node
//! the slot map then names, and checks the history first.

use super::{Con, Dial};
use keyplane_contract::raw::redis_key_slot;
use redis::aio::MultiplexedConnection;
use redis::{ConnectionAddr, RedisError, RedisResult, Value};
use std::time::Duration;

impl Dial {
    /// A connection of its own to the master that serves `key` in the cluster (asked of the
    /// cluster with `CLUSTER SLOTS` on the store's `shared` connection), with the cluster's
    /// credentials and TLS settings.
    pub(super) async fn node_of(
        &self,
        key: &[u8],
        shared: &Con,
        connect_timeout: Duration,
        request_timeout: Duration,
    ) -> RedisResult<MultiplexedConnection> {
        let slots: Value = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query_async(&mut shared.clone())
            .await?;
        let (host, port) = slot_master(slots, redis_key_slot(key))?;
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(connect_timeout))
            .set_response_timeout(Some(request_timeout));
        self.node_client(host, port)?
            .get_multiplexed_async_connection_with_config(&config)
            .await
    }

    /// The client of the cluster's node at `host:port`: the seed nodes' scheme, TLS and
    /// database settings, the cluster's credentials.
    fn node_client(&self, host: String, port: u16) -> RedisResult<redis::Client> {
        let Dial::Cluster {
            nodes,
            username,
            password,
            #[cfg(feature = "tls")]
            certificates,
        } = self
        else {
            return Err(invalid("not a cluster"));
        };
        let seed = nodes.first().ok_or_else(|| invalid("no seed node"))?;
        let addr = match seed.addr() {
            ConnectionAddr::TcpTls { insecure, .. } => ConnectionAddr::TcpTls {
                host,
                port,
                insecure: *insecure,
                tls_params: None,
            },
            _ => ConnectionAddr::Tcp(host, port),
        };
        let mut settings = seed.redis_settings().clone();
        if let Some(username) = username {
            settings = settings.set_username(username);
        }
        if let Some(password) = password {
            settings = settings.set_password(password);
        }
        let info = seed.clone().set_addr(addr).set_redis_settings(settings);
        #[cfg(feature = "tls")]
        if let Some(certificates) = certificates {
            return redis::Client::build_with_tls(info, certificates.clone());
        }
        redis::Client::open(info)
    }
}

/// The address of the master serving `slot` in a `CLUSTER SLOTS` reply: entries of
/// `[first, last, [host, port, id, ...], replicas...]`.
fn slot_master(slots: Value, slot: u16) -> RedisResult<(String, u16)> {
    let Value::Array(ranges) = slots else {
        return Err(invalid("CLUSTER SLOTS did not answer an array"));
    };
    for range in ranges {
        let Value::Array(parts) = range else {
            continue;
        };
        let mut parts = parts.into_iter();
        let (Some(Value::Int(first)), Some(Value::Int(last)), Some(Value::Array(master))) =
            (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if !(first..=last).contains(&i64::from(slot)) {
            continue;
        }
        let mut master = master.into_iter();
        let host = match master.next() {
            Some(Value::BulkString(host)) => String::from_utf8(host).ok(),
            Some(Value::SimpleString(host)) => Some(host),
            _ => None,
        };
        let port = match master.next() {
            Some(Value::Int(port)) => u16::try_from(port).ok(),
            _ => None,
        };
        return match (host, port) {
            // An empty host or `?`: the node does not know its own address.
            (Some(host), Some(port)) if !host.is_empty() && host != "?" => Ok((host, port)),
            _ => Err(invalid(
                "CLUSTER SLOTS names no address for the slot's master",
            )),
        };
    }
    Err(RedisError::from((
        redis::ErrorKind::Server(redis::ServerErrorKind::ClusterDown),
        "no node serves the slot",
        format!("slot {slot}"),
    )))
}

fn invalid(what: &'static str) -> RedisError {
    RedisError::from((redis::ErrorKind::InvalidClientConfig, what))
}

#[cfg(test)]
mod tests {
    use super::slot_master;
    use redis::Value;

    fn node(host: &str, port: i64) -> Value {
        Value::Array(vec![
            Value::BulkString(host.as_bytes().to_vec()),
            Value::Int(port),
            Value::BulkString(b"id".to_vec()),
        ])
    }

    #[test]
    fn the_master_of_the_range_holding_the_slot() {
        let slots = Value::Array(vec![
            Value::Array(vec![
                Value::Int(0),
                Value::Int(5460),
                node("127.0.0.1", 7000),
                node("127.0.0.1", 7003),
            ]),
            Value::Array(vec![
                Value::Int(5461),
                Value::Int(16383),
                node("10.0.0.2", 7001),
            ]),
        ]);
        assert_eq!(
            slot_master(slots.clone(), 5460).unwrap(),
            ("127.0.0.1".to_string(), 7000)
        );
        assert_eq!(
            slot_master(slots, 9000).unwrap(),
            ("10.0.0.2".to_string(), 7001)
        );
        let partial = Value::Array(vec![Value::Array(vec![
            Value::Int(0),
            Value::Int(10),
            node("", 7000),
        ])]);
        assert!(slot_master(partial.clone(), 5).is_err());
        assert!(slot_master(partial, 11).is_err());
    }
}
