//! [`RedbConfig`]: where the store's file lives and how it trades durability for speed.

use keyplane_contract::raw::{
    UrlSpec, apply_url_params, duration_text, percent_decode, url_query_pairs,
};
use keyplane_contract::{Error, ErrorKind, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// When acknowledged writes reach the disk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
#[non_exhaustive]
pub enum Durability {
    /// Every write transaction is committed with redb's `Durability::Immediate` (fsync)
    /// before it is acknowledged: an acknowledged write survives `kill -9` and power loss.
    /// The default.
    #[default]
    FlushOnCommit,
    /// Writes are committed without an fsync and acknowledged at once; a durable commit
    /// every `flush_interval` (and one when the store closes) makes them durable. A crash
    /// loses a suffix of the writes since the last durable commit, never half of one.
    Buffered {
        /// How often the writes committed since the last durable commit are made durable
        /// (at least 1 ms).
        #[serde(with = "keyplane_contract::raw::duration_text")]
        flush_interval: Duration,
    },
}

/// Configuration of a [`RedbStore`](crate::RedbStore).
///
/// Only `path` is required in serialized form; every other field has the documented default.
///
/// ```
/// use keyplane_redb::{Durability, RedbConfig};
/// let config: RedbConfig = serde_json::from_str(r#"{"path": "/var/lib/kv/store.redb"}"#).unwrap();
/// assert_eq!(config.durability, Durability::FlushOnCommit);
/// assert_eq!(config.history_retention, RedbConfig::DEFAULT_HISTORY_RETENTION);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RedbConfig {
    /// The database file (created when missing, with the directories above it).
    pub path: PathBuf,
    /// When writes reach the disk; [`Durability::FlushOnCommit`] by default.
    #[serde(default)]
    pub durability: Durability,
    /// How many of the latest revisions the event log keeps for watches to resume from and
    /// reads at a past revision (at least 1); [`RedbConfig::DEFAULT_HISTORY_RETENTION`] by
    /// default.
    #[serde(default = "default_history_retention")]
    pub history_retention: u64,
    /// Size of redb's page cache in bytes; [`RedbConfig::DEFAULT_CACHE_SIZE`] by default.
    #[serde(default = "default_cache_size")]
    pub cache_size: u64,
}

impl RedbConfig {
    /// Revisions of history kept by default.
    pub const DEFAULT_HISTORY_RETENTION: u64 = 10_000;
    /// The flush interval of `durability=buffered` in a URL that gives none: 500 ms.
    pub const DEFAULT_FLUSH_INTERVAL: Duration = Duration::from_millis(500);
    /// Page cache size by default: 64 MiB (redb's own default, 1 GiB, is a lot for a
    /// program's embedded store).
    pub const DEFAULT_CACHE_SIZE: u64 = 64 << 20;

    /// A configuration with every default, storing its data in the file `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        RedbConfig {
            path: path.into(),
            durability: Durability::default(),
            history_retention: Self::DEFAULT_HISTORY_RETENTION,
            cache_size: Self::DEFAULT_CACHE_SIZE,
        }
    }

    /// Parses `redb://PATH[?PARAMS]`: [`RedbConfig::with_url`] over the defaults.
    ///
    /// ```
    /// use keyplane_redb::{Durability, RedbConfig};
    /// use std::time::Duration;
    /// let config =
    ///     RedbConfig::from_url("redb:///var/lib/kv.redb?flush_interval=250ms&history=50")
    ///         .unwrap();
    /// assert_eq!(config.path, std::path::Path::new("/var/lib/kv.redb"));
    /// assert_eq!(
    ///     config.durability,
    ///     Durability::Buffered { flush_interval: Duration::from_millis(250) }
    /// );
    /// assert_eq!(config.history_retention, 50);
    /// ```
    ///
    /// # Errors
    /// As [`RedbConfig::with_url`].
    pub fn from_url(url: &str) -> Result<Self> {
        RedbConfig::new("").with_url(url)
    }

    /// This config with what `redb://PATH[?PARAMS]` names: the database file (percent-decoded:
    /// a `?` in it is `%3F`) and the parameters `durability` (`flush_on_commit` or
    /// `buffered`), `flush_interval` (a duration such as `250ms`, for `buffered`, which it
    /// implies; default 500ms), `history_retention` (or `history`) and `cache_size`, in the
    /// grammar of [`apply_url_params`]. The facade crate's README has the table of every
    /// backend's parameters.
    ///
    /// ```
    /// use keyplane_redb::RedbConfig;
    /// let config = RedbConfig::new("/tmp/unused")
    ///     .history_retention(7)
    ///     .with_url("redb:///tmp/kv.redb?cache_size=1048576")
    ///     .unwrap();
    /// assert_eq!(config.path, std::path::Path::new("/tmp/kv.redb"));
    /// assert_eq!((config.history_retention, config.cache_size), (7, 1 << 20));
    /// ```
    ///
    /// # Errors
    /// `Config` for another scheme, no path, an unknown parameter (the message lists the
    /// known ones), a value of the wrong form, or a config the store would refuse.
    pub fn with_url(self, url: &str) -> Result<Self> {
        let config = self.with_url_unchecked(url)?;
        config.validate()?;
        Ok(config)
    }

    /// [`RedbConfig::with_url`] without the final check.
    fn with_url_unchecked(mut self, url: &str) -> Result<Self> {
        let bad = |msg: String| Error::new(ErrorKind::Config, msg);
        let rest = url
            .strip_prefix("redb://")
            .ok_or_else(|| bad("a redb store's URL is redb://PATH".to_owned()))?;
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let path = percent_decode(path).map_err(|why| bad(format!("the redb path {why}")))?;
        if path.is_empty() {
            return Err(bad("redb:// needs a path: redb://PATH".to_owned()));
        }
        self.path = path.into();
        let pairs = url_query_pairs(query)?;
        let mut config = apply_url_params(&self, &pairs, &URL_SPEC)?;
        let value = |name: &str| pairs.iter().find(|(n, _)| n == name).map(|(_, v)| v);
        let interval = value("flush_interval")
            .map(|text| {
                duration_text::parse(text)
                    .map_err(|why| bad(format!("the redb URL parameter `flush_interval` {why}")))
            })
            .transpose()?;
        config.durability = match (value("durability").map(String::as_str), interval) {
            (None | Some("buffered"), Some(flush_interval)) => {
                Durability::Buffered { flush_interval }
            }
            (Some("buffered"), None) => Durability::Buffered {
                flush_interval: Self::DEFAULT_FLUSH_INTERVAL,
            },
            (None, None) => config.durability,
            (Some("flush_on_commit"), None) => Durability::FlushOnCommit,
            (Some("flush_on_commit"), Some(_)) => {
                return Err(bad(
                    "flush_interval is for durability=buffered, not flush_on_commit".to_owned(),
                ));
            }
            (Some(_), _) => {
                return Err(bad(
                    "the redb URL parameter `durability` expects flush_on_commit or buffered"
                        .to_owned(),
                ));
            }
        };
        Ok(config)
    }

    /// Checks the values.
    ///
    /// # Errors
    /// `Config` for an empty path, a zero retention or a zero flush interval.
    pub(crate) fn validate(&self) -> Result<()> {
        let bad = |msg: &str| Err(Error::new(ErrorKind::Config, msg));
        if self.path.as_os_str().is_empty() {
            return bad("redb: the database path must not be empty");
        }
        if self.history_retention == 0 {
            return bad("redb: history_retention must keep at least 1 revision");
        }
        if let Durability::Buffered { flush_interval } = self.durability
            && flush_interval.as_millis() == 0
        {
            return bad("redb: a buffered flush interval must be at least 1 ms");
        }
        Ok(())
    }
}

