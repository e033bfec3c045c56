//! `RedisConfig`: where the Redis server is and how the store lays out its data there.

mod sentinel;
mod url;

pub(crate) use sentinel::SentinelTarget;

use keyplane_contract::raw::redact_secret;
use keyplane_contract::tls::TlsConfig;
use keyplane_contract::{Error, ErrorKind, Result};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// How to reach Redis and how [`RedisStore`](crate::RedisStore) uses it.
///
/// Every field has a default, so a config file needs only what differs:
///
/// ```
/// let config: keyplane_redis::RedisConfig =
///     serde_json::from_str(r#"{ "url": "redis://10.0.0.5:6379", "database": 2 }"#).unwrap();
/// assert_eq!(config.internal_prefix, "__kv:");
/// assert_eq!(config.database, Some(2));
/// ```
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct RedisConfig {
    /// `redis://host:port[/db]`, `rediss://` for TLS (crate feature `tls`), or
    /// `redis+cluster://[user:password@]host:port,host:port...` for a Redis Cluster (its seed
    /// nodes; see the crate documentation for what the store does on a cluster), and
    /// `rediss+cluster://` for one over TLS, and
    /// `redis+sentinel://[user:password@]host:port[,host:port...]/MASTER_NAME[/DB]` for the
    /// master that these sentinels name (the store follows its failovers; the credentials
    /// are the master's, `?sentinel_username=U&sentinel_password=P` the sentinels'), and
    /// `rediss+sentinel://` for TLS to the sentinels and the master. Default
    /// `redis://127.0.0.1:6379`.
    ///
    /// In every scheme the user, the password and the `sentinel_*` values are
    /// percent-decoded: a password holding `/`, `?`, `#`, `%`, `@`, `&` or `,` is written
    /// `%2F`, `%3F`, `%23`, `%25`, `%40`, `%26`, `%2C` (a bad encoding is refused).
    pub url: String,
    /// ACL user name; overrides one given in the URL.
    pub username: Option<String>,
    /// Password (with or without an ACL user); overrides one given in the URL. Never printed.
    pub password: Option<String>,
    /// Database index; overrides one given in the URL.
    pub database: Option<i64>,
    /// The ACL user the store authenticates as with the sentinels of a
    /// `redis+sentinel://` URL, when they require one (the URL's credentials are the
    /// master's); overrides the URL's `?sentinel_username=`. It needs only
    /// [`SENTINEL_COMMANDS`](crate::SENTINEL_COMMANDS) (see
    /// [`RedisConfig::sentinel_acl_rules`]).
    pub sentinel_username: Option<String>,
    /// The sentinels' password; overrides the URL's `?sentinel_password=`. Never printed.
    pub sentinel_password: Option<String>,
    /// TLS settings for a `rediss://`, `rediss+cluster://` or `rediss+sentinel://` URL
    /// (feature `tls`; under Sentinel, for the sentinels and the master alike): the CA to
    /// trust instead of the system's roots, and a client certificate for servers with
    /// `tls-auth-clients`.
    /// Default none (the system's roots, no client certificate).
    /// A build without the `tls` feature refuses a config that sets it.
    pub tls: Option<TlsConfig>,
    /// How long to wait for a connection. Default 5 s. In a config file or a URL, a
    /// duration with its unit (`"2s"`, `"500ms"`).
    #[serde(with = "keyplane_contract::raw::duration_text")]
    pub connect_timeout: Duration,
    /// Time allowed for one request (sending it and reading its reply; not for watch
    /// streams, whose blocking reads add their own wait), in ms. Default 5000. The same name
    /// as etcd's.
    #[serde(with = "keyplane_contract::raw::duration_text")]
    pub request_timeout: Duration,
    /// The prefix of every key the store keeps for itself (revision counter, metadata,
    /// index, event log, leases). User keys starting with it are rejected as `InvalidKey`.
    /// Default `__kv:`.
    pub internal_prefix: String,
    /// How many revisions of history the event log keeps, for watches that resume from an
    /// earlier revision and reads at a past revision. Default 10 000, as the sled and
    /// in-memory stores. Each retained revision holds its events, values included, in Redis
    /// memory: about 180 bytes for a put of a 100-byte value, so 1.8 MB at the default. A
    /// watch that falls further behind gets `Compacted` and lists again.
    pub history_retention: u64,
    /// Most compares, and most ops per branch, in one transaction. Default 128.
    pub max_txn_ops: usize,
    /// Most keys (plain and collections) one transaction's prefix deletes may remove
    /// together. A prefix delete is one Lua script, and Redis serves no other client while a
    /// script runs (about 12 µs per key deleted); a larger one is refused with
    /// `TxnTooLarge` before anything is written, so that no delete blocks the server near
    /// its script time limit (`busy-reply-threshold`, 5 s by default).
    /// `delete_prefix_in_batches` (keyplane-core's `recipes`) removes a
    /// larger prefix in atomic batches. Default 50 000 (about 0.6 s of server time).
    ///
    /// It bounds the writes that concurrent callers' calls share too (the group commit): a
    /// shared call carries at most this much work, counting a transaction with a prefix
    /// delete as this bound and any other write as its compares and ops, so that no call of
    /// several writes holds the server longer than one transaction may.
    pub max_prefix_delete_keys: u64,
    /// How many times in a row a watch retries a lost connection before it reports
    /// `Unavailable`. Default 20 (backing off from 50 ms to 2 s).
    pub watch_retries: u32,
    /// Whether the server keeps acknowledged writes across restarts (AOF with
    /// `appendfsync always`); reported in the store's capabilities. Default `false`.
    pub persistent: bool,
    /// The key prefixes other programs write, which the background reconciler keeps in the
    /// store's index and event log (`""` covers the whole database). Default none: another
    /// program's keys are still read, compared, written and deleted as they are in Redis,
    /// but reach ranges and watches only through [`RedisStore::reconcile`](crate::RedisStore::reconcile).
    pub reconcile_roots: Vec<String>,
    /// How often the reconciler scans the roots in full; zero (`0s`) for never
    /// (notifications only). Default 60 s.
    #[serde(with = "keyplane_contract::raw::duration_text")]
    pub reconcile_interval: Duration,
    /// Whether the reconciler follows Redis keyspace notifications, turning them on
    /// (`CONFIG SET notify-keyspace-events`) when the server allows it. Default `true`.
    pub keyspace_notifications: bool,
    /// The `COUNT` of each `SCAN` step of a reconcile pass. Default 1000.
    pub reconcile_scan_count: u32,
    /// Whether the store runs its Lua scripts as the functions of one library (Redis 7:
    /// `FUNCTION LOAD` once, then `FCALL`), which saves the server about 9 µs per operation
    /// against running each script by `EVALSHA`. The library is named `keyplane_` and a
    /// version (see [`function_library`](crate::function_library)); the store loads it when
    /// it is missing, and runs its scripts by `EVALSHA` when the server has no functions or
    /// the user may not call the library (or load it while it is missing). Default `true`.
    pub functions: bool,
    /// How many replicas must acknowledge each write before the store reports it done: after
    /// every writing script the store sends `WAIT wait_replicas wait_timeout` to the
    /// master that ran it. Redis replicates asynchronously, so without it a write
    /// acknowledged just before its master dies can be lost in the failover; with it, such a
    /// write is on that many replicas, and a replica that takes over holds it. A write that
    /// reached fewer replicas in time is applied on the master and fails with `Timeout`
    /// (it may yet be lost). `WAIT` holds the connection it is sent on, which the store's
    /// operations share, for as long as the replicas take. Default 0 (no wait).
    pub wait_replicas: u32,
    /// How long a write waits for `wait_replicas` replicas. At least 1 ms (0 would wait
    /// forever) and less than `request_timeout`. Default 1 s.
    #[serde(with = "keyplane_contract::raw::duration_text")]
    pub wait_timeout: Duration,
}

