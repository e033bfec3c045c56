//! The shared pool: a provider's secret material per profile, encrypted at rest.

use super::keys::{PoolKey, ProfileMapKey};
use super::segments::{ProfileId, ProviderName, RealmId};
use keyplane_core::Result;
use keyplane_core::keyspace::TypedStore;

/// Stores `secret` (a private key, a certificate) at `nxc:pool:{provider}:{profile}`,
/// encrypted with the current key of the typed store's
/// [`Keyring`](keyplane_core::keyspace::Keyring) (given with
/// [`TypedStore::with_codec_state`]).
///
/// # Errors
/// `Config` when the typed store has no keyring and `Codec` when encryption fails (nothing
/// written in either case); backend errors.
pub async fn put_pool_secret(
    typed: &TypedStore,
    provider: &ProviderName,
    profile: &ProfileId,
    secret: &str,
) -> Result<()> {
    let key = PoolKey::new(provider, profile);
    typed.put(&key, &secret.to_string()).await?;
    Ok(())
}

/// The decrypted secret at `nxc:pool:{provider}:{profile}`, if any, decrypted with the
/// typed store's keyring.
///
/// # Errors
/// `Config` when the typed store has no keyring; `Codec` when the value does not decrypt
/// with it (unknown key id, tampering); backend errors.
pub async fn pool_secret(
    typed: &TypedStore,
    provider: &ProviderName,
    profile: &ProfileId,
) -> Result<Option<String>> {
    let key = PoolKey::new(provider, profile);
    typed.get(&key).await
}

/// The decrypted secret of `profile` for a realm that owns it: the pool is shared by every
/// realm of the provider, so the realm's map must hold the profile (the same ownership check
/// as [`resolve_profile`](super::resolve_profile); the check and the read are one
/// transaction). `None` when the pool has no secret for the profile.
///
/// # Errors
/// `Unauthorized` when the realm does not own the profile; otherwise as [`pool_secret`].
pub async fn owned_pool_secret(
    typed: &TypedStore,
    realm: &RealmId,
    provider: &ProviderName,
    profile: &ProfileId,
) -> Result<Option<String>> {
    let key = PoolKey::new(provider, profile);
    let map = ProfileMapKey::new(realm, provider);
    let mut txn = typed.txn();
    let owned = txn.set_contains(&typed.set_at(&map), profile);
    let secret = txn.get(&key);
    let outcome = txn.commit().await?;
    if !outcome.collection(&owned)? {
        return Err(super::resolve::unauthorized(realm, provider, profile));
    }
    Ok(outcome.read(&secret)?.map(|v| v.value))
}
