//! Migration from the legacy layout (group HASH + index SET) to the map SET and default
//! marker, as the document's §5.2 script does.

use super::keys::ProfileMapKey;
use super::legacy::{LegacyGroupKey, LegacyIndexKey, LegacyProvider};
use super::segments::{ProfileId, RealmId};
use keyplane_core::keyspace::TypedStore;
use keyplane_core::keyspace::{Codec, Key, SegmentCodec};
use keyplane_core::{
    CollectionOp, CollectionResult, Error, ErrorKind, OpResult, Result, Txn, TxnOp,
};
use std::collections::BTreeSet;

/// The group HASH field that names the default profile.
const DEFAULT_FIELD: &[u8] = b"default";

/// What [`migrate_legacy`] moved.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LegacyMigration {
    /// The profile ids added to the map.
    pub profiles: BTreeSet<ProfileId>,
    /// The default marker written, if the group had one.
    pub default: Option<ProfileId>,
}

/// Migrates one realm and provider from the legacy layout: every profile id of the group
/// HASH (its fields other than `default`) and of the index SET joins
/// `nxc:map:{realm}:{provider}`, the group's `default` field becomes the default marker, and
/// the legacy group and index are deleted, all in one transaction after one read.
///
/// Meant for a layout nothing writes any more, as the document's one-off script is: a legacy
/// write between the read and the transaction would not be carried over. Safe to run again:
/// once migrated, the legacy keys are gone and nothing more happens (an
/// empty [`LegacyMigration`]). The legacy config strings (encrypted settings, not the
/// instance HASH's fields) are left for the application to re-create as instances, as the
/// document's script leaves them.
///
/// # Errors
/// `InvalidValue` when the legacy data holds an id that is not a valid [`ProfileId`]
/// (nothing written); `TxnTooLarge` for more profiles than one transaction takes; backend
/// errors.
pub async fn migrate_legacy(
    typed: &TypedStore,
    provider: &LegacyProvider,
    realm: &RealmId,
) -> Result<LegacyMigration> {
    let group = LegacyGroupKey {
        provider: provider.clone(),
        realm: realm.clone(),
    }
    .encode()
    .into_bytes();
    let index = LegacyIndexKey {
        provider: provider.clone(),
        realm: realm.clone(),
    }
    .encode()
    .into_bytes();
    let read = Txn::new().and_then([
        TxnOp::Collection(CollectionOp::MapGetAll { key: group.clone() }),
        TxnOp::Collection(CollectionOp::SetMembers { key: index.clone() }),
    ]);
    let response = typed.store().txn(read).await?;
    let (fields, members) = match response.results.as_slice() {
        [
            OpResult::Collection(CollectionResult::Fields(fields)),
            OpResult::Collection(CollectionResult::Members(members)),
        ] => (fields, members),
        other => {
            return Err(Error::internal("unexpected transaction results")
                .with_context("results", format!("{other:?}")));
        }
    };
    let mut migration = LegacyMigration::default();
    for (field, value) in fields {
        if field == DEFAULT_FIELD {
            migration.default = Some(legacy_id(value)?);
        } else {
            migration.profiles.insert(legacy_id(field)?);
        }
    }
    for member in members {
        migration.profiles.insert(legacy_id(member)?);
    }
    if fields.is_empty() && members.is_empty() {
        return Ok(migration);
    }
    let map = ProfileMapKey::new(realm, provider.provider());
    let map_bytes = map.encode().into_bytes();
    let mut ops: Vec<TxnOp> = migration
        .profiles
        .iter()
        .map(|p| {
            TxnOp::Collection(CollectionOp::SetAdd {
                key: map_bytes.clone(),
                member: p.as_str().as_bytes().to_vec(),
            })
        })
        .collect();
    if let Some(default) = &migration.default {
        ops.push(TxnOp::put(map.default_marker().encode(), default.as_str()));
    }
    ops.push(TxnOp::delete(&group));
    ops.push(TxnOp::delete(&index));
    typed.store().txn(Txn::new().and_then(ops)).await?;
    Ok(migration)
}

fn legacy_id(raw: &[u8]) -> Result<ProfileId> {
    SegmentCodec::<ProfileId>::default()
        .decode(raw)
        .map_err(|e| {
            Error::new(
                ErrorKind::InvalidValue,
                "a legacy profile id is not a valid profile id",
            )
            .with_context("id", String::from_utf8_lossy(raw))
            .with_source(e)
        })
}