impl Default for RedisConfig {
    fn default() -> Self {
        RedisConfig {
            url: "redis://127.0.0.1:6379".to_owned(),
            username: None,
            password: None,
            database: None,
            sentinel_username: None,
            sentinel_password: None,
            tls: None,
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(5),
            internal_prefix: "__kv:".to_owned(),
            history_retention: 10_000,
            max_txn_ops: 128,
            max_prefix_delete_keys: 50_000,
            watch_retries: 20,
            persistent: false,
            reconcile_roots: Vec::new(),
            reconcile_interval: Duration::from_secs(60),
            keyspace_notifications: true,
            reconcile_scan_count: 1000,
            functions: true,
            wait_replicas: 0,
            wait_timeout: Duration::from_secs(1),
        }
    }
}

impl RedisConfig {
    /// The default configuration with another URL.
    pub fn new(url: impl Into<String>) -> Self {
        RedisConfig {
            url: url.into(),
            ..Self::default()
        }
    }

    /// The interval of the reconciler's periodic full pass, if it runs one (roots to
    /// reconcile and a non-zero [`reconcile_interval`](Self::reconcile_interval)).
    pub fn reconcile_period(&self) -> Option<Duration> {
        (!self.reconcile_roots.is_empty() && !self.reconcile_interval.is_zero())
            .then_some(self.reconcile_interval)
    }

