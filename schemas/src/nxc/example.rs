//! A realistic example dataset, written through the operations (used by `kvctl demo`).

use super::cluster::{ClusterPoolKey, ClusterProfileMapKey};
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
    let example = example(realm);
    for (new, secret) in example_profiles(&example) {
        create_profile(typed, &new).await?;
        put_pool_secret(typed, &example.provider, &new.profile, &secret).await?;
    }
    Ok(example)
}

/// The same dataset as [`write_example`], in the cluster variant of the layout
/// ([`NxcClusterKeyspace`](super::NxcClusterKeyspace)), for a store on Redis Cluster: each
/// profile's map entry, default marker and instance in one transaction of the realm's group,
/// and each pool secret in its profile's group.
///
/// # Errors
/// As [`write_example`].
pub async fn write_cluster_example(typed: &TypedStore, realm: &RealmId) -> Result<NxcExample> {
    let example = example(realm);
    let map = ClusterProfileMapKey::new(realm, &example.provider);
    for (new, secret) in example_profiles(&example) {
        let instance = typed.map_at(&map.instance(&new.profile));
        let mut txn = typed.txn();
        for (field, value) in &new.params {
            txn.map_put(&instance, field, value);
        }
        txn.set_add(&typed.set_at(&map), &new.profile);
        if new.default {
            txn.put(&map.default_marker(), &new.profile);
        }
        txn.commit().await?;
        let pool = ClusterPoolKey::new(&example.provider, &new.profile);
        typed.put(&pool, &secret).await?;
    }
    Ok(example)
}

fn example(realm: &RealmId) -> NxcExample {
    NxcExample {
        realm: realm.clone(),
        provider: ProviderName::new("Alipay").expect("a valid provider name"),
        profiles: [
            ProfileId::new("app_001").expect("a valid profile id"),
            ProfileId::new("app_002").expect("a valid profile id"),
        ],
    }
}

/// Each profile of the example with its pool secret, the default first.
fn example_profiles(example: &NxcExample) -> Vec<(NewProfile, String)> {
    let realm = &example.realm;
    example
        .profiles
        .iter()
        .enumerate()
        .map(|(i, profile)| {
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
                provider: example.provider.clone(),
                profile: profile.clone(),
                params,
                default: i == 0,
            };
            let secret = format!(
                "-----BEGIN PRIVATE KEY-----\n{profile}-demo-key\n-----END PRIVATE KEY-----\n"
            );
            (new, secret)
        })
        .collect()
}
