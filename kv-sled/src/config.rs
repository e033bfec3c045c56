//! [`SledConfig`]: where the store lives and how it trades durability for speed.

use keyplane_contract::raw::{
    UrlSpec, apply_url_params, duration_text, percent_decode, url_query_pairs,
};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// When acknowledged writes reach the disk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
#[non_exhaustive]
pub enum Durability {
    /// Every write transaction is flushed (fsync) before it is acknowledged: an acknowledged
    /// write survives `kill -9` and power loss. The default.
    #[default]
    FlushOnCommit,
    /// Writes are acknowledged once applied in memory. A thread of the store flushes them in
    /// the background as they commit, and a writer waits while the sled stores of the
    /// process have two writes not on disk yet (an unbounded backlog deadlocks sled's I/O
    /// pool). A crash loses the writes not flushed yet, but never leaves a transaction half
    /// applied.
    Buffered {
        /// How often sled also flushes on a timer of its own (at least 1 ms); committed writes
        /// do not wait for it.
        #[serde(with = "keyplane_contract::raw::duration_text")]
        flush_interval: Duration,
    },
}

/// Configuration of a [`SledStore`](crate::SledStore).
///
/// Only `path` is required in serialized form; every other field has the documented default.
///
/// ```
/// use keyplane_sled::{Durability, SledConfig};
/// let config: SledConfig = serde_json::from_str(r#"{"path": "/var/lib/kv"}"#).unwrap();
/// assert_eq!(config.durability, Durability::FlushOnCommit);
/// assert_eq!(config.history_retention, SledConfig::DEFAULT_HISTORY_RETENTION);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SledConfig {
    /// The database directory (created when missing).
    pub path: PathBuf,
    /// When writes are flushed; [`Durability::FlushOnCommit`] by default.
    #[serde(default)]
    pub durability: Durability,
    /// How many of the latest revisions the event log keeps for watches to resume from
    /// (at least 1); [`SledConfig::DEFAULT_HISTORY_RETENTION`] by default.
    #[serde(default = "default_history_retention")]
    pub history_retention: u64,
    /// Size of sled's page cache in bytes; [`SledConfig::DEFAULT_CACHE_CAPACITY`] by default.
    #[serde(default = "default_cache_capacity")]
    pub cache_capacity: u64,
}

impl SledConfig {
    /// Revisions of history kept by default.
    pub const DEFAULT_HISTORY_RETENTION: u64 = 10_000;
    /// The flush interval of `durability=buffered` in a URL that gives none: 500 ms.
    pub const DEFAULT_FLUSH_INTERVAL: Duration = Duration::from_millis(500);
    /// Page cache size by default: 64 MiB.
    pub const DEFAULT_CACHE_CAPACITY: u64 = 64 << 20;

