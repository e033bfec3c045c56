//! `EtcdStore`: the connection, the request helper, and the `Store` impl that dispatches to
//! the per-operation modules.

use crate::config::EtcdConfig;
use crate::error::{map_error, request_not_sent};
use crate::namespace::Namespace;
use etcd_client::{Client, ConnectOptions, KvClient, LeaseClient, WatchClient};
use kv_core::{
    Capabilities, Entry, Error, ErrorKind, LeaseGrant, LeaseId, LeaseInfo, PutOptions, PutResult,
    RangeOptions, RangeResult, Result, Retention, Store, Support, Txn, TxnResponse, WatchOptions,
    WatchStream,
};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The kv-core store contract on etcd.
///
/// Transactions are etcd transactions, leases are etcd leases, watches are etcd watches with
/// previous values that reconnect and resume after a lost connection; sets, maps and lists use
/// kv-core's emulation layout inside one etcd transaction. Cloning is cheap and shares the
/// connection.
#[derive(Clone)]
pub struct EtcdStore {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) kv: KvClient,
    pub(crate) lease: LeaseClient,
    pub(crate) watch: WatchClient,
    pub(crate) ns: Namespace,
    pub(crate) caps: Capabilities,
    pub(crate) config: EtcdConfig,
}

impl std::fmt::Debug for EtcdStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdStore")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl EtcdStore {
    /// Connects to the cluster described by `config` (and authenticates, when a user is set).
    ///
    /// # Errors
    /// `Config` for an invalid config; `Unavailable` when no endpoint answers;
    /// `Unauthorized` for bad credentials.
    pub async fn connect(config: EtcdConfig) -> Result<Self> {
        config.validate()?;
        let mut opts = ConnectOptions::new()
            .with_connect_timeout(config.connect_timeout())
            .with_keep_alive(Duration::from_secs(5), config.request_timeout())
            .with_keep_alive_while_idle(true)
            .with_require_leader(true);
        if let Some(user) = &config.user {
            // etcd's simple tokens expire after 5 idle minutes: authenticate again when they do.
            opts = opts
                .with_user(user.clone(), config.password.clone().unwrap_or_default())
                .with_auto_token_refresh(true);
        }
        #[cfg(feature = "tls")]
        if let Some(tls) = &config.tls {
            opts = opts.with_tls(crate::tls::options(tls)?);
        }
        let connect = Client::connect(&config.endpoints, Some(opts));
        let client = tokio::time::timeout(config.connect_timeout() * 2, connect)
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
            ttl_granularity: Duration::from_secs(1),
            watch_retention: Retention::UntilCompacted,
            txn: Support::Native,
            leases: Support::Native,
            watch: Support::Native,
            collections: Support::Emulated,
            persistent: true,
            foreign_writes: kv_core::ForeignWrites::Immediate,
        };
        // etcd's own client accepts responses up to 2 GiB: a large range, or the events of one
        // large transaction (never split across watch responses), must not fail on the
        // client's default 4 MiB limit.
        let max_message = i32::MAX as usize;
        let store = EtcdStore {
            inner: Arc::new(Inner {
                kv: client.kv_client().max_decoding_message_size(max_message),
                lease: client.lease_client(),
                watch: client.watch_client().max_decoding_message_size(max_message),
                ns: Namespace::new(config.namespace.clone().unwrap_or_default()),
                caps,
                config,
            }),
        };
        // A first request proves that a member answers (connecting is lazy).
        store.revision().await?;
        Ok(store)
    }

    /// Connects from the URL form `etcd://host1:2379,host2:2379?namespace=...`
    /// (see [`EtcdConfig::from_url`]).
    ///
    /// # Errors
    /// As [`EtcdConfig::from_url`] and [`EtcdStore::connect`].
    pub async fn from_url(url: &str) -> Result<Self> {
        Self::connect(EtcdConfig::from_url(url)?).await
    }

    /// The config the store was connected with.
    pub fn config(&self) -> &EtcdConfig {
        &self.inner.config
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
        let cfg = &self.inner.config;
        let mut attempt = 0u32;
        loop {
            let err = match tokio::time::timeout(cfg.request_timeout(), f()).await {
                Ok(Ok(v)) => return Ok(v),
                Ok(Err(e)) => e,
                Err(_) => {
                    return Err(Error::new(
                        ErrorKind::Timeout,
                        "etcd did not answer within the request timeout",
                    )
                    .with_context("op", op)
                    .with_context("timeout_ms", cfg.request_timeout_ms));
                }
            };
            let safe = idempotent || request_not_sent(&err);
            let err = map_error(op, err);
            if !(err.is_retryable() && safe && attempt < cfg.retries) {
                return Err(err);
            }
            tracing::debug!(op, attempt, error = %err, "retrying etcd request");
            tokio::time::sleep(backoff(attempt)).await;
            attempt += 1;
        }
    }
}

/// Exponential backoff between retries: 25 ms doubling up to 1 s.
pub(crate) fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(25u64 << attempt.min(6)).min(Duration::from_secs(1))
}

#[kv_core::async_trait]
impl Store for EtcdStore {
    fn capabilities(&self) -> &Capabilities {
        &self.inner.caps
    }

    async fn revision(&self) -> Result<i64> {
        crate::range::revision(self).await
    }

    async fn range(&self, opts: RangeOptions) -> Result<RangeResult> {
        crate::range::range(self, opts).await
    }

    async fn get(&self, key: &[u8]) -> Result<Option<Entry>> {
        crate::range::get(self, key).await
    }

    async fn put(&self, key: &[u8], value: &[u8], opts: PutOptions) -> Result<PutResult> {
        crate::txn::put(self, key, value, opts).await
    }

    async fn txn(&self, txn: Txn) -> Result<TxnResponse> {
        crate::txn::txn(self, txn).await
    }

    async fn lease_grant(&self, ttl: Duration) -> Result<LeaseGrant> {
        crate::lease::grant(self, ttl).await
    }

    async fn lease_keep_alive(&self, id: LeaseId) -> Result<Duration> {
        crate::lease::keep_alive(self, id).await
    }

    async fn lease_revoke(&self, id: LeaseId) -> Result<()> {
        crate::lease::revoke(self, id).await
    }

    async fn lease_time_to_live(&self, id: LeaseId) -> Result<LeaseInfo> {
        crate::lease::time_to_live(self, id).await
    }

    async fn watch(&self, opts: WatchOptions) -> Result<WatchStream> {
        crate::watch::watch(self, opts).await
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        crate::range::compact(self, revision).await
    }
}
