//! `EtcdConfig`: where etcd is, how to authenticate, and the limits the store applies; its
//! URL form; and (feature `tls`) the client TLS options made from a
//! [`TlsConfig`](keyplane_contract::tls::TlsConfig).

#[cfg(feature = "tls")]
use etcd_client::{Certificate, Identity, TlsOptions};
use keyplane_contract::raw::{UrlSpec, apply_url_params, redact_secret, url_query_pairs};
use keyplane_contract::tls::TlsConfig;
use keyplane_contract::{Error, ErrorKind, Result};
use percent_encoding::percent_decode_str;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// etcd's default `--max-txn-ops`.
pub const DEFAULT_MAX_TXN_OPS: usize = 128;

/// etcd's default `--max-request-bytes` (1.5 MiB), minus room for the key and framing.
pub const DEFAULT_MAX_VALUE_BYTES: usize = 1_500_000;

/// How to reach an etcd cluster and how the store behaves on it.
///
/// Every field has a documented default, so a config file needs only `endpoints`:
///
/// ```
/// let cfg: keyplane_etcd::EtcdConfig =
///     serde_json::from_str(r#"{"endpoints": ["127.0.0.1:2379"]}"#).unwrap();
/// assert_eq!(cfg.max_txn_ops, 128);
/// ```
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct EtcdConfig {
    /// Client endpoints, `host:port` or `http(s)://host:port`. Requests are balanced over
    /// them, and a dead member is skipped. Default: `["127.0.0.1:2379"]`.
    pub endpoints: Vec<String>,
    /// Time allowed to open a connection to one endpoint. Default: 5 s. In a config file or
    /// a URL, a duration with its unit (`"2s"`, `"500ms"`).
    #[serde(with = "keyplane_contract::raw::duration_text")]
    pub connect_timeout: Duration,
    /// Time allowed for one request (not for watch streams). Default: 10 s.
    #[serde(with = "keyplane_contract::raw::duration_text")]
    pub request_timeout: Duration,
    /// User name for etcd's user/password authentication. Default: none.
    pub username: Option<String>,
    /// Password of [`EtcdConfig::username`]. Never printed by `Debug`. Default: none.
    pub password: Option<String>,
    /// TLS settings (the CA, a client certificate, the members' certificate name);
    /// endpoints are then reached over HTTPS. Default: none. Needs the crate's `tls`
    /// feature: a build without it refuses a config that sets it (`Config`).
    pub tls: Option<TlsConfig>,
    /// A root every operation is confined to: keys, ranges, compares and watches are
    /// prefixed with it, and responses are stripped of it. Default: none (the whole keyspace).
    ///
    /// This is the native fast path of
    /// `NamespaceLayer` (keyplane-core's `layer`), which confines any backend
    /// the same way: here the prefix is added inside the backend, so the store's own
    /// bookkeeping keys live under it too, and no second layer of key copies is made per
    /// call.
    pub namespace: Option<String>,
    /// Most compares, and most ops per branch, in one transaction; must not exceed the
    /// server's `--max-txn-ops`. Default: 128, etcd's default.
    pub max_txn_ops: usize,
    /// Largest value accepted, in bytes; the server's `--max-request-bytes` bounds a whole
    /// request. Default: 1,500,000.
    pub max_value_bytes: usize,
    /// How many times a request that could not reach any member is retried (with backoff)
    /// before `Unavailable` is returned, and how many times a watch reconnects without
    /// receiving anything. Default: 8.
    pub retries: u32,
}

impl Default for EtcdConfig {
    fn default() -> Self {
        EtcdConfig {
            endpoints: vec!["127.0.0.1:2379".to_owned()],
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(10),
            username: None,
            password: None,
            tls: None,
            namespace: None,
            max_txn_ops: DEFAULT_MAX_TXN_OPS,
            max_value_bytes: DEFAULT_MAX_VALUE_BYTES,
            retries: 8,
        }
    }
}

impl fmt::Debug for EtcdConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("EtcdConfig");
        d.field("endpoints", &self.endpoints)
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("username", &self.username)
            .field("password", &redact_secret(self.password.as_ref()))
            .field("tls", &self.tls)
            .field("namespace", &self.namespace)
            .field("max_txn_ops", &self.max_txn_ops)
            .field("max_value_bytes", &self.max_value_bytes)
            .field("retries", &self.retries)
            .finish()
    }
}