    /// A configuration with every default, storing its data in `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        SledConfig {
            path: path.into(),
            durability: Durability::default(),
            history_retention: Self::DEFAULT_HISTORY_RETENTION,
            cache_capacity: Self::DEFAULT_CACHE_CAPACITY,
        }
    }

    /// Parses `sled://PATH[?PARAMS]`: the database directory (percent-decoded: a `?` in it is
    /// `%3F`) and the parameters `durability` (`flush_on_commit` or `buffered`),
    /// `flush_interval` (a duration such as `250ms`, for `buffered`, which it implies;
    /// default 500ms), `history_retention` and `cache_capacity`, in the grammar of
    /// [`apply_url_params`]. The facade crate's README has the table of every backend's
    /// parameters.
    ///
    /// ```
    /// use keyplane_sled::{Durability, SledConfig};
    /// use std::time::Duration;
    /// let config =
    ///     SledConfig::from_url("sled:///var/lib/kv?flush_interval=250ms&history_retention=50")
    ///         .unwrap();
    /// assert_eq!(config.path, std::path::Path::new("/var/lib/kv"));
    /// assert_eq!(
    ///     config.durability,
    ///     Durability::Buffered { flush_interval: Duration::from_millis(250) }
    /// );
    /// assert_eq!(config.history_retention, 50);
    /// ```
    ///
    /// # Errors
    /// `Config` for another scheme, no path, an unknown parameter (the message lists the
    /// known ones), a value of the wrong form, or a config the store would refuse.
    pub fn from_url(url: &str) -> keyplane_contract::Result<Self> {
        let config = Self::from_url_unchecked(url)?;
        config.validate()?;
        Ok(config)
    }

    /// [`SledConfig::from_url`] without the final check.
    fn from_url_unchecked(url: &str) -> keyplane_contract::Result<Self> {
        use keyplane_contract::{Error, ErrorKind};
        let bad = |msg: String| Error::new(ErrorKind::Config, msg);
        let rest = url
            .strip_prefix("sled://")
            .ok_or_else(|| bad("a sled store's URL is sled://PATH".to_owned()))?;
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let path = percent_decode(path).map_err(|why| bad(format!("the sled path {why}")))?;
        if path.is_empty() {
            return Err(bad("sled:// needs a path: sled://PATH".to_owned()));
        }
        let pairs = url_query_pairs(query)?;
        let mut config = apply_url_params(&SledConfig::new(path), &pairs, &URL_SPEC)?;
        let value = |name: &str| pairs.iter().find(|(n, _)| n == name).map(|(_, v)| v);
        let interval = value("flush_interval")
            .map(|text| {
                duration_text::parse(text)
                    .map_err(|why| bad(format!("the sled URL parameter `flush_interval` {why}")))
            })
            .transpose()?;
        config.durability = match (value("durability").map(String::as_str), interval) {
            (None | Some("buffered"), Some(flush_interval)) => {
                Durability::Buffered { flush_interval }
            }
            (Some("buffered"), None) => Durability::Buffered {
                flush_interval: Self::DEFAULT_FLUSH_INTERVAL,
            },
            (Some("flush_on_commit"), None) | (None, None) => Durability::FlushOnCommit,
            (Some("flush_on_commit"), Some(_)) => {
                return Err(bad(
                    "flush_interval is for durability=buffered, not flush_on_commit".to_owned(),
                ));
            }
            (Some(_), _) => {
                return Err(bad(
                    "the sled URL parameter `durability` expects flush_on_commit or buffered"
                        .to_owned(),
                ));
            }
        };
        Ok(config)
    }

    /// Checks the values.
    ///
    /// # Errors
    /// `Config` for a zero retention, a zero flush interval or an empty path.
    pub(crate) fn validate(&self) -> keyplane_contract::Result<()> {
        let bad = |msg: &str| {
            Err(keyplane_contract::Error::new(
                keyplane_contract::ErrorKind::Config,
                msg,
            ))
        };
        if self.path.as_os_str().is_empty() {
            return bad("sled: the database path must not be empty");
        }
        if self.history_retention == 0 {
            return bad("sled: history_retention must keep at least 1 revision");
        }
        if let Durability::Buffered { flush_interval } = self.durability
            && flush_interval.as_millis() == 0
        {
            return bad("sled: a buffered flush interval must be at least 1 ms");
        }
        Ok(())
    }
}

keyplane_contract::config_setters!(SledConfig {
    set { durability: Durability, history_retention: u64, cache_capacity: u64 }
    into { path: PathBuf }
});

/// How a `sled://` URL's parameters map onto [`SledConfig`]: the path is the URL's, the
/// durability is set by `durability` and `flush_interval`, which [`SledConfig::from_url`]
/// reads itself; `history` is `history_retention`.
const URL_SPEC: UrlSpec = UrlSpec::new("sled")
    .fixed(&["path"])
    .aliases(&[("history", "history_retention")])
    .foreign(&["durability", "flush_interval"]);

fn default_history_retention() -> u64 {
    SledConfig::DEFAULT_HISTORY_RETENTION
}

