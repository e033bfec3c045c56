//! `nxc-legacy`: the whole legacy layout (§1 "旧设计") into the three layers, as a
//! [`Migration`] that a [`Migrator`](keyplane_core::migrate::Migrator) plans, applies,
//! verifies, finalizes or rolls back.
//!
//! Every legacy key under `nexus:config:` is found by scanning, not one realm per call:
//!
//! | legacy item | becomes |
//! |---|---|
//! | HASH `nexus:config:group:{provider}:{realm}` | SET `nxc:map:{realm}:{provider}`: the hash's fields other than `default`, with the members of the realm's legacy index SET; STRING `nxc:map:{realm}:{provider}:default`: the `default` field's value (the §5.2 script) |
//! | SET `nexus:config:index:{provider}:{realm}` | merged into the map above when the realm has a group HASH; otherwise the map on its own |
//! | STRING `nexus:config:{provider}:{realm}:{profile}` | HASH `nxc:inst:{realm}:{provider}:{profile}`: one field per setting |
//!
//! The provider and realm swap places (§4.1). The legacy config string holds the provider
//! settings (encrypted by the legacy service). A [`SettingsDecoder`] turns it into settings;
//! the default one reads a JSON object, taking string values verbatim and any other value as
//! its JSON text. A config that does not decode (ciphertext without its key, say), has no
//! settings, or has field names the instance layer refuses is reported as unmappable and
//! left alone. Profile ids that are not valid [`ProfileId`]s make their group or index
//! unmappable the same way. The legacy keys stay until the migration is finalized.

use super::keys::{DefaultProfileKey, InstanceKey, ProfileMapKey};
use super::legacy::{LegacyConfigKey, LegacyGroupKey, LegacyIndexKey, NxcLegacyKeyspace};
use super::segments::ProfileId;
use super::values::{InstanceParams, validate_params};
use keyplane_core::CollectionValue;
use keyplane_core::keyspace::{Key, Keyspace};
use keyplane_core::migrate::{Item, Mapping, Migration, MigrationRow, Value};
use keyplane_core::{CollectionOp, CollectionResult, Result, Store};
use std::collections::BTreeSet;
use std::sync::Arc;

/// The group HASH field that names the default profile.
const DEFAULT_FIELD: &[u8] = b"default";

/// Turns a legacy config string into instance settings, or says why it cannot.
pub type SettingsDecoder =
    Arc<dyn Fn(&[u8]) -> std::result::Result<InstanceParams, String> + Send + Sync>;

/// The `nxc-legacy` migration.
///
/// ```
/// # #[tokio::main] async fn main() -> keyplane_core::Result<()> {
/// use keyplane_core::migrate::Migrator;
/// use keyplane_core::{CollectionOp, PutOptions, Store};
/// use keyplane_schemas::nxc::NxcLegacy;
/// use std::sync::Arc;
///
/// let store: Arc<dyn Store> = Arc::new(keyplane_mem::MemStore::new());
/// let group = b"nexus:config:group:alipay:shop-1".to_vec();
/// for (field, value) in [("2088001", "1"), ("default", "2088001")] {
///     store.collection(CollectionOp::MapPut { key: group.clone(), field: field.into(), value: value.into() }).await?;
/// }
/// store.put(b"nexus:config:alipay:shop-1:2088001", br#"{"sub_mchid":"1900"}"#, PutOptions::default()).await?;
///
/// let migrator = Migrator::new(store.clone(), Arc::new(NxcLegacy::new()));
/// migrator.apply().await?;
/// assert!(migrator.verify().await?.is_clean());
/// assert_eq!(store.get(b"nxc:map:shop-1:alipay:default").await?.unwrap().value, b"2088001");
/// migrator.finalize().await?; // the legacy keys go only now
/// assert!(store.get(b"nexus:config:alipay:shop-1:2088001").await?.is_none());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct NxcLegacy {
    decoder: SettingsDecoder,
}

impl std::fmt::Debug for NxcLegacy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NxcLegacy").finish_non_exhaustive()
    }
}

impl Default for NxcLegacy {
    fn default() -> Self {
        Self::new()
    }
}

impl NxcLegacy {
    /// The migration's name.
    pub const NAME: &'static str = "nxc-legacy";

    /// The migration with the default decoder (a JSON object of settings).
    pub fn new() -> Self {
        NxcLegacy {
            decoder: Arc::new(json_settings),
        }
    }

    /// The migration with `decoder` for the legacy config strings (for instance, one that
    /// decrypts them with the legacy service's key first).
    pub fn with_decoder(decoder: SettingsDecoder) -> Self {
        NxcLegacy { decoder }
    }

    fn group(&self, key: &LegacyGroupKey, old: &Item, index: Vec<Vec<u8>>) -> Mapping {
        let Value::Collection(CollectionValue::Map(fields)) = &old.value else {
            return Mapping::Unmappable("a legacy group is a HASH".into());
        };
        let mut members = BTreeSet::new();
        let mut default = None;
        for (field, value) in fields {
            let (id, is_default) = if field == DEFAULT_FIELD {
                (value, true)
            } else {
                (field, false)
            };
            let Some(id) = profile_id(id) else {
                return Mapping::Unmappable(format!(
                    "`{}` is not a valid profile id",
                    String::from_utf8_lossy(id)
                ));
            };
            if is_default {
                default = Some(id);
            } else {
                members.insert(id);
            }
        }
        for member in index {
            let Some(id) = profile_id(&member) else {
                return Mapping::Unmappable(format!(
                    "the realm's index holds `{}`, not a valid profile id",
                    String::from_utf8_lossy(&member)
                ));
            };
            members.insert(id);
        }
        let map = ProfileMapKey::new(&key.realm, key.provider.provider());
        let mut items = Vec::new();
        if !members.is_empty() {
            items.push(map_item(&map, &members));
        }
        if let Some(default) = default {
            let marker = DefaultProfileKey {
                realm: key.realm.clone(),
                provider: key.provider.provider().clone(),
            };
            items.push(Item::plain(marker.encode(), default.as_str()));
        }
        Mapping::To(items)
    }
}

