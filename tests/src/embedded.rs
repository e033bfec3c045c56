//! The embedded stores, RedbStore and SledStore, as one [`Engine`] to name, open and check:
//! for the tests and the chaos run that kill a process writing one and reopen its database.

use keyplane_core::{Result, Store};
use keyplane_redb::{RedbConfig, RedbStore};
use keyplane_sled::{SledConfig, SledStore};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// An embedded store's engine: its name, where its database lives in a directory, and how it
/// opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// `RedbStore`: one database file, `store.redb`, in the directory.
    Redb,
    /// `SledStore`: the directory itself.
    Sled,
}

impl Engine {
    /// The engine of `name` (`redb`, `sled`).
    pub fn from_name(name: &str) -> Option<Engine> {
        match name {
            "redb" => Some(Engine::Redb),
            "sled" => Some(Engine::Sled),
            _ => None,
        }
    }

    /// The backend's name (`redb`, `sled`).
    pub fn name(self) -> &'static str {
        match self {
            Engine::Redb => "redb",
            Engine::Sled => "sled",
        }
    }

    /// The database of the directory `dir`: the redb file in it, or the sled directory itself.
    pub fn database(self, dir: &Path) -> PathBuf {
        match self {
            Engine::Redb => dir.join("store.redb"),
            Engine::Sled => dir.to_owned(),
        }
    }

    /// Opens the store of `dir` with the default configuration (flush-on-commit), or buffered
    /// with commits made durable every `buffered` interval.
    ///
    /// # Errors
    /// The store's open errors.
    pub async fn open_with(self, dir: &Path, buffered: Option<Duration>) -> Result<Arc<dyn Store>> {
        let path = self.database(dir);
        Ok(match self {
            Engine::Redb => {
                let mut config = RedbConfig::new(path);
                if let Some(flush_interval) = buffered {
                    config =
                        config.durability(keyplane_redb::Durability::Buffered { flush_interval });
                }
                Arc::new(RedbStore::open(config).await?)
            }
            Engine::Sled => {
                let mut config = SledConfig::new(path);
                if let Some(flush_interval) = buffered {
                    config =
                        config.durability(keyplane_sled::Durability::Buffered { flush_interval });
                }
                Arc::new(SledStore::open(config).await?)
            }
        })
    }

    /// Opens the store of `dir` with the default configuration.
    ///
    /// # Errors
    /// The store's open errors.
    pub async fn open(self, dir: &Path) -> Result<Arc<dyn Store>> {
        self.open_with(dir, None).await
    }

    /// Opens the store of `dir` and runs its consistency check (entries, event log, leases
    /// and counters agree) before handing it out.
    ///
    /// # Errors
    /// The store's open errors; `Corrupted` naming the first violation the check finds.
    pub async fn open_checked(self, dir: &Path) -> Result<Arc<dyn Store>> {
        let path = self.database(dir);
        Ok(match self {
            Engine::Redb => {
                let store = RedbStore::open(RedbConfig::new(path)).await?;
                store.check_consistency()?;
                Arc::new(store)
            }
            Engine::Sled => {
                let store = SledStore::open(SledConfig::new(path)).await?;
                store.check_consistency()?;
                Arc::new(store)
            }
        })
    }

    /// What the engine's error says when another process holds the database open.
    pub fn held_message(self) -> &'static str {
        match self {
            Engine::Redb => "in use by another store",
            Engine::Sled => "in use by another process",
        }
    }
}
