//! nxc: realm `test_realm` with the provider `Alipay`, two profiles (`app_001` the default,
//! `app_002`), their instance parameters and encrypted pool secrets.

use super::step::Step;
use keyplane::keyspace::{EncryptionKey, Key, Keyring, ListOptions, TypedStore};
use keyplane::{CollectionOp, CollectionResult};
use keyplane_schemas::nxc::{
    ClusterProfileMapKey, DefaultProfileKey, ProfileMapKey, ProviderName, RealmId, list_profiles,
    write_cluster_example, write_example,
};
use std::sync::Arc;

/// The demo's encryption key for pool secrets. It protects demo data only and is public by
/// design; real deployments load their keyring from a secret store.
const DEMO_KEY: [u8; 32] = *b"kvctl-demo-key-not-for-real-use!";

pub(crate) async fn write(store: &TypedStore) -> keyplane::Result<Step> {
    let realm = RealmId::new("test_realm").map_err(invalid)?;
    let provider = ProviderName::new("Alipay").map_err(invalid)?;
    let map = ProfileMapKey::new(&realm, &provider);
    let written = if store
        .exists(&DefaultProfileKey {
            realm: realm.clone(),
            provider: provider.clone(),
        })
        .await?
    {
        false
    } else {
        let keyring = Arc::new(Keyring::new("demo-1", EncryptionKey::from_bytes(DEMO_KEY))?);
        write_example(&store.clone().with_codec_state(keyring), &realm).await?;
        true
    };
    // The map and instance keys are Redis SET and HASH values (emulated elsewhere), which
    // key listings do not show: the tree gets them from their own reads.
    let profiles = list_profiles(store, &realm, &provider, ListOptions::limit(100))
        .await?
        .members;
    let names: Vec<String> = profiles.iter().map(|p| p.to_string()).collect();
    let mut collections = vec![(
        map.encode(),
        format!("nxc.profile-map  SET {{{}}}", names.join(", ")),
    )];
    for profile in &profiles {
        let key = map.instance(profile).encode();
        let op = CollectionOp::MapGetAll {
            key: key.clone().into_bytes(),
        };
        let fields = match store.store().collection(op).await? {
            CollectionResult::Fields(fields) => fields.len(),
            _ => 0,
        };
        collections.push((key, format!("nxc.instance  HASH ({fields} fields)")));
    }
    let what = "realm test_realm, provider Alipay, profiles app_001 (default) and app_002";
    Ok(Step {
        schema: "nxc",
        written,
        what,
        collections,
    })
}

/// On Redis Cluster: the same realm in nxc's cluster variant (`nxc:map:{test_realm}:Alipay`,
/// grouped by realm; pool secrets grouped by profile).
pub(crate) async fn write_cluster(store: &TypedStore) -> keyplane::Result<Step> {
    let realm = RealmId::new("test_realm").map_err(invalid)?;
    let provider = ProviderName::new("Alipay").map_err(invalid)?;
    let map = ClusterProfileMapKey::new(&realm, &provider);
    let written = if store.exists(&map.default_marker()).await? {
        false
    } else {
        let keyring = Arc::new(Keyring::new("demo-1", EncryptionKey::from_bytes(DEMO_KEY))?);
        write_cluster_example(&store.clone().with_codec_state(keyring), &realm).await?;
        true
    };
    let mut profiles = store.set_at(&map).members().await?;
    profiles.sort();
    let names: Vec<String> = profiles.iter().map(|p| p.to_string()).collect();
    let mut collections = vec![(
        map.encode(),
        format!("nxc-cluster.profile-map  SET {{{}}}", names.join(", ")),
    )];
    for profile in &profiles {
        let key = map.instance(profile);
        let fields = store.map_at(&key).all().await?.len();
        collections.push((
            key.encode(),
            format!("nxc-cluster.instance  HASH ({fields} fields)"),
        ));
    }
    Ok(Step {
        schema: "nxc",
        written,
        what: "realm {test_realm} (one group), provider Alipay, profiles app_001 (default) and app_002",
        collections,
    })
}

fn invalid(e: impl std::fmt::Display) -> keyplane::Error {
    keyplane::Error::invalid_argument(e.to_string())
}