#[keyplane_core::raw::async_trait]
impl Migration for NxcLegacy {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn sources(&self) -> Vec<Vec<u8>> {
        vec![b"nexus:config:".to_vec()]
    }

    fn rows(&self) -> Vec<MigrationRow> {
        vec![
            MigrationRow::of::<LegacyGroupKey, ProfileMapKey>(
                "HASH fields other than `default` become SET members, with the realm's index SET",
            ),
            MigrationRow::of::<LegacyGroupKey, DefaultProfileKey>(
                "the `default` field's value becomes the marker STRING",
            ),
            MigrationRow::of::<LegacyIndexKey, ProfileMapKey>(
                "SET members join the map (on their own when the realm has no group HASH)",
            ),
            MigrationRow::of::<LegacyConfigKey, InstanceKey>(
                "the config string, decoded (a JSON object by default), becomes one HASH field per setting",
            ),
        ]
    }

    async fn map(&self, old: &Item, store: &dyn Store) -> Result<Mapping> {
        let Ok(key) = std::str::from_utf8(&old.key) else {
            return Ok(Mapping::NotOld);
        };
        let Ok(key) = NxcLegacyKeyspace::parse(key) else {
            return Ok(Mapping::NotOld);
        };
        Ok(match key {
            NxcLegacyKeyspace::Group(group) => {
                let index = LegacyIndexKey {
                    provider: group.provider.clone(),
                    realm: group.realm.clone(),
                };
                let index = members(store, index.encode().into_bytes()).await?;
                self.group(&group, old, index)
            }
            NxcLegacyKeyspace::Index(index) => {
                let Value::Collection(CollectionValue::Set(ids)) = &old.value else {
                    return Ok(Mapping::Unmappable("a legacy index is a SET".into()));
                };
                let group = LegacyGroupKey {
                    provider: index.provider.clone(),
                    realm: index.realm.clone(),
                };
                if has_fields(store, group.encode().into_bytes()).await? {
                    // The group's mapping takes the index in.
                    return Ok(Mapping::To(Vec::new()));
                }
                let mut members = BTreeSet::new();
                for id in ids {
                    let Some(id) = profile_id(id) else {
                        return Ok(Mapping::Unmappable(format!(
                            "`{}` is not a valid profile id",
                            String::from_utf8_lossy(id)
                        )));
                    };
                    members.insert(id);
                }
                let map = ProfileMapKey::new(&index.realm, index.provider.provider());
                Mapping::To(vec![map_item(&map, &members)])
            }
            NxcLegacyKeyspace::Config(config) => {
                let Value::Plain(raw) = &old.value else {
                    return Ok(Mapping::Unmappable("a legacy config is a STRING".into()));
                };
                let settings = match (self.decoder)(raw) {
                    Ok(settings) => settings,
                    Err(reason) => return Ok(Mapping::Unmappable(reason)),
                };
                if settings.is_empty() {
                    return Ok(Mapping::Unmappable(
                        "the legacy config has no settings".into(),
                    ));
                }
                if let Err(e) = validate_params(&settings) {
                    return Ok(Mapping::Unmappable(e.to_string()));
                }
                let inst = InstanceKey {
                    realm: config.realm.clone(),
                    provider: config.provider.provider().clone(),
                    profile: config.profile.clone(),
                };
                Mapping::To(vec![Item::new(inst.encode(), Value::map(settings))])
            }
        })
    }
}

/// The default [`SettingsDecoder`]: a JSON object; string values verbatim, others as their
/// JSON text.
fn json_settings(raw: &[u8]) -> std::result::Result<InstanceParams, String> {
    let object: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(raw).map_err(|_| {
            "the legacy config is not a JSON object of settings (encrypted? give the \
             migration a decoder that decrypts it)"
                .to_owned()
        })?;
    Ok(object
        .into_iter()
        .map(|(field, value)| {
            let value = match value {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            (field, value)
        })
        .collect())
}

fn profile_id(raw: &[u8]) -> Option<ProfileId> {
    std::str::from_utf8(raw)
        .ok()
        .and_then(|s| ProfileId::new(s).ok())
}

fn map_item(map: &ProfileMapKey, members: &BTreeSet<ProfileId>) -> Item {
    Item::new(
        map.encode(),
        Value::set(members.iter().map(|id| id.as_str().as_bytes().to_vec())),
    )
}

async fn members(store: &dyn Store, key: Vec<u8>) -> Result<Vec<Vec<u8>>> {
    match store.collection(CollectionOp::SetMembers { key }).await? {
        CollectionResult::Members(m) => Ok(m),
        other => Err(keyplane_core::Error::internal(format!(
            "a set read answered {other:?}"
        ))),
    }
}

async fn has_fields(store: &dyn Store, key: Vec<u8>) -> Result<bool> {
    match store.collection(CollectionOp::MapGetAll { key }).await? {
        CollectionResult::Fields(f) => Ok(!f.is_empty()),
        other => Err(keyplane_core::Error::internal(format!(
            "a map read answered {other:?}"
        ))),
    }
}
