//! The shared pool: a provider's secret material per profile, encrypted at rest.

use super::keys::PoolKey;
use super::segments::{ProfileId, ProviderName};
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
    let key = PoolKey {
        provider: provider.clone(),
        profile: profile.clone(),
    };
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
    let key = PoolKey {
        provider: provider.clone(),
        profile: profile.clone(),
    };
    typed.get(&key).await
}
