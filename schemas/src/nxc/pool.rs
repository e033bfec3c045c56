//! The shared pool: a provider's secret material per profile, encrypted at rest.

use super::keys::PoolKey;
use super::segments::{ProfileId, ProviderName};
use kv_core::Result;
use kv_core::keyspace::{Encrypted, Keyring, Text, TypedStore};
use std::sync::Arc;

fn codec(keyring: &Arc<Keyring>) -> Encrypted<Text> {
    Encrypted::new(keyring.clone(), Text)
}

/// Stores `secret` (a private key, a certificate) at `nxc:pool:{provider}:{profile}`,
/// encrypted with the keyring's current key.
///
/// # Errors
/// `Codec` when encryption fails (nothing written); backend errors.
pub async fn put_pool_secret(
    typed: &TypedStore,
    keyring: &Arc<Keyring>,
    provider: &ProviderName,
    profile: &ProfileId,
    secret: &str,
) -> Result<()> {
    let key = PoolKey {
        provider: provider.clone(),
        profile: profile.clone(),
    };
    typed
        .put_with(&codec(keyring), &key, &secret.to_string())
        .await?;
    Ok(())
}

/// The decrypted secret at `nxc:pool:{provider}:{profile}`, if any.
///
/// # Errors
/// `Codec` when the value does not decrypt with the keyring (unknown key id, tampering);
/// backend errors.
pub async fn pool_secret(
    typed: &TypedStore,
    keyring: &Arc<Keyring>,
    provider: &ProviderName,
    profile: &ProfileId,
) -> Result<Option<String>> {
    let key = PoolKey {
        provider: provider.clone(),
        profile: profile.clone(),
    };
    typed.get_with(&codec(keyring), &key).await
}
