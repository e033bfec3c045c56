//! `redis+sentinel://` URLs: the sentinels, the name they monitor the master under, the
//! master's database and credentials, the sentinels' own credentials, and TLS
//! (`rediss+sentinel://`).

use super::{RedisConfig, decode_url_part};
use keyplane_contract::{Error, ErrorKind, Result};

/// The scheme of a URL that names a master through its sentinels.
pub(super) const SENTINEL_SCHEME: &str = "redis+sentinel://";
/// The same over TLS.
pub(super) const TLS_SENTINEL_SCHEME: &str = "rediss+sentinel://";

/// The URL parameters that set [`RedisConfig::sentinel_username`] and
/// [`RedisConfig::sentinel_password`].
const SENTINEL_PARAMETERS: [&str; 2] = ["sentinel_username", "sentinel_password"];

/// What a `redis+sentinel://` URL names.
#[derive(Clone)]
pub(crate) struct SentinelTarget {
    /// The sentinels' addresses, with the sentinels' credentials.
    pub(crate) sentinels: Vec<redis::ConnectionInfo>,
    /// The name the sentinels monitor the master under.
    pub(crate) master: String,
    /// The database, user and password of every connection to the master.
    pub(crate) settings: redis::RedisConnectionInfo,
    /// Whether the sentinels and the master speak TLS (`rediss+sentinel://`).
    pub(crate) tls: bool,
    /// The CA and client certificate for TLS, from [`RedisConfig::tls`].
    #[cfg(feature = "tls")]
    pub(crate) certificates: Option<redis::TlsCertificates>,
}

impl SentinelTarget {
    /// The client of `info` (a sentinel or the master), with the TLS certificates.
    pub(crate) fn client(&self, info: redis::ConnectionInfo) -> redis::RedisResult<redis::Client> {
        #[cfg(feature = "tls")]
        if let Some(certificates) = &self.certificates {
            return redis::Client::build_with_tls(info, certificates.clone());
        }
        redis::Client::open(info)
    }

    /// The master's connection information at `host:port`. Sentinel names an IPv6 master
    /// without brackets (`::1`), which a URL needs.
    pub(crate) fn master_info(
        &self,
        host: &str,
        port: u16,
    ) -> redis::RedisResult<redis::ConnectionInfo> {
        use redis::IntoConnectionInfo;
        let scheme = if self.tls { "rediss" } else { "redis" };
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host.to_owned()
        };
        Ok(format!("{scheme}://{host}:{port}")
            .into_connection_info()?
            .set_redis_settings(self.settings.clone()))
    }
}

impl RedisConfig {
    /// Whether the URL names a master through its sentinels: `redis+sentinel://`.
    pub fn is_sentinel(&self) -> bool {
        self.url.starts_with(SENTINEL_SCHEME) || self.url.starts_with(TLS_SENTINEL_SCHEME)
    }

