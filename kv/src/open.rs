//! [`open()`]: any backend from a URL.

use keyplane_core::{Error, ErrorKind, Result, Store};
use std::sync::Arc;

/// The URL forms [`open()`] takes, for error messages.
const FORMS: &str = "mem://, redb://PATH, sled://PATH, etcd://HOST:PORT[,HOST:PORT...], \
                     redis://HOST:PORT/DB, rediss://..., redis+cluster://HOST:PORT[,HOST:PORT...], \
                     rediss+cluster://..., redis+sentinel://HOST:PORT[,HOST:PORT...]/MASTER[/DB] \
                     or rediss+sentinel://...";

/// A store opened from a URL, as its own type: for the backend-specific API (a Redis
/// reconcile, an etcd mirror) beside the contract. [`Backend::into_store`] gives the
/// `Arc<dyn Store>` that [`open()`] returns.
#[derive(Clone)]
#[non_exhaustive]
pub enum Backend {
    /// `mem://`
    Mem(keyplane_mem::MemStore),
    /// `redb://PATH`
    #[cfg(feature = "redb")]
    Redb(keyplane_redb::RedbStore),
    /// `sled://PATH`
    #[cfg(feature = "sled")]
    Sled(keyplane_sled::SledStore),
    /// `etcd://...`
    #[cfg(feature = "etcd")]
    Etcd(keyplane_etcd::EtcdStore),
    /// `redis://...`, `rediss://...`, `redis+cluster://...`, `rediss+cluster://...` or
    /// `redis+sentinel://...` or `rediss+sentinel://...`
    #[cfg(feature = "redis")]
    Redis(Arc<keyplane_redis::RedisStore>),
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Backend").field(&self.name()).finish()
    }
}

impl Backend {
    /// Opens the store of `url`: `mem://` (a new, empty in-process store), `redb://PATH` (a
    /// database file; it and its directories are created if missing), `sled://PATH` (the
    /// directory is created if missing), `etcd://HOST:PORT[,HOST:PORT...]`,
    /// `redis://HOST:PORT/DB`, `rediss://...` (with the `tls` feature),
    /// `redis+cluster://HOST:PORT[,HOST:PORT...]` (a Redis Cluster's seed nodes),
    /// `rediss+cluster://...` (over TLS, with the `tls` feature),
    /// `redis+sentinel://HOST:PORT[,HOST:PORT...]/MASTER[/DB]` (a master its sentinels name)
    /// or `rediss+sentinel://...` (over TLS, with the `tls` feature).
    ///
    /// Each takes its config's every field as a URL parameter (`?ca=...&cert=...&key=...`
    /// for TLS, `connect_timeout=2s`, `durability=buffered`, `wait_replicas=1`...): the
    /// config is built by the backend's `from_url` (`MemConfig`, `RedbConfig`, `SledConfig`, `EtcdConfig`,
    /// `RedisConfig`). The "URL parameters" table of this crate's README.md lists them all.
    ///
    /// # Errors
    /// `Config` for a URL of no known form, of a backend whose feature is not enabled, or
    /// with a parameter that is unknown (the message lists the known ones) or of the wrong
    /// form, before anything is opened; the backend's errors when it cannot be opened or
    /// reached.
    pub async fn open(url: &str) -> Result<Backend> {
        Backend::open_with(url, &OpenOptions::default()).await
    }