    /// Checks the configuration and resolves the URL and credentials.
    ///
    /// # Errors
    /// [`ErrorKind::Config`] for a URL that does not parse or has another scheme, a
    /// `rediss://` URL without the `tls` feature, an empty internal prefix, or a zero
    /// retention or transaction size.
    pub(crate) fn connection_info(&self) -> Result<redis::ConnectionInfo> {
        use redis::IntoConnectionInfo;
        let config_error = |message: String| Error::new(ErrorKind::Config, message);
        if !(self.url.starts_with("redis://") || self.url.starts_with("rediss://")) {
            return Err(config_error(format!(
                "a Redis URL starts with redis://, rediss://, redis+cluster:// or redis+sentinel://, got {:?}",
                keyplane_contract::raw::redact_url(&self.url)
            )));
        }
        if self.url.starts_with("rediss://") && !cfg!(feature = "tls") {
            return Err(config_error(
                "rediss:// needs keyplane-redis to be built with the `tls` feature".to_owned(),
            ));
        }
        if self.tls.is_some() && !self.url.starts_with("rediss://") {
            return Err(config_error("TLS settings need a rediss:// URL".to_owned()));
        }
        self.check()?;
        // The client decodes the URL's credentials leniently (`%zz` stays as it is): they
        // are decoded first as every Redis URL's are, which refuses a bad encoding, and
        // replace the client's.
        let rest = self
            .url
            .split_once("://")
            .map_or(self.url.as_str(), |(_, rest)| rest);
        let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
        let (username, password, _) = split_credentials(authority)?;
        let info = self.url.as_str().into_connection_info().map_err(|e| {
            Error::new(ErrorKind::Config, "the Redis URL does not parse")
                .with_context("url", keyplane_contract::raw::redact_url(&self.url))
                .with_source(e)
        })?;
        let mut settings = info.redis_settings().clone();
        if let Some(user) = username {
            settings = settings.set_username(user);
        }
        if let Some(password) = password {
            settings = settings.set_password(password);
        }
        if let Some(user) = &self.username {
            settings = settings.set_username(user);
        }
        if let Some(password) = &self.password {
            settings = settings.set_password(password);
        }
        if let Some(db) = self.database {
            settings = settings.set_db(db);
        }
        Ok(info.set_redis_settings(settings))
    }

    /// Checks the configuration and its URL as [`RedisStore::open`](crate::RedisStore::open)
    /// does before it connects, without connecting.
    ///
    /// ```
    /// use keyplane_redis::RedisConfig;
    /// assert!(RedisConfig::new("redis://127.0.0.1:6379/0").validate().is_ok());
    /// assert!(RedisConfig::new("redis+cluster://10.0.0.1:7000,10.0.0.2:7000").validate().is_ok());
    /// assert!(RedisConfig::new("redis://127.0.0.1:notaport").validate().is_err());
    /// ```
    ///
    /// # Errors
    /// [`ErrorKind::Config`] for a URL that does not parse or another of the errors `connect`
    /// reports before it reaches a server.
    pub fn validate(&self) -> Result<()> {
        if self.is_cluster() {
            self.cluster_nodes().map(|_| ())
        } else if self.is_sentinel() {
            self.sentinel_target().map(|_| ())
        } else {
            self.connection_info().map(|_| ())
        }
    }

    /// Whether the URL names a Redis Cluster: `redis+cluster://` or `rediss+cluster://`.
    pub fn is_cluster(&self) -> bool {
        self.url.starts_with(CLUSTER_SCHEME) || self.url.starts_with(TLS_CLUSTER_SCHEME)
    }

