//! `redis+sentinel://` URLs: the sentinels, the name they monitor the master under, and the
//! master's database and credentials.

use super::RedisConfig;
use keyplane_core::{Error, ErrorKind, Result};

/// The scheme of a URL that names a master through its sentinels.
pub(super) const SENTINEL_SCHEME: &str = "redis+sentinel://";
/// The same over TLS.
pub(super) const TLS_SENTINEL_SCHEME: &str = "rediss+sentinel://";

/// What a `redis+sentinel://` URL names.
#[derive(Clone)]
pub(crate) struct SentinelTarget {
    /// The sentinels' addresses.
    pub(crate) sentinels: Vec<redis::ConnectionInfo>,
    /// The name the sentinels monitor the master under.
    pub(crate) master: String,
    /// The database, user and password of every connection to the master.
    pub(crate) settings: redis::RedisConnectionInfo,
}

impl RedisConfig {
    /// Whether the URL names a master through its sentinels: `redis+sentinel://`.
    pub fn is_sentinel(&self) -> bool {
        self.url.starts_with(SENTINEL_SCHEME) || self.url.starts_with(TLS_SENTINEL_SCHEME)
    }

    /// The sentinels, the master's name and its connection settings of a
    /// `redis+sentinel://[user:password@]host:port[,host:port...]/MASTER_NAME[/DB]` URL (the
    /// configuration's own credentials and database override the URL's).
    ///
    /// # Errors
    /// [`ErrorKind::Config`] for a URL without a sentinel or a master name, a sentinel or a
    /// database that does not parse, `rediss+sentinel://` (TLS to the sentinels and the
    /// master is not supported), reconcile roots (the reconciler does not run under
    /// Sentinel), or the checks every URL shares.
    pub(crate) fn sentinel_target(&self) -> Result<SentinelTarget> {
        use redis::IntoConnectionInfo;
        let config_error = |message: String| Error::new(ErrorKind::Config, message);
        if self.url.starts_with(TLS_SENTINEL_SCHEME) {
            return Err(config_error(
                "rediss+sentinel:// is not supported: TLS to the sentinels and the master \
                 is not built yet"
                    .to_owned(),
            ));
        }
        let Some(rest) = self.url.strip_prefix(SENTINEL_SCHEME) else {
            return Err(config_error("not a redis+sentinel:// URL".to_owned()));
        };
        self.check()?;
        if !self.reconcile_roots.is_empty() {
            return Err(config_error(
                "the reconciler does not run under Sentinel: reconcile_roots must be empty"
                    .to_owned(),
            ));
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (username, password, hosts) = self.credentials_and_hosts(authority);
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
        let mut settings =
            redis::RedisConnectionInfo::default().set_db(self.database.unwrap_or(db));
        if let Some(user) = username {
            settings = settings.set_username(user);
        }
        if let Some(password) = password {
            settings = settings.set_password(password);
        }
        let sentinels = hosts
            .split(',')
            .map(|host| {
                if host.is_empty() {
                    return Err(config_error(
                        "a sentinel is host:port, got an empty one".to_owned(),
                    ));
                }
                format!("redis://{host}")
                    .into_connection_info()
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
    fn bad_sentinel_urls_are_refused() {
        for url in [
            "redis+sentinel://10.0.0.1:26379",
            "redis+sentinel://10.0.0.1:26379/",
            "redis+sentinel://10.0.0.1:26379,,10.0.0.2:26379/main",
            "redis+sentinel://10.0.0.1:26379/main/x",
            "redis+sentinel://10.0.0.1:26379/main/1/2",
            "rediss+sentinel://10.0.0.1:26379/main",
        ] {
            let err = RedisConfig::new(url).sentinel_target().err();
            assert_eq!(err.map(|e| e.kind()), Some(ErrorKind::Config), "{url}");
        }
        let roots = RedisConfig {
            reconcile_roots: vec!["app/".into()],
            ..RedisConfig::new("redis+sentinel://10.0.0.1:26379/main")
        };
        assert!(roots.sentinel_target().is_err());
    }
}
