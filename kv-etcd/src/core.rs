//! `Core`: the state every operation needs (the etcd clients, the namespace, the capabilities
//! and the config), and the request helpers every operation file uses: the retrying
//! [`Core::call`], [`header_revision`], [`Core::compact_revision`], the
//! [`Namespace`] that confines keys to the store's root and converts etcd's key-values, and
//! the collection stamps (see [`stamp_key`]).

pub(crate) mod collections;
pub(crate) mod plan;

use crate::config::EtcdConfig;
use crate::error::{map_error, request_not_sent};
use etcd_client::{
    Client, ClusterClient, ConnectOptions, KeyValue, KvClient, LeaseClient, MaintenanceClient,
    WatchClient, WatchOptions as EtcdWatchOptions,
};
use keyplane_contract::raw::layout;
use keyplane_contract::raw::prefix_end;
use keyplane_contract::retry::Backoff;
use keyplane_contract::{
    Capabilities, CollectionKind, Entry, Error, ErrorKind, LeaseId, Result, Retention, Support,
};
use std::future::Future;
use std::time::Duration;

/// The connection to etcd and what every operation needs, shared by the clones of a store.
pub(crate) struct Core {
    pub(crate) kv: KvClient,
    pub(crate) lease: LeaseClient,
    pub(crate) watch: WatchClient,
    /// For the server's status (`kvctl status`).
    pub(crate) maintenance: MaintenanceClient,
    /// For the member list (`kvctl status`).
    pub(crate) cluster: ClusterClient,
    pub(crate) ns: Namespace,
    pub(crate) caps: Capabilities,
    pub(crate) config: EtcdConfig,
}

impl Core {
    /// Connects to the cluster described by `config` (and authenticates, when a user is set).
    /// Connecting is lazy: no member has necessarily answered yet.
    ///
    /// # Errors
    /// `Config` for an invalid config; `Unavailable` when no endpoint answers;
    /// `Unauthorized` for bad credentials.
    pub(crate) async fn connect(config: EtcdConfig) -> Result<Self> {
        config.validate()?;
        let mut opts = ConnectOptions::new()
            .with_connect_timeout(config.connect_timeout)
            .with_keep_alive(Duration::from_secs(5), config.request_timeout)
            .with_keep_alive_while_idle(true)
            .with_require_leader(true);
        if let Some(user) = &config.username {
            // etcd's simple tokens expire after 5 idle minutes: authenticate again when they do.
            opts = opts
                .with_user(user.clone(), config.password.clone().unwrap_or_default())
                .with_auto_token_refresh(true);
        }
        #[cfg(feature = "tls")]
        if let Some(tls) = &config.tls {
            opts = opts.with_tls(crate::config::tls_options(tls)?);
        }
        let connect = Client::connect(&config.endpoints, Some(opts));
        let client = tokio::time::timeout(config.connect_timeout * 2, connect)
            .await
            .map_err(|_| {
                Error::new(ErrorKind::Unavailable, "no etcd endpoint answered in time")
                    .with_context("endpoints", config.endpoints.join(","))
            })?
            .map_err(|e| map_error("connect", e))?;
        let caps = Capabilities {
            backend: "etcd",
            max_txn_ops: config.max_txn_ops,
            max_value_bytes: config.max_value_bytes,
            max_key_bytes: keyplane_contract::raw::MAX_KEY_LEN,
            ttl_granularity: Duration::from_secs(1),
            history_retention: Retention::UntilCompacted,
            txn: Support::Native,
            leases: Support::Native,
            watch: Support::Native,
            collections: Support::Emulated,
            persistent: true,
            foreign_writes: keyplane_contract::ForeignWrites::Immediate,
            sharding: keyplane_contract::Sharding::Unsharded,
        };
        // etcd's own client accepts responses up to 2 GiB: a large range, or the events of one
        // large transaction (never split across watch responses), must not fail on the
        // client's default 4 MiB limit.
        let max_message = i32::MAX as usize;
        Ok(Core {
            kv: client.kv_client().max_decoding_message_size(max_message),
            lease: client.lease_client(),
            watch: client.watch_client().max_decoding_message_size(max_message),
            maintenance: client.maintenance_client(),
            cluster: client.cluster_client(),
            ns: Namespace::new(config.namespace.clone().unwrap_or_default()),
            caps,
            config,
        })
    }

