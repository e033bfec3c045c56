//! nxc operations on every backend: create, resolve with the ownership check (the IDOR
//! case), default resolution, delete, paged listing, the encrypted pool, bad input, the
//! example dataset.

use keyplane_core::keyspace::{EncryptionKey, Key, Keyring, ListOptions, TypedStore};
use keyplane_core::{CollectionOp, ErrorKind, PutOptions, Store};
use keyplane_schemas::nxc::*;
use std::collections::BTreeSet;
use std::sync::Arc;

/// A realm of its own for each case: the nxc layout has no configurable root.
fn realm(tag: &str) -> RealmId {
    RealmId::new(format!("{tag}_{}", uuid::Uuid::new_v4().simple())).unwrap()
}
fn alipay() -> ProviderName {
    ProviderName::new("Alipay").unwrap()
}
fn id(s: &str) -> ProfileId {
    ProfileId::new(s).unwrap()
}
fn params(token: &str) -> InstanceParams {
    [
        ("sub_mchid".to_string(), "1900000109".to_string()),
        ("access_token".to_string(), token.to_string()),
    ]
    .into()
}
async fn create(typed: &TypedStore, realm: &RealmId, profile: &str, default: bool) {
    let new = NewProfile {
        realm: realm.clone(),
        provider: alipay(),
        profile: id(profile),
        params: params(&format!("tok-{profile}")),
        default,
    };
    create_profile(typed, &new).await.unwrap();
}
fn ask(realm: &RealmId, profile: Option<&str>) -> Identity {
    Identity {
        realm: realm.clone(),
        provider: alipay(),
        profile: profile.map(id),
    }
}

/// The document's `MapLayer_ShouldUnifyAuthAndDiscovery`: two profiles, each resolves, and
/// discovery lists both.
async fn create_resolve_and_discover(store: Arc<dyn Store>) {
    let typed = TypedStore::new(store);
    let r = realm("test_realm");
    create(&typed, &r, "app_001", false).await;
    create(&typed, &r, "app_002", false).await;
    let resolved = resolve_profile(&typed, &ask(&r, Some("app_001")))
        .await
        .unwrap();
    assert_eq!(resolved.profile, id("app_001"));
    assert_eq!(resolved.params, params("tok-app_001"));
    let page = list_profiles(&typed, &r, &alipay(), ListOptions::limit(10))
        .await
        .unwrap();
    let all: BTreeSet<_> = page.members.into_iter().collect();
    assert_eq!(all, BTreeSet::from([id("app_001"), id("app_002")]));

    // Creating again replaces the instance parameters (no stale field survives).
    let new = NewProfile {
        realm: r.clone(),
        provider: alipay(),
        profile: id("app_001"),
        params: [("gateway_url".to_string(), "https://gw".to_string())].into(),
        default: false,
    };
    create_profile(&typed, &new).await.unwrap();
    let resolved = resolve_profile(&typed, &ask(&r, Some("app_001")))
        .await
        .unwrap();
    assert_eq!(resolved.params, new.params);
}

/// The document's `MapLayer_ShouldPreventIDOR`: realm B asking for realm A's profile is
/// unauthorized, and learns nothing of its parameters.
async fn another_realms_profile_is_unauthorized(store: Arc<dyn Store>) {
    let typed = TypedStore::new(store);
    let a = realm("realmA");
    let b = realm("realmB");
    create(&typed, &a, "profile1", true).await;
    let err = resolve_profile(&typed, &ask(&b, Some("profile1")))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unauthorized, "{err}");
    assert!(!err.to_string().contains("tok-profile1"));
    // Even when B owns a profile of its own, and for a profile nobody owns.
    create(&typed, &b, "profile2", false).await;
    for asked in ["profile1", "nobody"] {
        let err = resolve_profile(&typed, &ask(&b, Some(asked)))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unauthorized);
    }
    // A resolves its own.
    assert!(
        resolve_profile(&typed, &ask(&a, Some("profile1")))
            .await
            .is_ok()
    );
}

