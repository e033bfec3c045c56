//! nxc operations racing each other on every backend: choosing a profile as the default
//! while it is deleted never leaves the default marker naming a profile outside the map.

use keyplane_core::keyspace::TypedStore;
use keyplane_core::{ErrorKind, Store};
use keyplane_schemas::nxc::*;
use std::sync::Arc;

fn realm(tag: &str) -> RealmId {
    RealmId::new(format!("{tag}_{}", uuid::Uuid::new_v4().simple())).unwrap()
}
fn alipay() -> ProviderName {
    ProviderName::new("Alipay").unwrap()
}
fn id(s: &str) -> ProfileId {
    ProfileId::new(s).unwrap()
}

async fn create(typed: &TypedStore, realm: &RealmId, profile: &str, default: bool) {
    let new = NewProfile {
        realm: realm.clone(),
        provider: alipay(),
        profile: id(profile),
        params: [("sub_mchid".to_string(), format!("mch-{profile}"))].into(),
        default,
    };
    create_profile(typed, &new).await.unwrap();
}

/// 100 rounds on one realm: a new profile, then two `set_default_profile` and one
/// `delete_profile` of it at once. Each choice either wins (and the delete, coming after,
/// clears the marker) or finds the profile gone (`NotFound`, marker untouched); after every
/// round a marker, if any, names a profile of the map.
async fn set_default_racing_delete_keeps_the_marker_in_the_map(store: Arc<dyn Store>) {
    let typed = TypedStore::new(store);
    let r = realm("race");
    let map = ProfileMapKey::new(&r, &alipay());
    create(&typed, &r, "keep", true).await;
    for round in 0..100 {
        let profile = id(&format!("p{round}"));
        create(&typed, &r, profile.as_str(), false).await;
        let choose = |typed: TypedStore, realm: RealmId, profile: ProfileId| {
            tokio::spawn(
                async move { set_default_profile(&typed, &realm, &alipay(), &profile).await },
            )
        };
        let first = choose(typed.clone(), r.clone(), profile.clone());
        let delete = {
            let (typed, r, profile) = (typed.clone(), r.clone(), profile.clone());
            tokio::spawn(async move { delete_profile(&typed, &r, &alipay(), &profile).await })
        };
        let second = choose(typed.clone(), r.clone(), profile.clone());
        for chosen in [first, second] {
            match chosen.await.unwrap() {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => panic!("round {round}: set_default_profile: {e}"),
            }
        }
        assert!(
            delete.await.unwrap().unwrap(),
            "round {round}: the profile was in the map"
        );
        let members = typed.set_at(&map).members().await.unwrap();
        if let Some(marker) = typed.get(&map.default_marker()).await.unwrap() {
            assert!(
                members.contains(&marker),
                "round {round}: the marker names {marker}, not in the map {members:?}"
            );
        }
        assert!(!members.contains(&profile), "round {round}: deleted");
    }
    // Alone, a choice of a profile of the map writes the marker and one of a deleted profile
    // writes nothing.
    set_default_profile(&typed, &r, &alipay(), &id("keep"))
        .await
        .unwrap();
    let err = set_default_profile(&typed, &r, &alipay(), &id("p0"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert_eq!(
        typed.get(&map.default_marker()).await.unwrap(),
        Some(id("keep"))
    );
}

keyplane_tests::on_every_backend!(set_default_racing_delete_keeps_the_marker_in_the_map);
