//! [`MemConfig`]: limits and retention of a [`MemStore`](crate::MemStore).

use keyplane_contract::raw::{UrlSpec, apply_url_params, url_query_pairs};
use keyplane_contract::{Capabilities, Error, ErrorKind, Result, Retention, Support};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Configuration of a [`MemStore`](crate::MemStore). Every field has a default
/// ([`MemConfig::default`]), so a config file may name only what it changes.
///
/// ```
/// use keyplane_mem::{MemConfig, MemStore};
/// use keyplane_contract::Store;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> keyplane_contract::Result<()> {
/// let store = MemStore::open(MemConfig::default().history_retention(100)).await?;
/// assert_eq!(store.capabilities().history_retention, keyplane_contract::Retention::Revisions(100));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct MemConfig {
    /// How many of the latest revisions keep their events, for watches that resume from an
    /// earlier revision and reads at a past revision. Default: 10 000.
    pub history_retention: u64,
    /// Most compares, and most ops per branch, in one transaction. Default: 128 (etcd's
    /// default `--max-txn-ops`).
    pub max_txn_ops: usize,
    /// Largest value accepted, in bytes. Default: 1.5 MiB (etcd's default request size).
    pub max_value_bytes: usize,
    /// Most batches queued for one watch whose reader has not taken them (the replay of its
    /// start revision included). A write that would queue one more ends that watch with
    /// [`ErrorKind::Lagged`](keyplane_contract::ErrorKind::Lagged) after the queued batches,
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

keyplane_contract::config_setters!(MemConfig {
    set { history_retention: u64, max_txn_ops: usize, max_value_bytes: usize, watch_buffer: usize }
    into {}
});

/// How a `mem://` URL's parameters map onto [`MemConfig`]: each field is one, and `history`
/// is `history_retention`, as in a config file.
const URL_SPEC: UrlSpec = UrlSpec::new("mem").aliases(&[("history", "history_retention")]);

impl MemConfig {
    /// Parses `mem://[?PARAMS]`, each parameter named as the field it sets:
    /// `history_retention`, `max_txn_ops`, `max_value_bytes`, `watch_buffer` (the grammar of
    /// [`apply_url_params`]; the facade crate's README has the table of every backend's
    /// parameters).
    ///
    /// ```
    /// let config = keyplane_mem::MemConfig::from_url("mem://?history_retention=100").unwrap();
    /// assert_eq!(config.history_retention, 100);
    /// ```
    ///
    /// # Errors
    /// [`ErrorKind::Config`](keyplane_contract::ErrorKind::Config) for another scheme, a path,
    /// an unknown parameter (the message lists the known ones), a value of the wrong form or
    /// a limit of zero.
    pub fn from_url(url: &str) -> Result<Self> {
        let rest = url.strip_prefix("mem://").ok_or_else(|| {
            Error::new(ErrorKind::Config, "a memory store's URL starts with mem://")
        })?;
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        if !path.is_empty() {
            return Err(Error::new(
                ErrorKind::Config,
                "mem:// takes no path, only ?parameters",
            ));
        }
        let config = apply_url_params(&MemConfig::default(), &url_query_pairs(query)?, &URL_SPEC)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks that no limit is zero.
    ///
    /// # Errors
    /// [`ErrorKind::Config`] naming the field.
    pub fn validate(&self) -> Result<()> {
        for (field, value) in [
            ("history_retention", self.history_retention),
            ("max_txn_ops", self.max_txn_ops as u64),
            ("max_value_bytes", self.max_value_bytes as u64),
            ("watch_buffer", self.watch_buffer as u64),
        ] {
            if value == 0 {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!("memory store: {field} must be at least 1"),
                ));
            }
        }
        Ok(())
    }

    /// The capabilities a store with this configuration reports.
    pub(crate) fn capabilities(&self) -> Capabilities {
        Capabilities {
            backend: "memory",
            max_txn_ops: self.max_txn_ops,
            max_value_bytes: self.max_value_bytes,
            max_key_bytes: keyplane_contract::raw::MAX_KEY_LEN,
            ttl_granularity: Duration::from_millis(1),
            history_retention: Retention::Revisions(self.history_retention),
            txn: Support::Native,
            leases: Support::Native,
            watch: Support::Native,
            // One member per key in the reserved layout, as on sled and etcd.
            collections: Support::Emulated,
            persistent: false,
            foreign_writes: keyplane_contract::ForeignWrites::Immediate,
            sharding: keyplane_contract::Sharding::Unsharded,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_config_keeps_the_other_defaults() {
        let config: MemConfig = serde_json::from_str(r#"{"history_retention": 5}"#).unwrap();
        assert_eq!(config.history_retention, 5);
        assert_eq!(config.max_txn_ops, MemConfig::default().max_txn_ops);
        assert!(serde_json::from_str::<MemConfig>(r#"{"histroy": 5}"#).is_err());
    }

    /// Every field of the config is set by a URL parameter.
    #[test]
    fn a_url_sets_every_field() {
        let default = MemConfig::default();
        let examples = keyplane_contract::raw::url_param_examples(&default, &URL_SPEC).unwrap();
        assert_eq!(examples.len(), 4, "{examples:?}");
        for (field, example) in examples {
            let param = example.unwrap_or_else(|| panic!("no URL parameter sets {field}"));
            let config = MemConfig::from_url(&format!("mem://?{param}")).unwrap();
            let json = |c: &MemConfig| serde_json::to_value(c).unwrap()[&field].clone();
            assert_ne!(
                json(&config),
                json(&default),
                "{param} leaves {field} as it was"
            );
        }
    }

    #[test]
    fn bad_urls_are_config_errors() {
        for (url, says) in [
            ("mem://x", "no path"),
            ("sled://x", "mem://"),
            ("mem://?histroy=5", "`histroy`"),
            ("mem://?max_txn_ops=lots", "`max_txn_ops`"),
            ("mem://?ca=/ca.pem", "takes none"),
        ] {
            let err = MemConfig::from_url(url).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Config, "{url}");
            assert!(err.to_string().contains(says), "{url}: {err}");
        }
        let err = MemConfig::from_url("mem://?histroy=5")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("history, history_retention, max_txn_ops"),
            "{err}"
        );
        assert_eq!(MemConfig::from_url("mem://").unwrap(), MemConfig::default());
    }

    #[test]
    fn collections_are_reported_as_emulated() {
        let caps = MemConfig::default().capabilities();
        assert_eq!(caps.collections, Support::Emulated);
        assert_eq!(caps.txn, Support::Native);
    }
}