keyplane_contract::config_setters!(RedbConfig {
    set { durability: Durability, history_retention: u64, cache_size: u64 }
    into { path: PathBuf }
});

/// How a `redb://` URL's parameters map onto [`RedbConfig`]: the path is the URL's, the
/// durability is set by `durability` and `flush_interval`, which [`RedbConfig::with_url`]
/// reads itself; `history` is `history_retention`.
const URL_SPEC: UrlSpec = UrlSpec::new("redb")
    .fixed(&["path"])
    .aliases(&[("history", "history_retention")])
    .foreign(&["durability", "flush_interval"]);

fn default_history_retention() -> u64 {
    RedbConfig::DEFAULT_HISTORY_RETENTION
}

fn default_cache_size() -> u64 {
    RedbConfig::DEFAULT_CACHE_SIZE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_round_trip_with_buffered_durability() {
        let config = RedbConfig::new("/tmp/x").durability(Durability::Buffered {
            flush_interval: Duration::from_millis(250),
        });
        let json = serde_json::to_string(&config).unwrap();
        assert!(json.contains(r#""flush_interval":"250ms""#), "{json}");
        assert_eq!(serde_json::from_str::<RedbConfig>(&json).unwrap(), config);
    }

    /// Every field but the path (the URL's own) is set by a URL parameter.
    #[test]
    fn a_url_sets_every_field() {
        let default = RedbConfig::new("/tmp/x");
        let json = |c: &RedbConfig| serde_json::to_value(c).unwrap();
        let examples = keyplane_contract::raw::url_param_examples(&default, &URL_SPEC).unwrap();
        assert_eq!(examples.len(), 4, "{examples:?}");
        for (field, example) in examples {
            let urls = match (field.as_str(), example) {
                ("path", None) => vec!["redb:///tmp/y".to_owned()],
                ("durability", None) => vec![
                    "redb:///tmp/x?durability=buffered".to_owned(),
                    "redb:///tmp/x?flush_interval=20ms".to_owned(),
                ],
                (_, Some(param)) => vec![format!("redb:///tmp/x?{param}")],
                (field, None) => panic!("no URL parameter sets {field}"),
            };
            for url in urls {
                let config = RedbConfig::from_url(&url).unwrap();
                assert_ne!(json(&config)[&field], json(&default)[&field], "{url}");
            }
        }
        assert_eq!(
            RedbConfig::from_url("redb:///tmp/a%3Fb").unwrap().path,
            std::path::Path::new("/tmp/a?b")
        );
    }

    #[test]
    fn bad_urls_are_config_errors() {
        for (url, says) in [
            ("redb://", "needs a path"),
            ("sled:///x", "redb://PATH"),
            ("redb:///tmp/x?durable=yes", "`durable`"),
            (
                "redb:///tmp/x?durability=sometimes",
                "flush_on_commit or buffered",
            ),
            (
                "redb:///tmp/x?durability=flush_on_commit&flush_interval=1s",
                "buffered",
            ),
            ("redb:///tmp/x?history=0", "at least 1"),
            ("redb:///tmp/x?cache_size=big", "`cache_size`"),
            ("redb:///tmp/x?flush_interval=0ms", "at least 1 ms"),
        ] {
            let err = RedbConfig::from_url(url).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Config, "{url}");
            assert!(err.to_string().contains(says), "{url}: {err}");
        }
    }
}