/// The default is the marker, else the smallest profile id; an empty map has none.
async fn default_resolution(store: Arc<dyn Store>) {
    let typed = TypedStore::new(store);
    let r = realm("r");
    let err = resolve_profile(&typed, &ask(&r, None)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert_eq!(default_profile(&typed, &r, &alipay()).await.unwrap(), None);

    // No marker: the smallest id, whatever the creation order.
    for p in ["app_3", "app_1", "app_2"] {
        create(&typed, &r, p, false).await;
    }
    let resolved = resolve_profile(&typed, &ask(&r, None)).await.unwrap();
    assert_eq!(resolved.profile, id("app_1"));
    assert_eq!(resolved.params, params("tok-app_1"));

    // The marker wins.
    set_default_profile(&typed, &r, &alipay(), &id("app_3"))
        .await
        .unwrap();
    assert_eq!(
        resolve_profile(&typed, &ask(&r, None))
            .await
            .unwrap()
            .profile,
        id("app_3")
    );
    // Only a profile of the map can be the default.
    let err = set_default_profile(&typed, &r, &alipay(), &id("elsewhere"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    // A marker naming a profile outside the map (a raced delete) is ignored.
    typed
        .put(
            &ProfileMapKey::new(&r, &alipay()).default_marker(),
            &id("ghost"),
        )
        .await
        .unwrap();
    assert_eq!(
        default_profile(&typed, &r, &alipay()).await.unwrap(),
        Some(id("app_1"))
    );
}

/// Delete removes the profile from the map and its instance, and clears the default only
/// when it names the deleted profile.
async fn delete_clears_only_its_own_default(store: Arc<dyn Store>) {
    let typed = TypedStore::new(store);
    let r = realm("r");
    let map = ProfileMapKey::new(&r, &alipay());
    create(&typed, &r, "app_a", true).await;
    create(&typed, &r, "app_b", false).await;

    // Deleting a profile that is not the default keeps the marker.
    assert!(
        delete_profile(&typed, &r, &alipay(), &id("app_b"))
            .await
            .unwrap()
    );
    assert_eq!(
        typed.get(&map.default_marker()).await.unwrap(),
        Some(id("app_a"))
    );
    assert!(
        typed
            .map_at(&map.instance(&id("app_b")))
            .all()
            .await
            .unwrap()
            .is_empty()
    );
    let err = resolve_profile(&typed, &ask(&r, Some("app_b")))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unauthorized);
    // Deleting it again finds nothing.
    assert!(
        !delete_profile(&typed, &r, &alipay(), &id("app_b"))
            .await
            .unwrap()
    );

    // Deleting the default clears the marker.
    assert!(
        delete_profile(&typed, &r, &alipay(), &id("app_a"))
            .await
            .unwrap()
    );
    assert_eq!(typed.get(&map.default_marker()).await.unwrap(), None);
    assert!(typed.set_at(&map).members().await.unwrap().is_empty());
}

/// Listing pages through a realm's profiles: every profile once across the pages.
async fn list_is_paged(store: Arc<dyn Store>) {
    let typed = TypedStore::new(store);
    let r = realm("r");
    let expected: BTreeSet<ProfileId> = (0..25).map(|i| id(&format!("p{i:02}"))).collect();
    for p in &expected {
        create(&typed, &r, p.as_str(), false).await;
    }
    let mut seen = BTreeSet::new();
    let mut opts = ListOptions::limit(10);
    let mut pages = 0;
    loop {
        let page = list_profiles(&typed, &r, &alipay(), opts.clone())
            .await
            .unwrap();
        pages += 1;
        seen.extend(page.members);
        match page.next {
            Some(next) => opts = opts.after(next),
            None => break,
        }
        assert!(pages < 100, "the scan does not end");
    }
    assert_eq!(seen, expected);
    let err = list_profiles(&typed, &r, &alipay(), ListOptions::limit(0))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

/// Pool secrets are stored encrypted and read back with the keyring only.
async fn pool_is_encrypted(store: Arc<dyn Store>) {
    let ring = Arc::new(Keyring::new("k1", EncryptionKey::generate()).unwrap());
    let typed = TypedStore::new(store.clone()).with_codec_state(ring.clone());
    let provider = ProviderName::new(format!("prov_{}", uuid::Uuid::new_v4().simple())).unwrap();
    let secret = "-----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----\n";
    put_pool_secret(&typed, &provider, &id("app_001"), secret)
        .await
        .unwrap();
    assert_eq!(
        pool_secret(&typed, &provider, &id("app_001"))
            .await
            .unwrap()
            .as_deref(),
        Some(secret)
    );
    let raw = store
        .get(format!("nxc:pool:{provider}:app_001").as_bytes())
        .await
        .unwrap()
        .unwrap();
    assert!(!raw.value.windows(6).any(|w| w == b"MIIEvQ"));
    let stranger = Arc::new(Keyring::new("k1", EncryptionKey::generate()).unwrap());
    let other = typed.clone().with_codec_state(stranger);
    let err = pool_secret(&other, &provider, &id("app_001"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Codec);
    // Without a keyring the key is refused before any read, and nothing is written.
    let bare = TypedStore::new(store.clone());
    let err = pool_secret(&bare, &provider, &id("app_001"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config, "{err}");
    let err = put_pool_secret(&bare, &provider, &id("app_002"), secret)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config, "{err}");
    // The store is shared with other tests, whose writes move its revision: look at the key.
    assert_eq!(
        store
            .get(format!("nxc:pool:{provider}:app_002").as_bytes())
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        pool_secret(&typed, &provider, &id("none")).await.unwrap(),
        None
    );
}

/// Bad input is refused and writes nothing.
async fn bad_input_writes_nothing(store: Arc<dyn Store>) {
    let typed = TypedStore::new(store);
    let r = realm("r");
    for params in [
        InstanceParams::new(),
        [("bad field".to_string(), "v".to_string())].into(),
    ] {
        let new = NewProfile {
            realm: r.clone(),
            provider: alipay(),
            profile: id("app_001"),
            params,
            default: true,
        };
        let err = create_profile(&typed, &new).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    }
    let map = ProfileMapKey::new(&r, &alipay());
    assert!(typed.set_at(&map).members().await.unwrap().is_empty());
    assert_eq!(typed.get(&map.default_marker()).await.unwrap(), None);
}

/// The example dataset: one realm, one provider, two profiles, a default, pool secrets.
async fn example_dataset(store: Arc<dyn Store>) {
    let ring = Arc::new(Keyring::new("demo", EncryptionKey::generate()).unwrap());
    let typed = TypedStore::new(store).with_codec_state(ring);
    let r = realm("demo");
    let example = write_example(&typed, &r).await.unwrap();
    let all = list_profiles(&typed, &r, &example.provider, ListOptions::limit(10))
        .await
        .unwrap();
    assert_eq!(all.members.len(), 2);
    let default = resolve_profile(
        &typed,
        &Identity {
            realm: r.clone(),
            provider: example.provider.clone(),
            profile: None,
        },
    )
    .await
    .unwrap();
    assert_eq!(default.profile, example.profiles[0]);
    assert_eq!(default.params["sub_mchid"], "1900000101");
    for p in &example.profiles {
        assert!(
            pool_secret(&typed, &example.provider, p)
                .await
                .unwrap()
                .unwrap()
                .contains("PRIVATE KEY")
        );
    }
}

/// The document's §5.2 migration: the legacy group HASH (profile fields + `default`) and
/// index SET become the map SET and the default marker; the legacy keys are deleted; a
/// second run does nothing.
async fn legacy_layout_migrates(store: Arc<dyn Store>) {
    let typed = TypedStore::new(store);
    let r = realm("legacy");
    let provider = LegacyProvider::new(alipay()).unwrap();
    let group = LegacyGroupKey {
        provider: provider.clone(),
        realm: r.clone(),
    };
    let index = LegacyIndexKey {
        provider: provider.clone(),
        realm: r.clone(),
    };
    // The legacy layout is read-only: the typed store refuses to write it.
    let hash = typed.map_at(&group);
    let refused = hash.put(&"app_001".to_string(), &"1".to_string()).await;
    assert_eq!(refused.unwrap_err().kind(), ErrorKind::ReadOnly);
    // The legacy service wrote it, as redis-cli would: HSET, SADD, SET.
    let raw = typed.store();
    for (field, value) in [("app_001", "1"), ("app_002", "1"), ("default", "app_002")] {
        raw.collection(CollectionOp::MapPut {
            key: group.encode().into_bytes(),
            field: field.into(),
            value: value.into(),
        })
        .await
        .unwrap();
    }
    let set = typed.set_at(&index);
    for p in ["app_002", "app_003"] {
        raw.collection(CollectionOp::SetAdd {
            key: index.encode().into_bytes(),
            member: p.into(),
        })
        .await
        .unwrap();
    }
    let config = LegacyConfigKey {
        provider: provider.clone(),
        realm: r.clone(),
        profile: id("app_001"),
    };
    raw.put(
        config.encode().as_bytes(),
        b"ciphertext",
        PutOptions::default(),
    )
    .await
    .unwrap();

    let done = migrate_legacy(&typed, &provider, &r).await.unwrap();
    assert_eq!(
        done.profiles,
        BTreeSet::from([id("app_001"), id("app_002"), id("app_003")])
    );
    assert_eq!(done.default, Some(id("app_002")));
    let map = ProfileMapKey::new(&r, &alipay());
    assert_eq!(
        typed.set_at(&map).members().await.unwrap(),
        [id("app_001"), id("app_002"), id("app_003")]
    );
    assert_eq!(
        default_profile(&typed, &r, &alipay()).await.unwrap(),
        Some(id("app_002"))
    );
    assert!(hash.all().await.unwrap().is_empty());
    assert!(set.members().await.unwrap().is_empty());
    assert!(
        typed.exists(&config).await.unwrap(),
        "configs are left alone"
    );

    // Again: nothing left to migrate, nothing changes.
    let again = migrate_legacy(&typed, &provider, &r).await.unwrap();
    assert_eq!(again, LegacyMigration::default());
    assert_eq!(typed.set_at(&map).members().await.unwrap().len(), 3);

    // A legacy id that is not a valid profile id stops the migration before any write.
    let r2 = realm("legacy");
    let bad = typed.map_at(&LegacyGroupKey {
        provider: provider.clone(),
        realm: r2.clone(),
    });
    for field in ["app_ok", "bad id"] {
        raw.collection(CollectionOp::MapPut {
            key: bad.key().to_vec(),
            field: field.into(),
            value: "1".into(),
        })
        .await
        .unwrap();
    }
    let err = migrate_legacy(&typed, &provider, &r2).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidValue);
    assert!(
        typed
            .set_at(&ProfileMapKey::new(&r2, &alipay()))
            .members()
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(bad.all().await.unwrap().len(), 2);
}

/// The map layer's readers (an L1 cache, seed 002 §7.3) follow a realm with one watch: a
/// profile created shows as its id added to the realm's SET and its fields set in its HASH,
/// in the batch of the create; a profile deleted as its id removed and its HASH deleted; the
/// last one deleted as the SET deleted.
async fn a_watch_follows_profiles_of_a_realm(store: Arc<dyn Store>) {
    use futures::StreamExt;
    use keyplane_core::{CollectionChange, CollectionKind, Event, WatchBatch, WatchOptions};
    let typed = TypedStore::new(store.clone());
    let r = realm("watched");
    let mut watch = store
        .watch(WatchOptions::prefix(format!("nxc:map:{r}:")).with_collections())
        .await
        .unwrap();
    let mut instances = store
        .watch(WatchOptions::prefix(format!("nxc:inst:{r}:")).with_collections())
        .await
        .unwrap();
    async fn next(w: &mut keyplane_core::WatchStream) -> WatchBatch {
        tokio::time::timeout(std::time::Duration::from_secs(20), w.next())
            .await
            .expect("a batch within 20 s")
            .expect("the watch goes on")
            .expect("a batch")
    }
    let set_changes = |batch: &WatchBatch| -> Vec<CollectionChange> {
        batch
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Collection(c) if c.kind == CollectionKind::Set => Some(c.change.clone()),
                _ => None,
            })
            .collect()
    };
    let member = |s: &str| CollectionChange::SetAdd {
        member: s.as_bytes().to_vec(),
    };

    create(&typed, &r, "app_001", true).await;
    let batch = next(&mut watch).await;
    assert_eq!(set_changes(&batch), vec![member("app_001")]);
    assert!(
        batch
            .events
            .iter()
            .any(|e| matches!(e, Event::Put { entry, .. }
            if entry.key == format!("nxc:map:{r}:Alipay:default").into_bytes())),
        "the default marker is in the same batch: {batch:?}"
    );
    let fields = next(&mut instances).await;
    assert_eq!(fields.revision, batch.revision);
    assert!(
        fields
            .events
            .iter()
            .all(|e| matches!(e, Event::Collection(c)
        if c.kind == CollectionKind::Map
            && matches!(c.change, CollectionChange::MapPut { prev: None, .. })))
    );
    assert_eq!(fields.events.len(), 2, "{fields:?}");

    create(&typed, &r, "app_002", false).await;
    assert_eq!(
        set_changes(&next(&mut watch).await),
        vec![member("app_002")]
    );
    next(&mut instances).await;

    assert!(
        delete_profile(&typed, &r, &alipay(), &id("app_002"))
            .await
            .unwrap()
    );
    assert_eq!(
        set_changes(&next(&mut watch).await),
        vec![CollectionChange::SetRemove {
            member: b"app_002".to_vec()
        }]
    );
    let gone = next(&mut instances).await;
    assert!(
        matches!(&gone.events[..], [Event::Collection(c)]
        if c.change == CollectionChange::Deleted),
        "{gone:?}"
    );

    // The last profile: its id leaves an empty SET, which no longer exists.
    assert!(
        delete_profile(&typed, &r, &alipay(), &id("app_001"))
            .await
            .unwrap()
    );
    let batch = next(&mut watch).await;
    assert_eq!(set_changes(&batch), vec![CollectionChange::Deleted]);
    assert!(
        batch
            .events
            .iter()
            .any(|e| matches!(e, Event::Delete { .. })),
        "the marker that named it is deleted in the same batch: {batch:?}"
    );
}

keyplane_tests::on_every_backend!(
    legacy_layout_migrates,
    create_resolve_and_discover,
    another_realms_profile_is_unauthorized,
    default_resolution,
    delete_clears_only_its_own_default,
    list_is_paged,
    pool_is_encrypted,
    bad_input_writes_nothing,
    example_dataset,
    a_watch_follows_profiles_of_a_realm,
);
