//! Resolving a realm's profile with the ownership check, default resolution, and paged
//! listing of a realm's profiles.

use super::keys::ProfileMapKey;
use super::segments::{ProfileId, ProviderName, RealmId};
use super::values::{Identity, ResolvedProfile};
use keyplane_core::keyspace::{ListOptions, SetPage, TypedStore};
use keyplane_core::{Error, ErrorKind, Result};

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
            None => Err(unauthorized(&identity.realm, &identity.provider, profile)),
        };
    }
    // The default is chosen, then read with the ownership check; a profile deleted in
    // between is not this realm's fault: choose again.
    let mut attempts = 0;
    loop {
        let profile = default_profile(typed, &identity.realm, &identity.provider)
            .await?
            .ok_or_else(|| no_profile(&identity.realm, &identity.provider))?;
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
    let mut txn = typed.txn();
    let owned = txn.set_contains(&typed.set_at(&map), profile);
    let fields = txn.map_all(&typed.map_at(&map.instance(profile)));
    let outcome = txn.commit().await?;
    Ok(if outcome.collection(&owned)? {
        Some(ResolvedProfile {
            realm: identity.realm.clone(),
            provider: identity.provider.clone(),
            profile: profile.clone(),
            params: outcome.collection(&fields)?.into_iter().collect(),
        })
    } else {
        None
    })
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
    let mut txn = typed.txn();
    let marker = txn.get(&map.default_marker());
    let members = txn.set_members(&typed.set_at(&map));
    let outcome = txn.commit().await?;
    let members = outcome.collection(&members)?;
    if let Some(marked) = outcome.read(&marker)?
        && members.contains(&marked.value)
    {
        return Ok(Some(marked.value));
    }
    // Members arrive in ascending byte order of their encodings on every backend, which for
    // profile ids (verbatim text) is their order.
    Ok(members.into_iter().min())
}

/// One page of the realm's profile ids for the provider (`SSCAN` on Redis, byte order on
/// ordered backends): the first page with [`ListOptions::limit`], the next ones `after`
/// the previous page's `next`.
///
/// # Errors
/// `InvalidArgument` for a zero limit; backend errors.
pub async fn list_profiles(
    typed: &TypedStore,
    realm: &RealmId,
    provider: &ProviderName,
    opts: ListOptions,
) -> Result<SetPage<ProfileId>> {
    typed
        .set_at(&ProfileMapKey::new(realm, provider))
        .scan(opts)
        .await
}

/// The realm asks for a profile its map does not hold (the document's IDOR case).
pub(super) fn unauthorized(realm: &RealmId, provider: &ProviderName, profile: &ProfileId) -> Error {
    Error::new(
        ErrorKind::Unauthorized,
        "the realm does not own the profile it asks for",
    )
    .with_context("realm", realm)
    .with_context("provider", provider)
    .with_context("profile", profile)
}

/// The realm asks for its default and owns no profile for the provider.
pub(super) fn no_profile(realm: &RealmId, provider: &ProviderName) -> Error {
    Error::new(
        ErrorKind::NotFound,
        "the realm has no profile for the provider",
    )
    .with_context("realm", realm)
    .with_context("provider", provider)
}