    /// Runs one unary request with the request timeout, retrying (with backoff) while no
    /// member can be reached. Reads (`idempotent`) are retried on any transient failure;
    /// writes only when the request provably never left this process, so an acknowledged
    /// outcome is never applied twice.
    pub(crate) async fn call<T, F, Fut>(
        &self,
        op: &'static str,
        idempotent: bool,
        f: F,
    ) -> Result<T>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = std::result::Result<T, etcd_client::Error>>,
    {
        let cfg = &self.config;
        let policy = Backoff::requests().max_attempts(cfg.retries.saturating_add(1));
        let mut attempts = policy.start_at_failure();
        loop {
            let err = match tokio::time::timeout(cfg.request_timeout, f()).await {
                Ok(Ok(v)) => return Ok(v),
                Ok(Err(e)) => e,
                Err(_) => {
                    return Err(Error::new(
                        ErrorKind::Timeout,
                        "etcd did not answer within the request timeout",
                    )
                    .with_context("op", op)
                    .with_context("timeout_ms", cfg.request_timeout.as_millis()));
                }
            };
            let safe = idempotent || request_not_sent(&err);
            let err = map_error(op, err);
            if !(err.is_retryable() && safe) {
                return Err(err);
            }
            let Some(delay) = attempts.next_delay() else {
                return Err(err);
            };
            let attempt = attempts.failed() - 1;
            tracing::debug!(op, attempt, error = %err, "retrying etcd request");
            tokio::time::sleep(delay).await;
        }
    }

    /// The oldest revision etcd still retains, learned by watching from revision 1 (etcd
    /// answers a watch on compacted history with the compact revision).
    pub(crate) async fn compact_revision(&self) -> Result<i64> {
        let key = self.ns.key(&[0]);
        let mut client = self.watch.clone();
        let probe = async {
            let mut stream = client
                .watch(key, Some(EtcdWatchOptions::new().with_start_revision(1)))
                .await?;
            while let Some(resp) = stream.message().await? {
                if resp.compact_revision() > 0 || resp.canceled() {
                    return Ok(resp.compact_revision());
                }
                if !resp.created() {
                    break;
                }
            }
            Ok(1)
        };
        tokio::time::timeout(self.config.request_timeout, probe)
            .await
            .map_err(|_| Error::new(ErrorKind::Timeout, "etcd did not answer the watch probe"))?
            .map_err(|e| map_error("watch", e))
    }
}

/// The revision of a response header (etcd always sends one).
pub(crate) fn header_revision(header: Option<&etcd_client::ResponseHeader>) -> Result<i64> {
    header
        .map(|h| h.revision())
        .ok_or_else(|| Error::new(ErrorKind::Backend, "etcd response without a header"))
}

/// A root prepended to every key sent to etcd and stripped from every key received.
///
/// The empty root confines nothing. Because user keys and ranges are validated before they are
/// prefixed, a namespaced store can neither name nor range over a key outside its root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Namespace(Vec<u8>);

impl Namespace {
    pub(crate) fn new(root: impl Into<Vec<u8>>) -> Self {
        Namespace(root.into())
    }

    /// The physical key of `key`.
    pub(crate) fn key(&self, key: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.0.len() + key.len());
        out.extend_from_slice(&self.0);
        out.extend_from_slice(key);
        out
    }

    /// The physical `(key, range_end)` of `[start, end)`; `end: None` is the end of the root
    /// (etcd's `"\0"`, meaning "to the end of the keyspace", when there is no root).
    pub(crate) fn range(&self, start: &[u8], end: Option<&[u8]>) -> (Vec<u8>, Vec<u8>) {
        let end = match end {
            Some(end) => self.key(end),
            None => prefix_end(&self.0).unwrap_or_else(|| vec![0]),
        };
        (self.key(start), end)
    }

    /// The physical `(key, range_end)` of every key starting with `prefix`.
    pub(crate) fn prefix(&self, prefix: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let start = self.key(prefix);
        let end = prefix_end(&start).unwrap_or_else(|| vec![0]);
        (start, end)
    }

    /// The key as the caller knows it, or `None` when it lies outside the root.
    pub(crate) fn strip<'a>(&self, physical: &'a [u8]) -> Option<&'a [u8]> {
        physical.strip_prefix(self.0.as_slice())
    }

    /// Converts an etcd key-value under the root into an [`Entry`] (`None` outside the root).
    pub(crate) fn entry(&self, kv: &KeyValue) -> Option<Entry> {
        Some(Entry {
            key: self.strip(kv.key())?.to_vec(),
            value: kv.value().to_vec(),
            create_revision: kv.create_revision(),
            mod_revision: kv.mod_revision(),
            version: kv.version(),
            lease: (kv.lease() != 0).then_some(LeaseId(kv.lease())),
        })
    }
}