impl EtcdConfig {
    /// A config for these endpoints, every other field at its default.
    pub fn new<S: Into<String>>(endpoints: impl IntoIterator<Item = S>) -> Self {
        EtcdConfig {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// Authenticates as `user` with `password`.
    pub fn auth(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.username = Some(user.into());
        self.password = Some(password.into());
        self
    }

    /// Parses the URL form `etcd://[user:password@]HOST:PORT[,HOST:PORT...][/][?PARAMS]`:
    /// [`EtcdConfig::with_url`] over the defaults.
    ///
    /// ```
    /// let cfg = keyplane_etcd::EtcdConfig::from_url(
    ///     "etcd://app:s%40cret@10.0.0.1:2379,10.0.0.2:2379?namespace=jxt/&max_txn_ops=64",
    /// ).unwrap();
    /// assert_eq!(cfg.endpoints, ["10.0.0.1:2379", "10.0.0.2:2379"]);
    /// assert_eq!(cfg.password.as_deref(), Some("s@cret"));
    /// assert_eq!(cfg.namespace.as_deref(), Some("jxt/"));
    /// assert!(!format!("{cfg:?}").contains("s@cret"));
    /// ```
    ///
    /// # Errors
    /// As [`EtcdConfig::with_url`].
    pub fn from_url(url: &str) -> Result<Self> {
        EtcdConfig::default().with_url(url)
    }

    /// This config with what `url` names: the endpoints of its authority, the user and
    /// password before its `@` (percent-encoded), and every field its query names, each
    /// parameter named as its field: `connect_timeout=2s`, `request_timeout`, `namespace`, `max_txn_ops`, `max_value_bytes`, `retries`, `user`
    /// (or `username`), `password`, and (feature `tls`) `ca`, `cert`, `key`, `domain`, which
    /// turn TLS on. The facade crate's README has the table of every backend's parameters;
    /// the grammar is [`apply_url_params`]'s.
    ///
    /// ```
    /// use std::time::Duration;
    /// let cfg = keyplane_etcd::EtcdConfig::default()
    ///     .with_url("etcd://10.0.0.1:2379?connect_timeout=2s&user=app&password=pw")
    ///     .unwrap();
    /// assert_eq!(cfg.connect_timeout, Duration::from_secs(2));
    /// assert_eq!(cfg.username.as_deref(), Some("app"));
    /// ```
    ///
    /// # Errors
    /// [`ErrorKind::Config`] for another scheme, no host, a bad port, an unknown parameter
    /// (the message lists the known ones), a value of the wrong form, a TLS parameter
    /// without the `tls` feature, or a config that [`EtcdConfig::validate`] refuses.
    pub fn with_url(self, url: &str) -> Result<Self> {
        let cfg = self.with_url_unchecked(url)?;
        cfg.validate()
            .map_err(|e| e.with_context("url", keyplane_contract::raw::redact_url(url)))?;
        Ok(cfg)
    }

    /// [`EtcdConfig::with_url`] without the final [`EtcdConfig::validate`].
    fn with_url_unchecked(mut self, url: &str) -> Result<Self> {
        let rest = url
            .strip_prefix("etcd://")
            .ok_or_else(|| config_error("an etcd URL starts with etcd://", url))?;
        let (authority, query) = match rest.split_once('?') {
            Some((a, q)) => (a, Some(q)),
            None => (rest, None),
        };
        let authority = authority.strip_suffix('/').unwrap_or(authority);
        if authority.contains('/') {
            return Err(config_error(
                "an etcd URL has no path; use ?namespace= for a root",
                url,
            ));
        }
        let hosts = match authority.rsplit_once('@') {
            Some((userinfo, hosts)) => {
                let (user, password) = userinfo.split_once(':').ok_or_else(|| {
                    config_error("credentials in an etcd URL are user:password", url)
                })?;
                self.username = Some(decode(user, url)?);
                self.password = Some(decode(password, url)?);
                hosts
            }
            None => authority,
        };
        self.endpoints = hosts
            .split(',')
            .map(|h| validate_host(h, url))
            .collect::<Result<_>>()?;
        let pairs = url_query_pairs(query.unwrap_or(""))
            .map_err(|e| e.with_context("url", keyplane_contract::raw::redact_url(url)))?;
        let mut cfg = apply_url_params(&self, &pairs, &URL_SPEC)
            .map_err(|e| e.with_context("url", keyplane_contract::raw::redact_url(url)))?;
        if cfg.namespace.as_deref() == Some("") {
            cfg.namespace = None;
        }
        Ok(cfg)
    }

    /// Checks the config: at least one endpoint, no empty one, non-zero limits and timeouts,
    /// a password only with a user.
    ///
    /// # Errors
    /// [`ErrorKind::Config`] naming the field.
    pub fn validate(&self) -> Result<()> {
        if self.endpoints.is_empty() || self.endpoints.iter().any(|e| e.trim().is_empty()) {
            return Err(Error::new(
                ErrorKind::Config,
                "etcd needs at least one endpoint, and none may be empty",
            ));
        }
        for (field, value) in [
            ("connect_timeout", self.connect_timeout.as_millis() as u64),
            ("request_timeout", self.request_timeout.as_millis() as u64),
            ("max_txn_ops", self.max_txn_ops as u64),
            ("max_value_bytes", self.max_value_bytes as u64),
        ] {
            if value == 0 {
                return Err(Error::new(ErrorKind::Config, "must be greater than zero")
                    .with_context("field", field));
            }
        }
        if self.password.is_some() && self.username.is_none() {
            return Err(Error::new(ErrorKind::Config, "a password needs a user"));
        }
        if self.tls.is_some() && !cfg!(feature = "tls") {
            return Err(Error::new(
                ErrorKind::Config,
                "TLS settings need keyplane-etcd's `tls` feature (keyplane's `tls`)",
            ));
        }
        if let Some(ns) = &self.namespace {
            keyplane_contract::raw::validate_prefix(ns.as_bytes(), true)
                .map_err(|e| Error::new(ErrorKind::Config, "invalid namespace").with_source(e))?;
        }
        Ok(())
    }
}

keyplane_contract::config_setters!(EtcdConfig {
    set {
        connect_timeout: Duration,
        request_timeout: Duration,
        max_txn_ops: usize,
        max_value_bytes: usize,
        retries: u32,
    }
    into { endpoints: Vec<String> }
    some { username: String, password: String, tls: TlsConfig, namespace: String }
});

fn config_error(message: &str, url: &str) -> Error {
    Error::new(ErrorKind::Config, message)
        .with_context("url", keyplane_contract::raw::redact_url(url))
}

fn decode(s: &str, url: &str) -> Result<String> {
    percent_decode_str(s)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|_| config_error("percent-encoding in an etcd URL is not UTF-8", url))
}

fn validate_host(host: &str, url: &str) -> Result<String> {
    let (name, port) = host
        .rsplit_once(':')
        .ok_or_else(|| config_error("each etcd endpoint is host:port", url))?;
    if name.is_empty() || port.parse::<u16>().is_err() {
        return Err(config_error("each etcd endpoint is host:port", url).with_context("host", host));
    }
    Ok(host.to_owned())
}

/// How an etcd URL's parameters map onto [`EtcdConfig`]: the endpoints are the authority's,
/// `user` names the `username` field as etcdctl's `--user` does.
const URL_SPEC: UrlSpec = UrlSpec::new("etcd")
    .fixed(&["endpoints"])
    .aliases(&[("user", "username")]);

/// The client TLS options for `cfg`.
///
/// # Errors
/// `Config` when a file cannot be read, or a certificate is given without its key.
#[cfg(feature = "tls")]
pub(crate) fn tls_options(cfg: &TlsConfig) -> Result<TlsOptions> {
    let pem = cfg.read()?;
    let mut tls = TlsOptions::new();
    if let Some(ca) = pem.ca_certificate {
        tls = tls.ca_certificate(Certificate::from_pem(ca));
    }
    if let Some((cert, key)) = pem.client_identity {
        tls = tls.identity(Identity::from_pem(cert, key));
    }
    if let Some(domain) = &cfg.domain {
        tls = tls.domain_name(domain.clone());
    }
    Ok(tls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_with_everything() {
        let cfg = EtcdConfig::from_url(
            "etcd://u:p%3Aw@a:2379,[::1]:2380/?namespace=t%2F1/&request_timeout=50ms&retries=2",
        )
        .unwrap();
        assert_eq!(cfg.endpoints, ["a:2379", "[::1]:2380"]);
        assert_eq!(cfg.username.as_deref(), Some("u"));
        assert_eq!(cfg.password.as_deref(), Some("p:w"));
        assert_eq!(cfg.namespace.as_deref(), Some("t/1/"));
        assert_eq!(cfg.request_timeout, Duration::from_millis(50));
        assert_eq!(cfg.retries, 2);
        assert_eq!(cfg.max_txn_ops, DEFAULT_MAX_TXN_OPS);
    }

    #[test]
    fn bad_urls_are_config_errors() {
        for url in [
            "http://a:2379",
            "etcd://",
            "etcd://a",
            "etcd://a:notaport",
            "etcd://a:2379,",
            "etcd://a:2379/path",
            "etcd://a:2379?bogus=1",
            "etcd://a:2379?max_txn_ops=x",
            "etcd://a:2379?max_txn_ops=0",
            "etcd://user@a:2379",
        ] {
            let err = EtcdConfig::from_url(url).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Config, "{url}");
        }
    }

    #[test]
    fn errors_and_debug_hide_the_password() {
        let err = EtcdConfig::from_url("etcd://u:hunter2@a:2379?nope=1").unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
        let cfg = EtcdConfig::new(["a:1"]).auth("u", "hunter2");
        assert!(!format!("{cfg:?}").contains("hunter2"));
    }

    /// Every field of the config, and of its TLS settings, is set by a URL: the authority
    /// for the endpoints, a parameter for each other one.
    #[test]
    fn a_url_sets_every_field() {
        let default = EtcdConfig::default();
        let base = "etcd://127.0.0.1:2379";
        let examples = keyplane_contract::raw::url_param_examples(&default, &URL_SPEC).unwrap();
        assert!(examples.len() >= 9, "{examples:?}");
        for (field, example) in examples {
            let url = match (field.as_str(), example) {
                ("endpoints", None) => "etcd://10.1.1.1:2379".to_owned(),
                (_, Some(param)) => format!("{base}?{param}"),
                (field, None) => panic!("no URL parameter sets the field {field}"),
            };
            let cfg = default.clone().with_url_unchecked(&url).unwrap();
            let (before, after) = (field_value(&default, &field), field_value(&cfg, &field));
            assert_ne!(before, after, "{url} leaves {field} as it was");
        }
    }

    /// The JSON value of `field` (`tls.ca_file` for a field of `tls`) in `cfg`.
    fn field_value(cfg: &EtcdConfig, field: &str) -> serde_json::Value {
        let json = serde_json::to_value(cfg).unwrap();
        field.split('.').fold(json, |value, name| {
            value.get(name).cloned().unwrap_or_default()
        })
    }

    #[test]
    fn parameters_take_durations_credentials_and_tls() {
        let cfg = EtcdConfig::from_url(
            "etcd://a:2379?connect_timeout=2s&request_timeout=1500ms&user=app&password=p%40w",
        )
        .unwrap();
        assert_eq!(cfg.connect_timeout, Duration::from_secs(2));
        assert_eq!(cfg.request_timeout, Duration::from_millis(1500));
        assert_eq!(cfg.username.as_deref(), Some("app"));
        assert_eq!(cfg.password.as_deref(), Some("p@w"));
        #[cfg(feature = "tls")]
        {
            let cfg =
                EtcdConfig::from_url("etcd://a:2379?ca=/ca.pem&cert=/c.pem&key=/k.pem").unwrap();
            let tls = cfg.tls.unwrap();
            assert_eq!(
                tls.ca_file.as_deref(),
                Some(std::path::Path::new("/ca.pem"))
            );
            assert_eq!(
                tls.key_file.as_deref(),
                Some(std::path::Path::new("/k.pem"))
            );
        }
    }

    #[test]
    fn bad_parameters_are_config_errors_naming_them() {
        for (url, says) in [
            ("etcd://a:2379?bogus=1", "`bogus`"),
            (
                "etcd://a:2379?retries=many",
                "`retries` expects a whole number",
            ),
            ("etcd://a:2379?connect_timeout=2", "not a bare number"),
            ("etcd://a:2379?connect_timeout=0s", "greater than zero"),
        ] {
            let err = EtcdConfig::from_url(url).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Config, "{url}");
            assert!(err.to_string().contains(says), "{url}: {err}");
        }
        let err = EtcdConfig::from_url("etcd://a:2379?bogus=1")
            .unwrap_err()
            .to_string();
        for known in [
            "connect_timeout",
            "namespace",
            "user",
            "password",
            "retries",
        ] {
            assert!(err.contains(known), "{err}");
        }
        let tls = EtcdConfig::from_url("etcd://a:2379?ca=/ca.pem");
        if cfg!(feature = "tls") {
            assert!(tls.is_ok());
        } else {
            let err = tls.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Config);
            assert!(err.to_string().contains("`tls` feature"), "{err}");
        }
    }

    #[test]
    fn serde_round_trip_and_defaults() {
        let cfg = EtcdConfig::new(["a:1", "b:2"]).namespace("ns/");
        let json = serde_json::to_string(&cfg).unwrap();
        let back: EtcdConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back, cfg);
        assert!(serde_json::from_str::<EtcdConfig>(r#"{"endpoint": []}"#).is_err());
        assert!(EtcdConfig::new(Vec::<String>::new()).validate().is_err());
    }
}
