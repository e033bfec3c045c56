//! [`RedisConfig::from_url`]: every field of the config from a Redis URL's parameters, the
//! Redis client's own parameters left in the URL for it.

use super::RedisConfig;
use keyplane_contract::raw::{UrlSpec, apply_url_params, percent_decode, url_query_pairs};
use keyplane_contract::{Error, ErrorKind, Result};

/// How a Redis URL's parameters map onto [`RedisConfig`]: the URL is the URL itself, `user`,
/// `reconcile` and `history` name the `username`, `reconcile_roots` and `history_retention`
/// fields, and `protocol`, `db` and `pass` are the Redis client's (`db`,
/// `user` and `pass` for a Unix socket), which stay in the URL for it.
const URL_SPEC: UrlSpec = UrlSpec::new("redis")
    .fixed(&["url"])
    .aliases(&[
        ("user", "username"),
        ("reconcile", "reconcile_roots"),
        ("history", "history_retention"),
    ])
    .foreign(&["protocol", "db", "pass"]);

impl RedisConfig {
    /// Parses a Redis URL and its parameters: [`RedisConfig::with_url`] over the defaults.
    ///
    /// ```
    /// use keyplane_redis::RedisConfig;
    /// let config = RedisConfig::from_url(
    ///     "redis://10.0.0.5:6379/2?wait_replicas=1&reconcile_roots=app/,jobs/&request_timeout=3s",
    /// )
    /// .unwrap();
    /// assert_eq!(config.url, "redis://10.0.0.5:6379/2");
    /// assert_eq!(config.wait_replicas, 1);
    /// assert_eq!(config.reconcile_roots, ["app/", "jobs/"]);
    /// assert_eq!(config.request_timeout, std::time::Duration::from_secs(3));
    /// ```
    ///
    /// # Errors
    /// As [`RedisConfig::with_url`].
    pub fn from_url(url: &str) -> Result<Self> {
        RedisConfig::default().with_url(url)
    }

    /// This config with the URL `url` (any form of [`RedisConfig::url`]) and every field its
    /// query names, each parameter named as its field: `connect_timeout=2s`, `request_timeout`, `wait_replicas`, `wait_timeout`,
    /// `reconcile_roots=a/,b/`, `history_retention`, `user` (or `username`), `password`,
    /// `database`, `sentinel_username`... and (feature `tls`, with `rediss://`) `ca`, `cert`,
    /// `key`. These are taken out of the URL; the Redis client's own parameters (`protocol`,
    /// and `db`, `user`, `pass` for a Unix socket) stay in it. The grammar is
    /// [`apply_url_params`]'s; the facade crate's README has the table of every backend's
    /// parameters.
    ///
    /// # Errors
    /// [`ErrorKind::Config`] for an unknown parameter (the message lists the known ones), a
    /// value of the wrong form, a TLS parameter without the `tls` feature, or a config that
    /// [`RedisConfig::validate`] refuses (TLS files with a `redis://` URL, for one).
    pub fn with_url(self, url: &str) -> Result<Self> {
        let config = self.with_url_unchecked(url)?;
        config.validate()?;
        Ok(config)
    }

