//! A realistic example dataset, written through the operations (used by `kvctl demo`).

use super::pool::put_pool_secret;
use super::profile::create_profile;
use super::segments::{ProfileId, ProviderName, RealmId};
use super::values::NewProfile;
use keyplane_core::Result;
use keyplane_core::keyspace::TypedStore;

/// What [`write_example`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NxcExample {
    /// The realm.
    pub realm: RealmId,
    /// Its one provider.
    pub provider: ProviderName,
    /// The two profiles, the default first.
    pub profiles: [ProfileId; 2],
}

/// Writes one realm (`{realm}`) with one provider (`Alipay`), two profiles (`app_001`, the
/// default, and `app_002`) with their instance parameters, and an encrypted pool secret per
/// profile, encrypted with the typed store's [`Keyring`](keyplane_core::keyspace::Keyring).
///
/// # Errors
/// Backend errors; `Config` when the typed store has no keyring; `Codec` when encryption
/// fails.
pub async fn write_example(typed: &TypedStore, realm: &RealmId) -> Result<NxcExample> {
    let provider = ProviderName::new("Alipay").expect("a valid provider name");
    let profiles = [
        ProfileId::new("app_001").expect("a valid profile id"),
        ProfileId::new("app_002").expect("a valid profile id"),
    ];
    for (i, profile) in profiles.iter().enumerate() {
        let params = [
            ("sub_mchid", format!("190000010{}", i + 1)),
            ("access_token", format!("tok-{realm}-{profile}")),
            (
                "gateway_url",
                "https://openapi.alipay.com/gateway.do".to_string(),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let new = NewProfile {
            realm: realm.clone(),
            provider: provider.clone(),
            profile: profile.clone(),
            params,
            default: i == 0,
        };
        create_profile(typed, &new).await?;
        let secret =
            format!("-----BEGIN PRIVATE KEY-----\n{profile}-demo-key\n-----END PRIVATE KEY-----\n");
        put_pool_secret(typed, &provider, profile, &secret).await?;
    }
    Ok(NxcExample {
        realm: realm.clone(),
        provider,
        profiles,
    })
}