    /// The seed nodes of a `redis+cluster://[user:password@]host:port,host:port...` URL (or
    /// `rediss+cluster://`, whose nodes speak TLS), and the credentials (the configuration's
    /// own override the URL's).
    ///
    /// # Errors
    /// [`ErrorKind::Config`] for a node that does not parse, a database other than 0 (a
    /// cluster has one), TLS without the `tls` feature or TLS settings without TLS, reconcile
    /// roots (the reconciler does not run on a cluster), or the checks of a single server's
    /// URL.
    pub(crate) fn cluster_nodes(
        &self,
    ) -> Result<(Vec<redis::ConnectionInfo>, Option<String>, Option<String>)> {
        use redis::IntoConnectionInfo;
        let config_error = |message: String| Error::new(ErrorKind::Config, message);
        let (rest, node_scheme) = match (
            self.url.strip_prefix(CLUSTER_SCHEME),
            self.url.strip_prefix(TLS_CLUSTER_SCHEME),
        ) {
            (Some(rest), _) => (rest, "redis"),
            (_, Some(rest)) => (rest, "rediss"),
            _ => return Err(config_error("not a redis+cluster:// URL".to_owned())),
        };
        self.check()?;
        if self.database.is_some_and(|db| db != 0) {
            return Err(config_error(
                "a Redis Cluster has database 0 only".to_owned(),
            ));
        }
        if node_scheme == "rediss" && !cfg!(feature = "tls") {
            return Err(config_error(
                "rediss+cluster:// needs keyplane-redis to be built with the `tls` feature"
                    .to_owned(),
            ));
        }
        if self.tls.is_some() && node_scheme != "rediss" {
            return Err(config_error(
                "TLS settings need a rediss+cluster:// URL".to_owned(),
            ));
        }
        if self.internal_prefix.contains(['{', '}']) {
            return Err(config_error(
                "on Redis Cluster the internal prefix must contain no brace (the store adds \
                 each group's hash tag to it)"
                    .to_owned(),
            ));
        }
        if !self.reconcile_roots.is_empty() {
            return Err(config_error(
                "the reconciler does not run on Redis Cluster: reconcile_roots must be empty"
                    .to_owned(),
            ));
        }
        let (username, password, hosts) = self.credentials_and_hosts(rest)?;
        let nodes = hosts
            .split(',')
            .map(|host| {
                let host = host.trim_end_matches('/');
                if host.is_empty() || host.contains('/') {
                    return Err(config_error(format!(
                        "a cluster node is host:port, got {host:?}"
                    )));
                }
                format!("{node_scheme}://{host}")
                    .into_connection_info()
                    .map_err(|e| {
                        Error::new(ErrorKind::Config, "a cluster node does not parse")
                            .with_context("node", host.to_owned())
                            .with_source(e)
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((nodes, username, password))
    }

    /// Splits the `[user[:password]@]hosts` part of a cluster or Sentinel URL into the
    /// username, the password (both percent-decoded) and the hosts; the configuration's own
    /// username and password override the URL's.
    ///
    /// # Errors
    /// [`ErrorKind::Config`] for credentials whose percent-encoding is bad.
    fn credentials_and_hosts<'a>(
        &self,
        authority: &'a str,
    ) -> Result<(Option<String>, Option<String>, &'a str)> {
        let (username, password, hosts) = split_credentials(authority)?;
        Ok((
            self.username.clone().or(username),
            self.password.clone().or(password),
            hosts,
        ))
    }

    /// The checks every URL shares: the internal prefix, the sizes, the reconcile roots, the
    /// TLS settings.
    fn check(&self) -> Result<()> {
        let config_error = |message: String| Error::new(ErrorKind::Config, message);
        if self.tls.as_ref().is_some_and(|tls| tls.domain.is_some()) {
            // Refused rather than ignored: a certificate check against another name than
            // the one configured would surprise at the first connection.
            return Err(config_error(
                "the Redis client checks the server certificate against the URL's host: \
                 connect by a name the certificate holds instead of setting tls.domain"
                    .to_owned(),
            ));
        }
        if self.internal_prefix.is_empty() || self.internal_prefix.contains('\0') {
            return Err(config_error(
                "the internal prefix must be non-empty and contain no NUL".to_owned(),
            ));
        }
        if self.history_retention == 0
            || self.max_txn_ops == 0
            || self.reconcile_scan_count == 0
            || self.max_prefix_delete_keys == 0
        {
            return Err(config_error(
                "history_retention, max_txn_ops, max_prefix_delete_keys and \
                 reconcile_scan_count must be at least 1"
                    .to_owned(),
            ));
        }
        if self.wait_replicas > 0
            && (self.wait_timeout.as_millis() == 0 || self.wait_timeout >= self.request_timeout)
        {
            return Err(config_error(
                "wait_timeout must be at least 1ms and less than request_timeout".to_owned(),
            ));
        }
        if let Some(root) = self
            .reconcile_roots
            .iter()
            .find(|root| root.starts_with(&self.internal_prefix))
        {
            return Err(config_error(format!(
                "the reconcile root {root:?} lies under the internal prefix"
            )));
        }
        Ok(())
    }
}

/// Splits the authority `[user[:password]@]hosts` of any Redis URL into its username and
/// password, each percent-decoded by [`decode_url_part`] (an empty one is none), and its
/// hosts. The credentials end at the authority's last `@`: one inside them is `%40`.
///
/// # Errors
/// [`ErrorKind::Config`] for credentials whose percent-encoding is bad.
fn split_credentials(authority: &str) -> Result<(Option<String>, Option<String>, &str)> {
    let Some((credentials, hosts)) = authority.rsplit_once('@') else {
        return Ok((None, None, authority));
    };
    let (user, password) = match credentials.split_once(':') {
        Some((user, password)) => (user, Some(password)),
        None => (credentials, None),
    };
    let decoded = |text: Option<&str>, what| {
        text.filter(|text| !text.is_empty())
            .map(|text| decode_url_part(text, what))
            .transpose()
    };
    Ok((
        decoded(Some(user), "username")?,
        decoded(password, "password")?,
        hosts,
    ))
}

/// Decodes the percent-encoding of one part of a Redis URL, its `what` (the username, the
/// password, a parameter's value): every scheme decodes its credentials and parameters with
/// it, so that one holding `/`, `?`, `#`, `%`, `@`, `&` or `,` is given as `%2F`, `%3F`,
/// `%23`, `%25`, `%40`, `%26`, `%2C`. `%XX` is the byte of hex value `XX`; every other
/// character stands for itself (`+` too: it is no space here).
///
/// # Errors
/// [`ErrorKind::Config`] for a `%` not followed by two hex digits, or bytes that are not
/// UTF-8 once decoded. The message names the part and never shows it: it may be a secret.
pub(crate) fn decode_url_part(text: &str, what: &str) -> Result<String> {
    keyplane_contract::raw::percent_decode(text).map_err(|why| {
        Error::new(
            ErrorKind::Config,
            format!("the {what} in the Redis URL {why}"),
        )
    })
}

/// The scheme of a Redis Cluster URL.
const CLUSTER_SCHEME: &str = "redis+cluster://";
/// The scheme of a Redis Cluster URL whose nodes speak TLS.
const TLS_CLUSTER_SCHEME: &str = "rediss+cluster://";

keyplane_contract::config_setters!(RedisConfig {
    set {
        connect_timeout: Duration,
        request_timeout: Duration,
        history_retention: u64,
        max_txn_ops: usize,
        max_prefix_delete_keys: u64,
        watch_retries: u32,
        persistent: bool,
        reconcile_roots: Vec<String>,
        reconcile_interval: Duration,
        keyspace_notifications: bool,
        reconcile_scan_count: u32,
        functions: bool,
        wait_replicas: u32,
        wait_timeout: Duration,
    }
    into { url: String, internal_prefix: String }
    some {
        username: String,
        password: String,
        database: i64,
        sentinel_username: String,
        sentinel_password: String,
        tls: TlsConfig,
    }
});

impl fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RedisConfig");
        d.field("url", &keyplane_contract::raw::redact_url(&self.url))
            .field("username", &self.username)
            .field("password", &redact_secret(self.password.as_ref()))
            .field("database", &self.database)
            .field("sentinel_username", &self.sentinel_username)
            .field(
                "sentinel_password",
                &redact_secret(self.sentinel_password.as_ref()),
            )
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("internal_prefix", &self.internal_prefix)
            .field("history_retention", &self.history_retention)
            .field("max_txn_ops", &self.max_txn_ops)
            .field("max_prefix_delete_keys", &self.max_prefix_delete_keys)
            .field("watch_retries", &self.watch_retries)
            .field("persistent", &self.persistent)
            .field("reconcile_roots", &self.reconcile_roots)
            .field("reconcile_interval", &self.reconcile_interval)
            .field("keyspace_notifications", &self.keyspace_notifications)
            .field("reconcile_scan_count", &self.reconcile_scan_count)
            .field("functions", &self.functions)
            .field("wait_replicas", &self.wait_replicas)
            .field("wait_timeout", &self.wait_timeout)
            .field("tls", &self.tls);
        d.finish()
    }
}

/// The certificates for redis-rs from `tls`.
///
/// # Errors
/// `Config` when a file cannot be read, or a certificate is given without its key.
#[cfg(feature = "tls")]
pub(crate) fn certificates(tls: &TlsConfig) -> Result<redis::TlsCertificates> {
    let pem = tls.read()?;
    Ok(redis::TlsCertificates {
        client_tls: pem
            .client_identity
            .map(|(client_cert, client_key)| redis::ClientTlsConfig {
                client_cert,
                client_key,
            }),
        root_cert: pem.ca_certificate,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn debug_hides_passwords() {
        let mut config = RedisConfig::new("redis://app:s3cret@10.0.0.1:6379/1");
        config.password = Some("hunter2".to_owned());
        let shown = format!("{config:?}");
        assert!(
            !shown.contains("s3cret") && !shown.contains("hunter2"),
            "{shown}"
        );
        assert!(shown.contains("app:***@10.0.0.1:6379/1"), "{shown}");
    }

    #[test]
    fn bad_urls_are_config_errors() {
        for url in ["http://localhost", "redis//x", "redis://[::1", ""] {
            let err = RedisConfig::new(url).connection_info().unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Config, "{url}");
        }
        let mut empty_prefix = RedisConfig::default();
        empty_prefix.internal_prefix.clear();
        assert_eq!(
            empty_prefix.connection_info().unwrap_err().kind(),
            ErrorKind::Config
        );
    }

    #[cfg(not(feature = "tls"))]
    #[test]
    fn tls_urls_need_the_tls_feature() {
        let err = RedisConfig::new("rediss://127.0.0.1:6380")
            .connection_info()
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config);
    }

    #[test]
    fn config_round_trips_through_serde() {
        let config: RedisConfig = serde_json::from_str(
            r#"{ "url": "redis://h:1/2", "username": "u", "password": "p",
                 "internal_prefix": "_i:", "history_retention": 10, "max_txn_ops": 64 }"#,
        )
        .unwrap();
        assert_eq!(config.internal_prefix, "_i:");
        assert_eq!(config.request_timeout, Duration::from_secs(5));
        let back: RedisConfig =
            serde_json::from_str(&serde_json::to_string(&config).unwrap()).unwrap();
        assert_eq!(back, config);
        assert!(serde_json::from_str::<RedisConfig>(r#"{ "uri": "x" }"#).is_err());
    }

    #[test]
    fn former_field_names_are_refused() {
        for old in [
            r#"{ "response_timeout_ms": 1 }"#,
            r#"{ "watch_retention": 7 }"#,
        ] {
            let err = serde_json::from_str::<RedisConfig>(old).unwrap_err();
            assert!(err.to_string().contains("unknown field"), "{old}: {err}");
        }
    }

    #[test]
    fn credentials_and_database_override_the_url() {
        let mut config = RedisConfig::new("redis://old:pw@127.0.0.1:6390/3");
        config.username = Some("app".to_owned());
        config.password = Some("new".to_owned());
        config.database = Some(5);
        let info = config.connection_info().unwrap();
        let settings = info.redis_settings();
        assert_eq!(settings.username(), Some("app"));
        assert_eq!(settings.password(), Some("new"));
        assert_eq!(settings.db(), 5);
    }

    #[test]
    fn cluster_urls_name_seed_nodes_and_credentials() {
        let config = RedisConfig::new("redis+cluster://app:pw@10.0.0.1:7000,10.0.0.2:7001");
        assert!(config.is_cluster());
        let (nodes, user, password) = config.cluster_nodes().unwrap();
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[1].addr().to_string(), "10.0.0.2:7001");
        assert_eq!(
            (user.as_deref(), password.as_deref()),
            (Some("app"), Some("pw"))
        );
        let config = RedisConfig {
            password: Some("other".to_owned()),
            ..RedisConfig::new("redis+cluster://10.0.0.1:7000")
        };
        let (_, user, password) = config.cluster_nodes().unwrap();
        assert_eq!((user, password.as_deref()), (None, Some("other")));
        assert!(!RedisConfig::new("redis://10.0.0.1").is_cluster());
        for bad in [
            RedisConfig::new("redis+cluster://"),
            RedisConfig::new("redis+cluster://10.0.0.1:7000,,10.0.0.2:7000"),
            RedisConfig::new("redis+cluster://10.0.0.1:7000/2"),
            RedisConfig {
                database: Some(2),
                ..RedisConfig::new("redis+cluster://10.0.0.1:7000")
            },
            RedisConfig {
                internal_prefix: "__kv{x}:".to_owned(),
                ..RedisConfig::new("redis+cluster://10.0.0.1:7000")
            },
            RedisConfig {
                reconcile_roots: vec!["nxc:".to_owned()],
                ..RedisConfig::new("redis+cluster://10.0.0.1:7000")
            },
        ] {
            let err = bad.cluster_nodes().unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Config, "{bad:?}");
        }
    }