    /// [`RedisConfig::with_url`] without the final [`RedisConfig::validate`].
    pub(super) fn with_url_unchecked(self, url: &str) -> Result<Self> {
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            let name = pair.split_once('=').map_or(pair, |(name, _)| name);
            let name = percent_decode(name).map_err(|why| {
                Error::new(
                    ErrorKind::Config,
                    format!("a Redis URL parameter's name {why}"),
                )
            })?;
            if URL_SPEC.is_foreign(&name) {
                theirs.push(pair);
            } else {
                ours.push(pair);
            }
        }
        let pairs = url_query_pairs(&ours.join("&"))?;
        let mut config = apply_url_params(&self, &pairs, &URL_SPEC)
            .map_err(|e| e.with_context("url", keyplane_contract::raw::redact_url(url)))?;
        config.url = if theirs.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", theirs.join("&"))
        };
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field of the config, and of its TLS settings, is set by a URL: the URL itself,
    /// and a parameter for each other one.
    #[test]
    fn a_url_sets_every_field() {
        let base = if cfg!(feature = "tls") {
            "rediss://127.0.0.1:6379"
        } else {
            "redis://127.0.0.1:6379"
        };
        let default = RedisConfig::new(base);
        let json = |c: &RedisConfig, field: &str| {
            let json = serde_json::to_value(c).unwrap();
            field.split('.').fold(json, |value, name| {
                value.get(name).cloned().unwrap_or_default()
            })
        };
        let examples = keyplane_contract::raw::url_param_examples(&default, &URL_SPEC).unwrap();
        assert!(examples.len() >= 21, "{examples:?}");
        for (field, example) in examples {
            let url = match (field.as_str(), example) {
                ("url", None) => "redis://10.1.1.1:6379/3".to_owned(),
                (_, Some(param)) => format!("{base}?{param}"),
                (field, None) => panic!("no URL parameter sets the field {field}"),
            };
            let config = default.clone().with_url_unchecked(&url).unwrap();
            assert_ne!(json(&config, &field), json(&default, &field), "{url}");
        }
    }

    #[test]
    fn the_clients_parameters_stay_in_the_url() {
        let config = RedisConfig::from_url(
            "redis://127.0.0.1:6379/1?protocol=resp3&wait_replicas=1&user=app&password=p%26w",
        )
        .unwrap();
        assert_eq!(config.url, "redis://127.0.0.1:6379/1?protocol=resp3");
        assert_eq!(config.wait_replicas, 1);
        let info = config.connection_info().unwrap();
        let settings = info.redis_settings();
        assert_eq!(settings.protocol(), redis::ProtocolVersion::RESP3);
        assert_eq!(
            (settings.username(), settings.password()),
            (Some("app"), Some("p&w"))
        );
        assert_eq!(settings.db(), 1);
    }

    #[test]
    fn sentinel_and_cluster_urls_take_the_parameters_too() {
        let config = RedisConfig::from_url(
            "redis+sentinel://10.0.0.1:26379/main/2?sentinel_username=watcher\
             &sentinel_password=s%40cret&history_retention=50",
        )
        .unwrap();
        assert_eq!(config.url, "redis+sentinel://10.0.0.1:26379/main/2");
        assert_eq!(config.history_retention, 50);
        let target = config.sentinel_target().unwrap();
        let sentinel = target.sentinels[0].redis_settings();
        assert_eq!(
            (sentinel.username(), sentinel.password()),
            (Some("watcher"), Some("s@cret"))
        );
        assert_eq!(target.settings.db(), 2);
        let cluster =
            RedisConfig::from_url("redis+cluster://10.0.0.1:7000,10.0.0.2:7000?max_txn_ops=9")
                .unwrap();
        assert_eq!(cluster.max_txn_ops, 9);
        assert_eq!(cluster.cluster_nodes().unwrap().0.len(), 2);
    }

    #[test]
    fn bad_parameters_are_config_errors_naming_them() {
        for (url, says) in [
            ("redis://h:6379?wait=1", "`wait`"),
            (
                "redis://h:6379?wait_replicas=all",
                "`wait_replicas` expects a whole number",
            ),
            (
                "redis://h:6379?functions=maybe",
                "`functions` expects true or false",
            ),
            ("redis://h:6379?wait_timeout=100", "not a bare number"),
            ("redis://h:6379?history_retention=0", "at least 1"),
            (
                "redis://h:6379?wait_replicas=1&wait_timeout=9s",
                "less than request_timeout",
            ),
        ] {
            let err = RedisConfig::from_url(url).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Config, "{url}");
            assert!(err.to_string().contains(says), "{url}: {err}");
        }
        let err = RedisConfig::from_url("redis://h:6379?wait=1")
            .unwrap_err()
            .to_string();
        for known in [
            "wait_replicas",
            "reconcile_roots",
            "connect_timeout",
            "user",
            "protocol",
        ] {
            assert!(err.contains(known), "{err}");
        }
        let tls = RedisConfig::from_url("rediss://h:6379?ca=/ca.pem&cert=/c.pem&key=/k.pem");
        let plain = RedisConfig::from_url("redis://h:6379?ca=/ca.pem");
        let plain = plain.unwrap_err();
        assert_eq!(plain.kind(), ErrorKind::Config);
        if cfg!(feature = "tls") {
            assert!(tls.is_ok(), "{tls:?}");
            assert!(plain.to_string().contains("rediss://"), "{plain}");
        } else {
            let err = tls.unwrap_err();
            assert!(err.to_string().contains("`tls` feature"), "{err}");
            assert!(plain.to_string().contains("rediss://"), "{plain}");
        }
    }
}
