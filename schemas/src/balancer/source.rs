//! `balancer-load`: the cache's source of truth, the database tables of the document's §2,
//! read from JSON, with the 1:N → M:N migration of §5 (API keys de-duplicated by value).

use super::values::{ApiKeyRecord, KeyStatus, LoadedKey};
use keyplane_core::{Error, Result};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

/// The database tables of §2 as JSON:
///
/// ```json
/// {
///   "apikeys": [{"id": 1, "api_key": "sk-1", "status": "active"},
///               {"id": 2, "api_key": "sk-1", "status": "disabled", "group_id": 20}],
///   "key_groups": [{"id": 10, "name": "default"}, {"id": 20, "name": "batch"}],
///   "keygroup_apikey_mappings": [{"key_group_id": 10, "api_key_id": 1}]
/// }
/// ```
///
/// `group_id` on an API key is the old 1:N column (§1.1): it counts as a mapping, as §5's
/// migration turns it into one. `status` is `active` or `disabled` (`active` when absent),
/// or any other status the service uses, kept as [`KeyStatus::Other`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct BalancerSource {
    /// The `apikeys` table.
    #[serde(default)]
    pub apikeys: Vec<SourceKey>,
    /// The `key_groups` table.
    #[serde(default)]
    pub key_groups: Vec<SourceGroup>,
    /// The `keygroup_apikey_mappings` table.
    #[serde(default)]
    pub keygroup_apikey_mappings: Vec<SourceMapping>,
}

/// A row of `apikeys`. Its `Debug` hides the API key, as [`ApiKeyRecord`]'s does.
#[derive(Clone, PartialEq, Eq, Deserialize)]
pub struct SourceKey {
    /// `id`.
    pub id: u64,
    /// `api_key`: the secret value.
    pub api_key: String,
    /// `status`: `active`, `disabled`, or another status the service uses.
    #[serde(default)]
    pub status: Option<String>,
    /// `group_id`: the old 1:N column, if the table still has it.
    #[serde(default)]
    pub group_id: Option<u64>,
}

impl std::fmt::Debug for SourceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceKey")
            .field("id", &self.id)
            .field("api_key", &format_args!("***"))
            .field("status", &self.status)
            .field("group_id", &self.group_id)
            .finish()
    }
}

/// A row of `key_groups`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SourceGroup {
    /// `id`.
    pub id: u64,
    /// `name`.
    #[serde(default)]
    pub name: String,
}

/// A row of `keygroup_apikey_mappings`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SourceMapping {
    /// `key_group_id`.
    pub key_group_id: u64,
    /// `api_key_id`.
    pub api_key_id: u64,
}

/// The keys to load, de-duplicated, and the old id of every API key mapped to its new one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourcePlan {
    /// One key per distinct `api_key` value, with the union of its rows' groups.
    pub keys: Vec<LoadedKey>,
    /// Every old API key id → the id of the key it was merged into (itself when unique).
    pub id_map: BTreeMap<u64, u64>,
}

impl BalancerSource {
    /// Reads the tables from JSON.
    ///
    /// # Errors
    /// `InvalidArgument` naming what does not parse.
    pub fn from_json(bytes: &[u8]) -> Result<Self> {
        serde_json::from_slice(bytes).map_err(|e| {
            Error::invalid_argument(format!("the balancer source is not the tables' JSON: {e}"))
        })
    }

    /// The keys to load: rows with the same `api_key` value merge into one key (§5 step
    /// 2) whose id is the smallest of their ids, whose groups are the union of their
    /// mappings (and old `group_id`s, §5 step 3), and which is active when any of them is;
    /// otherwise it keeps the status of the row whose id it keeps (`disabled`, or another
    /// status the service uses).
    ///
    /// # Errors
    /// `InvalidArgument` for an empty `api_key`, an id given twice, or a
    /// mapping that names a key or group the tables do not have (nothing is loaded).
    pub fn plan(&self) -> Result<SourcePlan> {
        let groups: BTreeSet<u64> = self.key_groups.iter().map(|g| g.id).collect();
        if groups.len() != self.key_groups.len() {
            return Err(Error::invalid_argument("a key group id appears twice"));
        }
        let mut by_value: BTreeMap<&str, Vec<&SourceKey>> = BTreeMap::new();
        let mut ids = BTreeSet::new();
        for key in &self.apikeys {
            if key.api_key.is_empty() {
                return Err(Error::invalid_argument("an API key's value is empty")
                    .with_context("id", key.id));
            }
            if !ids.insert(key.id) {
                return Err(Error::invalid_argument("an API key id appears twice")
                    .with_context("id", key.id));
            }
            by_value.entry(key.api_key.as_str()).or_default().push(key);
        }
        let mut plan = SourcePlan::default();
        for rows in by_value.values() {
            let new_id = rows.iter().map(|r| r.id).min().unwrap_or_default();
            for row in rows {
                plan.id_map.insert(row.id, new_id);
            }
        }
        let mut key_groups: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
        let check_group = |group: u64, key: u64| {
            if groups.contains(&group) {
                Ok(())
            } else {
                Err(
                    Error::invalid_argument("a mapping names a key group the tables do not have")
                        .with_context("key_group_id", group)
                        .with_context("api_key_id", key),
                )
            }
        };
        for key in &self.apikeys {
            if let Some(group) = key.group_id {
                check_group(group, key.id)?;
                key_groups
                    .entry(plan.id_map[&key.id])
                    .or_default()
                    .insert(group);
            }
        }
        for m in &self.keygroup_apikey_mappings {
            let Some(new_id) = plan.id_map.get(&m.api_key_id) else {
                return Err(Error::invalid_argument(
                    "a mapping names an API key the tables do not have",
                )
                .with_context("api_key_id", m.api_key_id));
            };
            check_group(m.key_group_id, m.api_key_id)?;
            key_groups
                .entry(*new_id)
                .or_default()
                .insert(m.key_group_id);
        }
        for (value, rows) in &by_value {
            let id = plan.id_map[&rows[0].id];
            let status_of =
                |row: &SourceKey| KeyStatus::from(row.status.as_deref().unwrap_or("active"));
            let status = if rows.iter().any(|row| status_of(row).is_active()) {
                KeyStatus::Active
            } else {
                rows.iter()
                    .find(|row| row.id == id)
                    .map_or(KeyStatus::Disabled, |row| status_of(row))
            };
            plan.keys.push(LoadedKey {
                id,
                record: ApiKeyRecord {
                    api_key: (*value).to_owned(),
                    status,
                },
                groups: key_groups
                    .remove(&id)
                    .unwrap_or_default()
                    .into_iter()
                    .collect(),
            });
        }
        plan.keys.sort_by_key(|k| k.id);
        Ok(plan)
    }
}