    /// A password holding every delimiter of a URL, percent-encoded.
    pub(super) const PASSWORD: &str = "p/?#%@&:,+ w";
    pub(super) const ENCODED: &str = "p%2F%3F%23%25%40%26%3A%2C+%20w";

    #[test]
    fn cluster_credentials_are_percent_decoded() {
        let url = format!("redis+cluster://ad%40min:{ENCODED}@10.0.0.1:7000,10.0.0.2:7001");
        let (nodes, user, password) = RedisConfig::new(url).cluster_nodes().unwrap();
        assert_eq!(nodes.len(), 2);
        assert_eq!(
            (user.as_deref(), password.as_deref()),
            (Some("ad@min"), Some(PASSWORD))
        );
    }

    #[test]
    fn single_server_credentials_are_percent_decoded() {
        let url = format!("redis://ad%40min:{ENCODED}@10.0.0.1:6379/2");
        let info = RedisConfig::new(url).connection_info().unwrap();
        let settings = info.redis_settings();
        assert_eq!(settings.username(), Some("ad@min"));
        assert_eq!(settings.password(), Some(PASSWORD));
        assert_eq!(settings.db(), 2);
    }

    /// A `%` not followed by two hex digits, or bytes that are not UTF-8, are refused with
    /// an error that names the part and does not show it.
    #[test]
    fn bad_percent_encoding_is_a_config_error() {
        for (credentials, part) in [
            ("u:s3cret%zz", "password"),
            ("u:s3cret%4", "password"),
            ("u:s3cret%", "password"),
            ("u%ff:s3cret", "username"),
            ("u:s3cret%c3%28", "password"),
        ] {
            for url in [
                format!("redis://{credentials}@10.0.0.1:6379"),
                format!("redis+cluster://{credentials}@10.0.0.1:7000"),
                format!("redis+sentinel://{credentials}@10.0.0.1:26379/main"),
            ] {
                let err = RedisConfig::new(url.clone()).validate().unwrap_err();
                assert_eq!(err.kind(), ErrorKind::Config, "{url}");
                let shown = err.chain();
                assert!(shown.contains(part), "{url}: {shown}");
                assert!(shown.contains("percent-encod"), "{url}: {shown}");
                assert!(!shown.contains("s3cret"), "{url}: {shown}");
            }
        }
    }