    /// The sentinels, the master's name and its connection settings of a
    /// `redis+sentinel://[user:password@]host:port[,host:port...]/MASTER_NAME[/DB][?sentinel_username=U&sentinel_password=P]`
    /// URL, or `rediss+sentinel://` (TLS to the sentinels and the master). The
    /// configuration's own credentials, database and sentinel credentials override the
    /// URL's.
    ///
    /// # Errors
    /// [`ErrorKind::Config`] for a URL without a sentinel or a master name, a sentinel or a
    /// database that does not parse, an unknown URL parameter, `rediss+sentinel://` without
    /// the `tls` feature or TLS settings without it, or the checks every URL shares.
    pub(crate) fn sentinel_target(&self) -> Result<SentinelTarget> {
        use redis::IntoConnectionInfo;
        let config_error = |message: String| Error::new(ErrorKind::Config, message);
        let (rest, tls) = match (
            self.url.strip_prefix(SENTINEL_SCHEME),
            self.url.strip_prefix(TLS_SENTINEL_SCHEME),
        ) {
            (Some(rest), _) => (rest, false),
            (_, Some(rest)) => (rest, true),
            _ => return Err(config_error("not a redis+sentinel:// URL".to_owned())),
        };
        if tls && !cfg!(feature = "tls") {
            return Err(config_error(
                "rediss+sentinel:// needs keyplane-redis to be built with the `tls` feature"
                    .to_owned(),
            ));
        }
        #[cfg(feature = "tls")]
        if self.tls.is_some() && !tls {
            return Err(config_error(
                "TLS settings need a rediss+sentinel:// URL".to_owned(),
            ));
        }
        self.check()?;
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (username, password, hosts) = self.credentials_and_hosts(authority)?;
        let mut path = path.split('/').filter(|part| !part.is_empty());
        let master = path
            .next()
            .ok_or_else(|| {
                config_error("a redis+sentinel:// URL names the master: .../NAME".to_owned())
            })?
            .to_owned();
        let db = match path.next() {
            Some(db) => db.parse::<i64>().map_err(|_| {
                config_error(format!(
                    "the database of a redis+sentinel:// URL is a number, got {db:?}"
                ))
            })?,
            None => 0,
        };
        if path.next().is_some() {
            return Err(config_error(
                "a redis+sentinel:// URL ends with /NAME or /NAME/DB".to_owned(),
            ));
        }
        let (mut sentinel_username, mut sentinel_password) = (None, None);
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            match pair.split_once('=') {
                Some((name @ "sentinel_username", v)) => {
                    sentinel_username = Some(decode_url_part(v, name)?);
                }
                Some((name @ "sentinel_password", v)) => {
                    sentinel_password = Some(decode_url_part(v, name)?);
                }
                _ => {
                    let name = pair.split_once('=').map_or(pair, |(name, _)| name);
                    return Err(config_error(format!(
                        "a redis+sentinel:// URL takes the parameters {SENTINEL_PARAMETERS:?}, \
                         got {name:?}"
                    )));
                }
            }
        }
        let mut settings =
            redis::RedisConnectionInfo::default().set_db(self.database.unwrap_or(db));
        if let Some(user) = username {
            settings = settings.set_username(user);
        }
        if let Some(password) = password {
            settings = settings.set_password(password);
        }
        let mut sentinel_settings = redis::RedisConnectionInfo::default();
        if let Some(user) = self.sentinel_username.clone().or(sentinel_username) {
            sentinel_settings = sentinel_settings.set_username(user);
        }
        if let Some(password) = self.sentinel_password.clone().or(sentinel_password) {
            sentinel_settings = sentinel_settings.set_password(password);
        }
        let scheme = if tls { "rediss" } else { "redis" };
        let sentinels = hosts
            .split(',')
            .map(|host| {
                if host.is_empty() {
                    return Err(config_error(
                        "a sentinel is host:port, got an empty one".to_owned(),
                    ));
                }
                format!("{scheme}://{host}")
                    .into_connection_info()
                    .map(|info| info.set_redis_settings(sentinel_settings.clone()))
                    .map_err(|e| {
                        Error::new(ErrorKind::Config, "a sentinel's address does not parse")
                            .with_context("sentinel", host.to_owned())
                            .with_source(e)
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(SentinelTarget {
            sentinels,
            master,
            settings,
            tls,
            #[cfg(feature = "tls")]
            certificates: self.tls.as_ref().map(super::certificates).transpose()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinel_urls_name_sentinels_master_and_database() {
        let config =
            RedisConfig::new("redis+sentinel://app:pw@10.0.0.1:26379,10.0.0.2:26379/main/3");
        assert!(config.is_sentinel());
        assert!(!config.is_cluster());
        let target = config.sentinel_target().unwrap();
        assert_eq!(target.sentinels.len(), 2);
        assert_eq!(target.master, "main");
        assert_eq!(target.settings.db(), 3);
        assert_eq!(target.settings.username(), Some("app"));
        assert_eq!(target.settings.password(), Some("pw"));
        let plain = RedisConfig::new("redis+sentinel://10.0.0.1:26379/main")
            .sentinel_target()
            .unwrap();
        assert_eq!(plain.settings.db(), 0);
        assert_eq!(plain.settings.username(), None);
        assert!(!RedisConfig::new("redis://10.0.0.1").is_sentinel());
    }

    #[test]
    fn the_sentinels_have_credentials_of_their_own() {
        let url = "redis+sentinel://app:pw@10.0.0.1:26379/main?sentinel_username=watcher\
                   &sentinel_password=s3cret";
        let target = RedisConfig::new(url).sentinel_target().unwrap();
        let sentinel = target.sentinels[0].redis_settings();
        assert_eq!(sentinel.username(), Some("watcher"));
        assert_eq!(sentinel.password(), Some("s3cret"));
        assert_eq!(sentinel.db(), 0);
        assert_eq!(target.settings.username(), Some("app"));
        assert_eq!(target.master, "main");
        // The configuration's own override the URL's; the password is never printed.
        let config = RedisConfig {
            sentinel_password: Some("from-config".into()),
            ..RedisConfig::new(url)
        };
        let target = config.sentinel_target().unwrap();
        assert_eq!(
            target.sentinels[0].redis_settings().password(),
            Some("from-config")
        );
        let shown = format!("{config:?}");
        assert!(
            !shown.contains("s3cret") && !shown.contains("from-config"),
            "{shown}"
        );
    }

    #[test]
    fn sentinel_credentials_are_percent_decoded() {
        use crate::config::tests::{ENCODED, PASSWORD};
        let url = format!(
            "redis+sentinel://ad%40min:{ENCODED}@10.0.0.1:26379,10.0.0.2:26379/main/1\
             ?sentinel_username=watch%26er&sentinel_password={ENCODED}"
        );
        let target = RedisConfig::new(url).sentinel_target().unwrap();
        assert_eq!(target.settings.username(), Some("ad@min"));
        assert_eq!(target.settings.password(), Some(PASSWORD));
        assert_eq!((target.master.as_str(), target.settings.db()), ("main", 1));
        for sentinel in &target.sentinels {
            assert_eq!(sentinel.redis_settings().username(), Some("watch&er"));
            assert_eq!(sentinel.redis_settings().password(), Some(PASSWORD));
        }
        let bad = "redis+sentinel://10.0.0.1:26379/main?sentinel_password=s3cret%g1";
        let err = RedisConfig::new(bad).sentinel_target().err().unwrap();
        assert_eq!(err.kind(), ErrorKind::Config);
        assert!(err.chain().contains("sentinel_password"), "{}", err.chain());
        assert!(!err.chain().contains("s3cret"), "{}", err.chain());
    }

    #[test]
    fn an_ipv6_master_the_sentinels_name_without_brackets_is_reached() {
        let target = RedisConfig::new("redis+sentinel://10.0.0.1:26379/main/2")
            .sentinel_target()
            .unwrap();
        for (host, expected) in [
            ("::1", "::1"),
            ("2001:db8::7", "2001:db8::7"),
            ("[::1]", "::1"),
            ("10.0.0.2", "10.0.0.2"),
        ] {
            let master = target.master_info(host, 6380).unwrap();
            assert_eq!(
                master.addr(),
                &redis::ConnectionAddr::Tcp(expected.to_owned(), 6380),
                "{host}"
            );
            assert_eq!(master.redis_settings().db(), 2, "{host}");
        }
    }

    #[test]
    fn rediss_sentinel_speaks_tls_to_the_sentinels_and_the_master() {
        let config = RedisConfig::new("rediss+sentinel://10.0.0.1:26379/main");
        if cfg!(feature = "tls") {
            let target = config.sentinel_target().unwrap();
            assert!(target.tls);
            assert!(matches!(
                target.sentinels[0].addr(),
                redis::ConnectionAddr::TcpTls { .. }
            ));
            let master = target.master_info("10.0.0.2", 6379).unwrap();
            assert!(matches!(
                master.addr(),
                redis::ConnectionAddr::TcpTls { .. }
            ));
        } else {
            assert_eq!(
                config.sentinel_target().err().map(|e| e.kind()),
                Some(ErrorKind::Config)
            );
        }
    }

    #[test]
    fn bad_sentinel_urls_are_refused() {
        for url in [
            "redis+sentinel://10.0.0.1:26379",
            "redis+sentinel://10.0.0.1:26379/",
            "redis+sentinel://10.0.0.1:26379,,10.0.0.2:26379/main",
            "redis+sentinel://10.0.0.1:26379/main/x",
            "redis+sentinel://10.0.0.1:26379/main/1/2",
            "redis+sentinel://10.0.0.1:26379/main?password=x",
        ] {
            let err = RedisConfig::new(url).sentinel_target().err();
            assert_eq!(err.map(|e| e.kind()), Some(ErrorKind::Config), "{url}");
        }
        // The reconciler runs under Sentinel: its subscription follows the master.
        let roots = RedisConfig {
            reconcile_roots: vec!["app/".into()],
            ..RedisConfig::new("redis+sentinel://10.0.0.1:26379/main")
        };
        assert!(roots.sentinel_target().is_ok());
    }
}