    /// [`Backend::open`] with options for the network backends.
    ///
    /// # Errors
    /// As [`Backend::open`].
    pub async fn open_with(url: &str, options: &OpenOptions) -> Result<Backend> {
        #[cfg(not(any(feature = "etcd", feature = "redis")))]
        let _ = options;
        let (scheme, _) = url
            .split_once("://")
            .ok_or_else(|| invalid(url, &format!("expected {FORMS}")))?;
        match scheme {
            "mem" => {
                let config = keyplane_mem::MemConfig::from_url(url).map_err(|e| reason(url, e))?;
                Ok(Backend::Mem(keyplane_mem::MemStore::open(config).await?))
            }
            #[cfg(feature = "redb")]
            "redb" => {
                let config =
                    keyplane_redb::RedbConfig::from_url(url).map_err(|e| reason(url, e))?;
                Ok(Backend::Redb(keyplane_redb::RedbStore::open(config).await?))
            }
            #[cfg(feature = "sled")]
            "sled" => {
                let config =
                    keyplane_sled::SledConfig::from_url(url).map_err(|e| reason(url, e))?;
                Ok(Backend::Sled(keyplane_sled::SledStore::open(config).await?))
            }
            #[cfg(feature = "etcd")]
            "etcd" => {
                let config = etcd_config(url, options)?;
                Ok(Backend::Etcd(keyplane_etcd::EtcdStore::open(config).await?))
            }
            #[cfg(feature = "redis")]
            "redis" | "rediss" | "redis+cluster" | "rediss+cluster" | "redis+sentinel"
            | "rediss+sentinel" => {
                let config = redis_config(url, options)?;
                let store = keyplane_redis::RedisStore::open(config).await?;
                Ok(Backend::Redis(Arc::new(store)))
            }
            #[cfg(not(feature = "redb"))]
            "redb" => Err(not_built(url, "redb")),
            #[cfg(not(feature = "sled"))]
            "sled" => Err(not_built(url, "sled")),
            #[cfg(not(feature = "etcd"))]
            "etcd" => Err(not_built(url, "etcd")),
            #[cfg(not(feature = "redis"))]
            "redis" | "rediss" | "redis+cluster" | "rediss+cluster" | "redis+sentinel"
            | "rediss+sentinel" => Err(not_built(url, "redis")),
            other => Err(invalid(
                url,
                &format!("unknown scheme {other:?}; expected {FORMS}"),
            )),
        }
    }

    /// The backend's name: `mem`, `redb`, `sled`, `etcd` or `redis`.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Mem(_) => "mem",
            #[cfg(feature = "redb")]
            Backend::Redb(_) => "redb",
            #[cfg(feature = "sled")]
            Backend::Sled(_) => "sled",
            #[cfg(feature = "etcd")]
            Backend::Etcd(_) => "etcd",
            #[cfg(feature = "redis")]
            Backend::Redis(_) => "redis",
        }
    }

    /// The store behind the contract, to swap backends freely.
    pub fn into_store(self) -> Arc<dyn Store> {
        match self {
            Backend::Mem(store) => Arc::new(store),
            #[cfg(feature = "redb")]
            Backend::Redb(store) => Arc::new(store),
            #[cfg(feature = "sled")]
            Backend::Sled(store) => Arc::new(store),
            #[cfg(feature = "etcd")]
            Backend::Etcd(store) => Arc::new(store),
            #[cfg(feature = "redis")]
            Backend::Redis(store) => store,
        }
    }
}

/// Opens the store of `url` (see [`Backend::open`] for the forms, and the "URL parameters"
/// table of this crate's README.md for every option a URL takes) behind the contract.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane::Result<()> {
/// let store = keyplane::open("mem://").await?;
/// store.put(b"app/config", b"v1", keyplane::PutOptions::default()).await?;
/// let err = keyplane::open("ftp://example").await.err().expect("no such scheme");
/// assert_eq!(err.kind(), keyplane::ErrorKind::Config);
/// # Ok(()) }
/// ```
///
/// # Errors
/// As [`Backend::open`].
pub async fn open(url: &str) -> Result<Arc<dyn Store>> {
    Ok(Backend::open(url).await?.into_store())
}

/// Options of [`Backend::open_with`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OpenOptions {
    /// How long a network backend may take to connect (`None`: the backend's default; the
    /// URL's own `connect_timeout` parameter wins).
    pub connect_timeout: Option<std::time::Duration>,
}

impl OpenOptions {
    /// Sets [`OpenOptions::connect_timeout`].
    pub fn connect_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }
}

