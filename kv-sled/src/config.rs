//! [`SledConfig`]: where the store lives and how it trades durability for speed.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// When acknowledged writes reach the disk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
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
        #[serde(rename = "flush_interval_ms", with = "millis")]
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

    /// Sets the durability.
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Sets how many revisions of history are kept.
    pub fn history_retention(mut self, revisions: u64) -> Self {
        self.history_retention = revisions;
        self
    }

    /// Sets the page cache size in bytes.
    pub fn cache_capacity(mut self, bytes: u64) -> Self {
        self.cache_capacity = bytes;
        self
    }

    /// Checks the values.
    ///
    /// # Errors
    /// `Config` for a zero retention, a zero flush interval or an empty path.
    pub(crate) fn validate(&self) -> keyplane_core::Result<()> {
        let bad = |msg: &str| {
            Err(keyplane_core::Error::new(
                keyplane_core::ErrorKind::Config,
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

fn default_history_retention() -> u64 {
    SledConfig::DEFAULT_HISTORY_RETENTION
}

fn default_cache_capacity() -> u64 {
    SledConfig::DEFAULT_CACHE_CAPACITY
}

/// Serializes a `Duration` as whole milliseconds.
mod millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
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
        assert!(json.contains(r#""flush_interval_ms":250"#), "{json}");
        assert_eq!(serde_json::from_str::<SledConfig>(&json).unwrap(), config);
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