fn default_cache_capacity() -> u64 {
    SledConfig::DEFAULT_CACHE_CAPACITY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_round_trip_with_buffered_durability() {
        let config = SledConfig::new("/tmp/x").durability(Durability::Buffered {
            flush_interval: Duration::from_millis(250),
        });
        let json = serde_json::to_string(&config).unwrap();
        assert!(json.contains(r#""flush_interval":"250ms""#), "{json}");
        assert_eq!(serde_json::from_str::<SledConfig>(&json).unwrap(), config);
    }

    /// Every field but the path (the URL's own) is set by a URL parameter, each
    /// durability's fields included.
    #[test]
    fn a_url_sets_every_field() {
        let default = SledConfig::new("/tmp/x");
        let json = |c: &SledConfig| serde_json::to_value(c).unwrap();
        let examples = keyplane_contract::raw::url_param_examples(&default, &URL_SPEC).unwrap();
        assert_eq!(examples.len(), 4, "{examples:?}");
        for (field, example) in examples {
            let urls = match (field.as_str(), example) {
                ("path", None) => vec!["sled:///tmp/y".to_owned()],
                // The durability is an enum: each variant and each of their fields.
                ("durability", None) => vec![
                    "sled:///tmp/x?durability=buffered".to_owned(),
                    "sled:///tmp/x?flush_interval=20ms".to_owned(),
                ],
                (_, Some(param)) => vec![format!("sled:///tmp/x?{param}")],
                (field, None) => panic!("no URL parameter sets {field}"),
            };
            for url in urls {
                let config = SledConfig::from_url(&url).unwrap();
                assert_ne!(json(&config)[&field], json(&default)[&field], "{url}");
            }
        }
        let buffered = SledConfig::new("/tmp/x").durability(Durability::Buffered {
            flush_interval: Duration::from_millis(20),
        });
        for variant in [Durability::FlushOnCommit, buffered.durability] {
            let fields = json(&SledConfig::new("/tmp/x").durability(variant))["durability"].clone();
            let fields = fields
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect::<Vec<_>>();
            assert!(
                fields
                    .iter()
                    .all(|f| ["mode", "flush_interval"].contains(&f.as_str())),
                "a durability field no URL parameter sets: {fields:?}"
            );
        }
        assert_eq!(
            SledConfig::from_url("sled:///tmp/x?flush_interval=20ms").unwrap(),
            buffered
        );
        assert!(SledConfig::from_url("sled:///tmp/x?flush_interval_ms=20").is_err());
        assert_eq!(
            SledConfig::from_url("sled:///tmp/a%3Fb").unwrap().path,
            std::path::Path::new("/tmp/a?b")
        );
    }

    #[test]
    fn bad_urls_are_config_errors() {
        for (url, says) in [
            ("sled://", "needs a path"),
            ("mem://x", "sled://PATH"),
            ("sled:///tmp/x?durable=yes", "`durable`"),
            (
                "sled:///tmp/x?durability=sometimes",
                "flush_on_commit or buffered",
            ),
            (
                "sled:///tmp/x?durability=flush_on_commit&flush_interval=1s",
                "buffered",
            ),
            ("sled:///tmp/x?flush_interval=100", "not a bare number"),
            ("sled:///tmp/x?history=0", "at least 1"),
            ("sled:///tmp/x?cache_capacity=big", "`cache_capacity`"),
            ("sled:///tmp/x?ca=/ca.pem", "takes none"),
        ] {
            let err = SledConfig::from_url(url).unwrap_err();
            assert_eq!(err.kind(), keyplane_contract::ErrorKind::Config, "{url}");
            assert!(err.to_string().contains(says), "{url}: {err}");
        }
        let err = SledConfig::from_url("sled:///x?durable=1")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cache_capacity, durability, flush_interval, history"),
            "{err}"
        );
    }

    #[test]
    fn validation_rejects_zero_retention_and_interval() {
        assert!(
            SledConfig::new("/tmp/x")
                .history_retention(0)
                .validate()
                .is_err()
        );
        let zero = Durability::Buffered {
            flush_interval: Duration::ZERO,
        };
        assert!(
            SledConfig::new("/tmp/x")
                .durability(zero)
                .validate()
                .is_err()
        );
        assert!(SledConfig::new("/tmp/x").validate().is_ok());
    }
}
