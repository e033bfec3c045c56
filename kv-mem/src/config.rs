//! [`MemConfig`]: limits and retention of a [`MemStore`](crate::MemStore).

use keyplane_core::{Capabilities, Retention, Support};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Configuration of a [`MemStore`](crate::MemStore). Every field has a default
/// ([`MemConfig::default`]), so a config file may name only what it changes.
///
/// ```
/// use keyplane_mem::{MemConfig, MemStore};
/// use keyplane_core::Store;
///
/// let store = MemStore::open(MemConfig { history_retention: 100, ..MemConfig::default() });
/// assert_eq!(store.capabilities().history_retention, keyplane_core::Retention::Revisions(100));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemConfig {
    /// How many of the latest revisions keep their events, for watches that resume from an
    /// earlier revision and reads at a past revision. Default: 10 000. (Formerly `history`,
    /// still accepted by serde.)
    #[serde(alias = "history")]
    pub history_retention: u64,
    /// Most compares, and most ops per branch, in one transaction. Default: 128 (etcd's
    /// default `--max-txn-ops`).
    pub max_txn_ops: usize,
    /// Largest value accepted, in bytes. Default: 1.5 MiB (etcd's default request size).
    pub max_value_bytes: usize,
    /// Most batches queued for one watch whose reader has not taken them (the replay of its
    /// start revision included). A write that would queue one more ends that watch with
    /// [`ErrorKind::Lagged`](keyplane_core::ErrorKind::Lagged) after the queued batches,
    /// so a reader that stops reading never grows memory without bound; resuming from the
    /// revision after the last batch read loses nothing while the history retains it.
    /// Default: 100 000.
    pub watch_buffer: usize,
}

impl Default for MemConfig {
    fn default() -> Self {
        MemConfig {
            history_retention: 10_000,
            max_txn_ops: 128,
            max_value_bytes: 1536 * 1024,
            watch_buffer: 100_000,
        }
    }
}

impl MemConfig {
    /// The capabilities a store with this configuration reports.
    pub(crate) fn capabilities(&self) -> Capabilities {
        Capabilities {
            backend: "memory",
            max_txn_ops: self.max_txn_ops,
            max_value_bytes: self.max_value_bytes,
            max_key_bytes: keyplane_core::raw::MAX_KEY_LEN,
            ttl_granularity: Duration::from_millis(1),
            history_retention: Retention::Revisions(self.history_retention),
            txn: Support::Native,
            leases: Support::Native,
            watch: Support::Native,
            // One member per key in the reserved layout, as on sled and etcd.
            collections: Support::Emulated,
            persistent: false,
            foreign_writes: keyplane_core::ForeignWrites::Immediate,
            sharding: keyplane_core::Sharding::Unsharded,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_config_keeps_the_other_defaults() {
        let config: MemConfig = serde_json::from_str(r#"{"history": 5}"#).unwrap();
        assert_eq!(config.history_retention, 5);
        assert_eq!(config.max_txn_ops, MemConfig::default().max_txn_ops);
        assert!(serde_json::from_str::<MemConfig>(r#"{"histroy": 5}"#).is_err());
    }

    #[test]
    fn collections_are_reported_as_emulated() {
        let caps = MemConfig::default().capabilities();
        assert_eq!(caps.collections, Support::Emulated);
        assert_eq!(caps.txn, Support::Native);
    }
}