/// The config of an `etcd://` URL: the options' connect timeout, unless the URL gives one.
#[cfg(feature = "etcd")]
fn etcd_config(url: &str, options: &OpenOptions) -> Result<keyplane_etcd::EtcdConfig> {
    let mut config = keyplane_etcd::EtcdConfig::default();
    if let Some(timeout) = options.connect_timeout {
        config.connect_timeout = timeout;
    }
    config.with_url(url).map_err(|e| reason(url, e))
}

/// The config of a Redis URL: the options' connect timeout, unless the URL gives one.
#[cfg(feature = "redis")]
fn redis_config(url: &str, options: &OpenOptions) -> Result<keyplane_redis::RedisConfig> {
    let mut config = keyplane_redis::RedisConfig::default();
    if let Some(timeout) = options.connect_timeout {
        config.connect_timeout = timeout;
    }
    config.with_url(url).map_err(|e| reason(url, e))
}

/// The error for a scheme whose backend this build leaves out.
#[cfg(any(
    not(feature = "redb"),
    not(feature = "sled"),
    not(feature = "etcd"),
    not(feature = "redis")
))]
fn not_built(url: &str, feature: &str) -> Error {
    invalid(
        url,
        &format!("this build has no {feature} backend: enable the `{feature}` feature of keyplane"),
    )
}

/// The error for a URL whose backend refused it: its message and context, with the URL (its
/// passwords hidden) in front.
fn reason(url: &str, error: Error) -> Error {
    let mut shown = invalid(url, error.message());
    for (name, value) in error.context() {
        if *name != "url" {
            shown = shown.with_context(name, value);
        }
    }
    shown
}

/// The error for a URL that does not open; the URL is shown with its passwords hidden.
fn invalid(url: &str, why: &str) -> Error {
    Error::new(
        ErrorKind::Config,
        format!(
            "invalid store URL {:?}: {why}",
            keyplane_core::raw::redact_url(url)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The options' connect timeout applies unless the URL gives one, which wins.
    #[cfg(all(feature = "etcd", feature = "redis"))]
    #[test]
    fn a_url_parameter_wins_over_the_open_options() {
        use std::time::Duration;
        let options = OpenOptions::default().connect_timeout(Duration::from_secs(7));
        let etcd = |url| etcd_config(url, &options).unwrap().connect_timeout;
        assert_eq!(etcd("etcd://h:2379"), Duration::from_secs(7));
        assert_eq!(
            etcd("etcd://h:2379?connect_timeout=2s"),
            Duration::from_secs(2)
        );
        assert_eq!(
            etcd("etcd://h:2379?connect_timeout=300ms"),
            Duration::from_millis(300)
        );
        let redis = |url| redis_config(url, &options).unwrap().connect_timeout;
        assert_eq!(redis("redis://h:6379"), Duration::from_secs(7));
        assert_eq!(
            redis("redis://h:6379?connect_timeout=2s"),
            Duration::from_secs(2)
        );
        let defaults = OpenOptions::default();
        assert_eq!(
            etcd_config("etcd://h:2379", &defaults)
                .unwrap()
                .connect_timeout,
            Duration::from_secs(5)
        );
    }

    #[tokio::test]
    async fn bad_urls_never_show_their_password() {
        let password = "Sup3rS3cretPw";
        for url in [
            "ftp://u:PW@example:21",
            "mem://u:PW@x",
            "redis:/:PW@127.0.0.1:1",
            "redis//:PW@127.0.0.1:1",
            "etcd://u:PW@127.0.0.1:2379?nope=1",
            "etcd://u:PW@127.0.0.1:2379/path",
            "redis://:PW@127.0.0.1:1/not-a-db",
        ] {
            let url = url.replace("PW", password);
            let Err(err) = Backend::open(&url).await else {
                panic!("{url} opens");
            };
            let shown = format!("{} {err:?}", err.chain());
            assert!(!shown.contains(password), "{url}: {shown}");
        }
    }
}