/// The stamp key of the collection of `kind` at `key`.
///
/// Collection stamps: one reserved key per collection that every write to the collection
/// rewrites, so that a transaction can guard "this collection is unchanged since revision R"
/// with a single compare, however many members it read.
///
/// The stamp of the collection of `kind` at `K` is `\0 tag K` (keyplane-core's
/// [`kind_prefix`](keyplane_contract::raw::layout::kind_prefix) of `K`): it sorts just before the
/// members (`\0 tag K \0 ...`), is never inside another collection's members range, and lies
/// under `kind_prefix(P)` exactly when `K` starts with `P`, so prefix deletes remove it too.
/// Invariant: a collection has a stamp exactly when it has members. A transaction that leaves
/// a collection empty (its last members removed, or `delete`/`delete_prefix`) deletes the
/// stamp; one that changes it otherwise rewrites the stamp with the transaction's changes to
/// it as the value (keyplane-core's [`encode_changes`](keyplane_contract::raw::encode_changes)). So the
/// stamps' history is the collections' change log: a watch with collections reads it (a
/// written stamp's changes, or `Deleted` for a deleted stamp), in the same revision order as
/// the plain keys. Deleting the stamp of an emptied collection is safe for the guards: a
/// guard on an absent stamp passes only while the collection is absent, which is the state
/// the transaction planned on. Stamps written before they recorded changes are empty; a
/// watch reports nothing for them.
pub(crate) fn stamp_key(kind: CollectionKind, key: &[u8]) -> Vec<u8> {
    layout::kind_prefix(kind, key)
}

/// `[stamp, end)`: the stamp and every member of one collection, nothing else.
pub(crate) fn collection_span(kind: CollectionKind, key: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let start = stamp_key(kind, key);
    let mut end = start.clone();
    end.push(1);
    (start, end)
}

/// The stamp of the collection a physical member key belongs to; `None` for a key that is not
/// a member (a stamp itself, or not in the layout).
pub(crate) fn stamp_of_member(physical: &[u8]) -> Option<&[u8]> {
    if !layout::is_reserved(physical) || physical.len() < 3 {
        return None;
    }
    let nul = physical[2..].iter().position(|&b| b == 0)? + 2;
    Some(&physical[..nul])
}

/// The kind and key of the collection whose stamp is `physical`; `None` for a key that is
/// not a stamp (a member, or not in the layout).
pub(crate) fn collection_of_stamp(physical: &[u8]) -> Option<(CollectionKind, &[u8])> {
    let (kind, key) = layout::split_reserved(physical)?;
    (!key.contains(&0)).then_some((kind, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_stay_inside_the_root() {
        let ns = Namespace::new(b"t/1/".to_vec());
        assert_eq!(
            ns.range(b"\x01", None),
            (b"t/1/\x01".to_vec(), b"t/10".to_vec())
        );
        assert_eq!(ns.prefix(b"a"), (b"t/1/a".to_vec(), b"t/1/b".to_vec()));
        assert_eq!(ns.strip(b"t/1/a"), Some(&b"a"[..]));
        assert_eq!(ns.strip(b"t/2/a"), None);
        let root = Namespace::default();
        assert_eq!(root.range(b"\x01", None), (vec![1], vec![0]));
        assert_eq!(root.prefix(b"\xff"), (vec![0xff], vec![0]));
    }

    #[test]
    fn stamps_sit_before_their_members_only() {
        let member = layout::member_key(CollectionKind::Set, b"a/b", b"m");
        let stamp = stamp_key(CollectionKind::Set, b"a/b");
        assert_eq!(stamp_of_member(&member), Some(stamp.as_slice()));
        assert_eq!(stamp_of_member(&stamp), None);
        assert_eq!(
            collection_of_stamp(&stamp),
            Some((CollectionKind::Set, b"a/b".as_slice()))
        );
        assert_eq!(collection_of_stamp(&member), None);
        let (start, end) = collection_span(CollectionKind::Set, b"a/b");
        assert!(start <= stamp && stamp < end && member < end);
        let other = stamp_key(CollectionKind::Set, b"a/bc");
        assert!(other >= end);
        assert!(stamp.starts_with(&layout::kind_prefix(CollectionKind::Set, b"a/")));
    }
}
