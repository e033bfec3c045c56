//! Creating and deleting profiles, and choosing the default: each one transaction.

use super::keys::ProfileMapKey;
use super::segments::{ProfileId, ProviderName, RealmId};
use super::values::{NewProfile, validate_params};
use keyplane_core::keyspace::TypedStore;
use keyplane_core::{Error, ErrorKind, Result};

/// Creates (or replaces) a profile in one transaction, one round trip: the instance HASH
/// (previous fields dropped), the profile id added to the realm's map, and the default
/// marker set when `new.default`.
///
/// Only an instance HASH is replaced: on Redis, where another program may have written any
/// type at the instance key, the transaction reads the key as a HASH before it deletes it,
/// so a STRING, SET or LIST there fails the whole transaction instead of being dropped.
///
/// ```
/// # use keyplane_core::keyspace::TypedStore;
/// # use keyplane_schemas::nxc::*;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
/// let new = NewProfile {
///     realm: RealmId::new("test_realm").unwrap(),
///     provider: ProviderName::new("Alipay").unwrap(),
///     profile: ProfileId::new("app_001").unwrap(),
///     params: [("sub_mchid".to_string(), "1900000109".to_string())].into(),
///     default: true,
/// };
/// create_profile(&typed, &new).await?;
/// let ask = Identity { realm: new.realm.clone(), provider: new.provider.clone(), profile: None };
/// assert_eq!(resolve_profile(&typed, &ask).await?.profile, new.profile);
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// `InvalidArgument` for an empty parameter set or a bad field name (nothing written);
/// `WrongType` when the instance key, the map or the marker holds another Redis type than
/// the layout's (nothing written); backend errors.
pub async fn create_profile(typed: &TypedStore, new: &NewProfile) -> Result<()> {
    validate_params(&new.params)?;
    let Some(first_field) = new.params.keys().next() else {
        return Err(Error::invalid_argument(
            "a profile needs at least one instance parameter",
        ));
    };
    let map = ProfileMapKey::new(&new.realm, &new.provider);
    let instance_key = map.instance(&new.profile);
    let instance = typed.map_at(&instance_key);
    let mut txn = typed.txn();
    // The type guard: a HASH read of the instance key, before the delete that would
    // otherwise drop whatever is there.
    let _guard = txn.map_get(&instance, first_field);
    txn.delete(&instance_key);
    for (field, value) in &new.params {
        txn.map_put(&instance, field, value);
    }
    txn.set_add(&typed.set_at(&map), &new.profile);
    if new.default {
        txn.put(&map.default_marker(), &new.profile);
    }
    txn.commit().await?;
    Ok(())
}

/// Deletes a profile in one transaction, reading nothing before it: the id leaves the
/// realm's map, the instance HASH is deleted, and the default marker is cleared only when it
/// names this profile (a compare on the marker's value picks the branch). The shared pool
/// entry is left alone. Returns whether the profile was in the map.
///
/// A concurrent [`set_default_profile`] of the same profile either commits first, and its
/// marker is cleared here, or comes after and finds the profile gone: the marker never names
/// the deleted profile.
///
/// # Errors
/// Backend errors.
pub async fn delete_profile(
    typed: &TypedStore,
    realm: &RealmId,
    provider: &ProviderName,
    profile: &ProfileId,
) -> Result<bool> {
    let map = ProfileMapKey::new(realm, provider);
    let set = typed.set_at(&map);
    let instance = map.instance(profile);
    let marker = map.default_marker();
    let mut txn = typed.txn();
    txn.when_value_equals(&marker, profile)
        .set_remove(&set, profile)
        .delete(&instance)
        .delete(&marker)
        .or_else()
        .set_remove(&set, profile)
        .delete(&instance);
    let outcome = txn.commit().await?;
    Ok(matches!(
        outcome.results().first(),
        Some(keyplane_core::OpResult::Collection(
            keyplane_core::CollectionResult::Changed(true)
        ))
    ))
}

/// Makes `profile` the realm's default for the provider, in one transaction: the marker is
/// written only if the profile is in the realm's map (a set-membership compare).
///
/// With [`delete_profile`], which clears the marker in its own transaction when it names the
/// deleted profile, this keeps the marker naming a profile of the map under any number of
/// concurrent writers: a choice that commits before the delete is cleared by it, and one
/// that comes after finds the profile gone and writes nothing.
///
/// # Errors
/// `NotFound` when the profile is not in the map (nothing written); backend errors.
pub async fn set_default_profile(
    typed: &TypedStore,
    realm: &RealmId,
    provider: &ProviderName,
    profile: &ProfileId,
) -> Result<()> {
    let map = ProfileMapKey::new(realm, provider);
    let mut txn = typed.txn();
    txn.when_set_contains(&typed.set_at(&map), profile)
        .put(&map.default_marker(), profile);
    if !txn.commit().await?.succeeded {
        return Err(
            Error::new(ErrorKind::NotFound, "the realm has no such profile")
                .with_context("realm", realm)
                .with_context("provider", provider)
                .with_context("profile", profile),
        );
    }
    Ok(())
}
