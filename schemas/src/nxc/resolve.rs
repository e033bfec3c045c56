//! Resolving a realm's profile with the ownership check, default resolution, and paged
//! listing of a realm's profiles.

use super::keys::{InstanceKey, ProfileMapKey};
use super::segments::{ProfileId, ProviderName, RealmId};
use super::values::{Identity, InstanceParams, ResolvedProfile};
use kv_core::keyspace::{Codec, Key, SegmentCodec, SetPage, TypedStore};
use kv_core::{CollectionOp, CollectionResult, Error, ErrorKind, OpResult, Result, Txn, TxnOp};

/// Resolves what a realm asks for, checking ownership.
///
/// With a profile id: the id must be in the realm's map (`SISMEMBER nxc:map:{realm}:{provider}`)
/// or the answer is `Unauthorized`, so a realm can never read another realm's profile (the
/// document's IDOR case). The check and the read of the instance HASH are one transaction.
///
/// Without one: the default marker if it names a profile of the map, otherwise the smallest
/// profile id of the map in byte order (deterministic, unlike Redis' `SMEMBERS` order).
///
/// # Errors
/// `Unauthorized` when the realm does not own the profile; `NotFound` when it asks for its
/// default and owns no profile for the provider; a retryable `ConditionFailed` when every
/// default it chose was deleted before it was read; backend errors.
pub async fn resolve_profile(typed: &TypedStore, identity: &Identity) -> Result<ResolvedProfile> {
    if let Some(profile) = &identity.profile {
        return match owned_profile(typed, identity, profile).await? {
            Some(resolved) => Ok(resolved),
            None => Err(unauthorized(identity, profile)),
        };
    }
    // The default is chosen, then read with the ownership check; a profile deleted in
    // between is not this realm's fault: choose again.
    let mut attempts = 0;
    loop {
        let profile = default_profile(typed, &identity.realm, &identity.provider)
            .await?
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::NotFound,
                    "the realm has no profile for the provider",
                )
                .with_context("realm", &identity.realm)
                .with_context("provider", &identity.provider)
            })?;
        match owned_profile(typed, identity, &profile).await? {
            Some(resolved) => return Ok(resolved),
            None if attempts < DEFAULT_ATTEMPTS => attempts += 1,
            None => {
                return Err(Error::new(
                    ErrorKind::ConditionFailed,
                    "the default profile kept being deleted while it was resolved",
                )
                .with_context("realm", &identity.realm)
                .with_context("provider", &identity.provider)
                .set_retryable(true));
            }
        }
    }
}

/// How many times default resolution chooses again after its choice was deleted.
const DEFAULT_ATTEMPTS: u32 = 3;

/// The profile with its parameters when the realm owns it (membership check and instance
/// read in one transaction), `None` when it does not.
async fn owned_profile(
    typed: &TypedStore,
    identity: &Identity,
    profile: &ProfileId,
) -> Result<Option<ResolvedProfile>> {
    let map = ProfileMapKey::new(&identity.realm, &identity.provider);
    let instance = map.instance(profile);
    let txn = Txn::new().and_then([
        TxnOp::Collection(CollectionOp::SetContains {
            key: map.encode().into_bytes(),
            member: profile.as_str().as_bytes().to_vec(),
        }),
        TxnOp::Collection(CollectionOp::MapGetAll {
            key: instance.encode().into_bytes(),
        }),
    ]);
    let response = typed.store().txn(txn).await?;
    match response.results.as_slice() {
        [
            OpResult::Collection(CollectionResult::Contains(owned)),
            OpResult::Collection(CollectionResult::Fields(fields)),
        ] => Ok(if *owned {
            Some(ResolvedProfile {
                realm: identity.realm.clone(),
                provider: identity.provider.clone(),
                profile: profile.clone(),
                params: decode_params(&instance, fields)?,
            })
        } else {
            None
        }),
        other => Err(
            Error::new(ErrorKind::Backend, "unexpected transaction results")
                .with_context("results", format!("{other:?}")),
        ),
    }
}

/// The realm's default profile for the provider: the marker when it names a profile of the
/// map, else the smallest profile id of the map (byte order); `None` when the map is empty.
/// The marker and the map are read in one transaction.
///
/// The profile operations never leave a marker outside the map; one that another program
/// wrote there (raw commands on the layout) is ignored rather than trusted.
///
/// # Errors
/// Backend errors; `Codec` for a stored id that is not a valid [`ProfileId`].
pub async fn default_profile(
    typed: &TypedStore,
    realm: &RealmId,
    provider: &ProviderName,
) -> Result<Option<ProfileId>> {
    let map = ProfileMapKey::new(realm, provider);
    let marker = map.default_marker();
    let txn = Txn::new().and_then([
        TxnOp::get(marker.encode()),
        TxnOp::Collection(CollectionOp::SetMembers {
            key: map.encode().into_bytes(),
        }),
    ]);
    let response = typed.store().txn(txn).await?;
    let (marker_entry, members) = match response.results.as_slice() {
        [
            OpResult::Get(entry),
            OpResult::Collection(CollectionResult::Members(members)),
        ] => (entry, members),
        other => {
            return Err(
                Error::new(ErrorKind::Backend, "unexpected transaction results")
                    .with_context("results", format!("{other:?}")),
            );
        }
    };
    if let Some(entry) = marker_entry
        && members.contains(&entry.value)
    {
        return decode_id(&entry.value).map(Some);
    }
    // Members arrive in ascending byte order on every backend.
    members.iter().min().map(|m| decode_id(m)).transpose()
}

/// One page of the realm's profile ids for the provider (`SSCAN` on Redis, byte order on
/// ordered backends); pass the page's cursor back for the next one.
///
/// # Errors
/// `InvalidArgument` for a zero limit; backend errors.
pub async fn list_profiles(
    typed: &TypedStore,
    realm: &RealmId,
    provider: &ProviderName,
    cursor: Option<Vec<u8>>,
    limit: usize,
) -> Result<SetPage<ProfileId>> {
    typed
        .set_at(&ProfileMapKey::new(realm, provider))
        .scan(cursor, limit)
        .await
}

fn unauthorized(identity: &Identity, profile: &ProfileId) -> Error {
    Error::new(
        ErrorKind::Unauthorized,
        "the realm does not own the profile it asks for",
    )
    .with_context("realm", &identity.realm)
    .with_context("provider", &identity.provider)
    .with_context("profile", profile)
}

fn decode_id(raw: &[u8]) -> Result<ProfileId> {
    SegmentCodec::<ProfileId>::default().decode(raw)
}

fn decode_params(instance: &InstanceKey, fields: &[(Vec<u8>, Vec<u8>)]) -> Result<InstanceParams> {
    fields
        .iter()
        .map(|(field, value)| {
            let text = |bytes: &[u8]| {
                String::from_utf8(bytes.to_vec()).map_err(|e| {
                    Error::new(ErrorKind::Codec, "an instance field is not UTF-8")
                        .with_context("key", instance.encode())
                        .with_source(e)
                })
            };
            Ok((text(field)?, text(value)?))
        })
        .collect()
}