    #[test]
    fn tls_cluster_urls_name_tls_nodes() {
        let config = RedisConfig::new("rediss+cluster://10.0.0.1:7000,10.0.0.2:7001");
        assert!(config.is_cluster());
        let nodes = config.cluster_nodes();
        if cfg!(feature = "tls") {
            let (nodes, _, _) = nodes.unwrap();
            assert!(
                nodes
                    .iter()
                    .all(|n| n.addr().to_string().contains("10.0.0."))
            );
            assert_eq!(nodes.len(), 2);
        } else {
            assert_eq!(nodes.unwrap_err().kind(), ErrorKind::Config);
        }
        #[cfg(feature = "tls")]
        {
            let with_domain = RedisConfig {
                tls: Some(TlsConfig {
                    domain: Some("kv.internal".to_owned()),
                    ..TlsConfig::default()
                }),
                ..RedisConfig::new("rediss+cluster://10.0.0.1:7000")
            };
            assert_eq!(
                with_domain.cluster_nodes().unwrap_err().kind(),
                ErrorKind::Config
            );
            let plain_with_tls = RedisConfig {
                tls: Some(TlsConfig::default()),
                ..RedisConfig::new("redis+cluster://10.0.0.1:7000")
            };
            let err = plain_with_tls.cluster_nodes().unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Config);
        }
    }
}
