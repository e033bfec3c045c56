//! nxc over data the C# services wrote with plain Redis commands (`SADD`, `HSET`, `SET`) in
//! the document's exact layout: the library's operations read it, change it and delete it
//! as the document describes, and plain commands then see the result. An operation that
//! cannot do its whole job returns an error and leaves the raw data as it was.

use keyplane_core::ErrorKind;
use keyplane_core::keyspace::{EncryptionKey, Keyring, ListOptions, TypedStore};
use keyplane_schemas::nxc::*;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

type Con = redis::aio::MultiplexedConnection;

/// One realm of its own on the shared harness Redis, provider `WeChat`, with a raw
/// connection beside the store.
struct Fixture {
    typed: TypedStore,
    con: Con,
    realm: RealmId,
    /// `nxc:map:{realm}:WeChat`
    map: String,
    /// `nxc:map:{realm}:WeChat:default`
    marker: String,
}

async fn fixture() -> Option<Fixture> {
    let (store, con) = keyplane_tests::backends::redis_with_connection().await?;
    let realm = RealmId::new(format!("r_{}", uuid::Uuid::new_v4().simple())).unwrap();
    let map = format!("nxc:map:{realm}:WeChat");
    Some(Fixture {
        typed: TypedStore::new(store),
        con,
        marker: format!("{map}:default"),
        map,
        realm,
    })
}

impl Fixture {
    /// `nxc:inst:{realm}:WeChat:{profile}`
    fn inst(&self, profile: &str) -> String {
        format!("nxc:inst:{}:WeChat:{profile}", self.realm)
    }

    /// One raw command, as redis-cli or the C# service would send it.
    async fn raw<T: redis::FromRedisValue>(&mut self, args: &[&str]) -> T {
        let mut cmd = redis::cmd(args[0]);
        for arg in &args[1..] {
            cmd.arg(*arg);
        }
        cmd.query_async(&mut self.con)
            .await
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    async fn members(&mut self, key: &str) -> BTreeSet<String> {
        self.raw(&["SMEMBERS", key]).await
    }

    async fn fields(&mut self, key: &str) -> BTreeMap<String, String> {
        self.raw(&["HGETALL", key]).await
    }

    async fn exists(&mut self, key: &str) -> bool {
        self.raw::<i64>(&["EXISTS", key]).await == 1
    }

    async fn ask(&self, profile: Option<&str>) -> keyplane_core::Result<ResolvedProfile> {
        let identity = Identity {
            realm: self.realm.clone(),
            provider: wechat(),
            profile: profile.map(id),
        };
        resolve_profile(&self.typed, &identity).await
    }

    /// The task's realm: `SADD map p_a p_z`, an instance HASH each, `SET marker p_z`.
    async fn write_two_profiles(&mut self) {
        let (map, marker) = (self.map.clone(), self.marker.clone());
        let (inst_a, inst_z) = (self.inst("p_a"), self.inst("p_z"));
        let _: i64 = self.raw(&["SADD", &map, "p_a", "p_z"]).await;
        let _: i64 = self.raw(&["HSET", &inst_z, "sub_mchid", "222"]).await;
        let _: i64 = self.raw(&["HSET", &inst_a, "sub_mchid", "111"]).await;
        let _: () = self.raw(&["SET", &marker, "p_z"]).await;
    }
}

fn wechat() -> ProviderName {
    ProviderName::new("WeChat").unwrap()
}

fn id(s: &str) -> ProfileId {
    ProfileId::new(s).unwrap()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn params(pairs: &[(&str, &str)]) -> InstanceParams {
    pairs
        .iter()
        .map(|(f, v)| (f.to_string(), v.to_string()))
        .collect()
}

fn new_profile(f: &Fixture, profile: &str, pairs: &[(&str, &str)], default: bool) -> NewProfile {
    NewProfile {
        realm: f.realm.clone(),
        provider: wechat(),
        profile: id(profile),
        params: params(pairs),
        default,
    }
}

/// The raw marker names the default (`GET map:default`), not the smallest id (§4.2
/// `ResolveDefaultProfileAsync`); ownership is the raw SET's `SISMEMBER`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_marker_names_the_default() {
    let Some(mut f) = fixture().await else { return };
    f.write_two_profiles().await;

    assert_eq!(
        default_profile(&f.typed, &f.realm, &wechat())
            .await
            .unwrap(),
        Some(id("p_z"))
    );
    let resolved = f.ask(None).await.unwrap();
    assert_eq!(resolved.profile, id("p_z"));
    assert_eq!(resolved.params, params(&[("sub_mchid", "222")]));
    // A named profile of the raw map resolves with its raw fields.
    let resolved = f.ask(Some("p_a")).await.unwrap();
    assert_eq!(resolved.params, params(&[("sub_mchid", "111")]));
    // Discovery is SMEMBERS of the raw map.
    let page = list_profiles(&f.typed, &f.realm, &wechat(), ListOptions::limit(10))
        .await
        .unwrap();
    let listed: BTreeSet<ProfileId> = page.members.into_iter().collect();
    assert_eq!(listed, BTreeSet::from([id("p_a"), id("p_z")]));
    // An instance HASH without a map entry is not owned (the IDOR check).
    let stray = f.inst("p_stray");
    let _: i64 = f
        .raw(&["HSET", &stray, "sub_mchid", "stray-mchid-value"])
        .await;
    let err = f.ask(Some("p_stray")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unauthorized, "{err}");
    assert!(!err.to_string().contains("stray-mchid-value"), "{err}");

    // A raw marker naming a profile outside the map is ignored: the smallest id.
    let marker = f.marker.clone();
    let _: () = f.raw(&["SET", &marker, "p_ghost"]).await;
    assert_eq!(f.ask(None).await.unwrap().profile, id("p_a"));
    // Another program deleting the marker falls back the same way.
    let _: () = f.raw(&["SET", &marker, "p_z"]).await;
    assert_eq!(f.ask(None).await.unwrap().profile, id("p_z"));
    let _: i64 = f.raw(&["DEL", &marker]).await;
    assert_eq!(f.ask(None).await.unwrap().profile, id("p_a"));
}

/// Deleting the raw default removes it from the raw map, deletes its raw instance and
/// clears the raw marker (§4.2 `DeleteAsync`); the shared pool entry stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_raw_default_clears_the_raw_marker() {
    let Some(mut f) = fixture().await else { return };
    f.write_two_profiles().await;
    let pool = "nxc:pool:WeChat:p_z".to_string();
    let _: () = f.raw(&["SET", &pool, "sealed-by-the-service"]).await;

    assert!(
        delete_profile(&f.typed, &f.realm, &wechat(), &id("p_z"))
            .await
            .unwrap()
    );
    let (map, marker, inst_z, inst_a) = (
        f.map.clone(),
        f.marker.clone(),
        f.inst("p_z"),
        f.inst("p_a"),
    );
    assert_eq!(f.raw::<i64>(&["SISMEMBER", &map, "p_z"]).await, 0);
    assert!(!f.exists(&inst_z).await, "the instance HASH is deleted");
    assert!(!f.exists(&marker).await, "the marker named p_z");
    assert_eq!(f.members(&map).await, set(&["p_a"]));
    assert_eq!(f.fields(&inst_a).await, params(&[("sub_mchid", "111")]));
    assert!(f.exists(&pool).await, "the pool is shared and left alone");
    assert_eq!(
        default_profile(&f.typed, &f.realm, &wechat())
            .await
            .unwrap(),
        Some(id("p_a"))
    );
    // Deleting it again finds nothing.
    assert!(
        !delete_profile(&f.typed, &f.realm, &wechat(), &id("p_z"))
            .await
            .unwrap()
    );
}

/// Deleting a raw profile the marker does not name keeps the raw marker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_raw_non_default_keeps_the_raw_marker() {
    let Some(mut f) = fixture().await else { return };
    f.write_two_profiles().await;

    assert!(
        delete_profile(&f.typed, &f.realm, &wechat(), &id("p_a"))
            .await
            .unwrap()
    );
    let (map, marker, inst_a, inst_z) = (
        f.map.clone(),
        f.marker.clone(),
        f.inst("p_a"),
        f.inst("p_z"),
    );
    assert_eq!(f.raw::<i64>(&["SISMEMBER", &map, "p_a"]).await, 0);
    assert!(!f.exists(&inst_a).await);
    assert_eq!(f.raw::<String>(&["GET", &marker]).await, "p_z");
    assert_eq!(f.members(&map).await, set(&["p_z"]));
    assert_eq!(f.fields(&inst_z).await, params(&[("sub_mchid", "222")]));
    assert_eq!(f.ask(None).await.unwrap().profile, id("p_z"));
}

/// Creating over a raw profile replaces its instance HASH: exactly the new fields remain
/// (`create_profile`: "previous fields dropped"); the raw map and marker are updated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_over_a_raw_profile_leaves_exactly_the_new_fields() {
    let Some(mut f) = fixture().await else { return };
    let (map, marker, inst_a) = (f.map.clone(), f.marker.clone(), f.inst("p_a"));
    let _: i64 = f.raw(&["SADD", &map, "p_a", "p_z"]).await;
    let _: i64 = f.raw(&["HSET", &inst_a, "old1", "x", "old2", "y"]).await;
    let _: () = f.raw(&["SET", &marker, "p_z"]).await;

    // Not the default: the raw marker stays.
    let new = new_profile(&f, "p_a", &[("sub_mchid", "333"), ("token", "t1")], false);
    create_profile(&f.typed, &new).await.unwrap();
    assert_eq!(f.fields(&inst_a).await, new.params);
    assert_eq!(f.members(&map).await, set(&["p_a", "p_z"]));
    assert_eq!(f.raw::<String>(&["GET", &marker]).await, "p_z");

    // The default: the raw marker now names p_a.
    let new = new_profile(&f, "p_a", &[("gateway_url", "https://gw")], true);
    create_profile(&f.typed, &new).await.unwrap();
    assert_eq!(f.fields(&inst_a).await, new.params);
    assert_eq!(f.raw::<String>(&["GET", &marker]).await, "p_a");
    assert_eq!(f.ask(None).await.unwrap().params, new.params);

    // A brand-new profile joins the raw SET beside the raw members.
    let new = new_profile(&f, "p_new", &[("sub_mchid", "444")], false);
    create_profile(&f.typed, &new).await.unwrap();
    assert_eq!(f.members(&map).await, set(&["p_a", "p_new", "p_z"]));
    let inst_new = f.inst("p_new");
    assert_eq!(f.raw::<String>(&["TYPE", &inst_new]).await, "hash");
}

/// Choosing the default of a realm written raw: the marker is a plain string another
/// program reads with `GET`; only a member of the raw map can be chosen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_default_on_a_raw_realm() {
    let Some(mut f) = fixture().await else { return };
    let (map, marker) = (f.map.clone(), f.marker.clone());
    let _: i64 = f.raw(&["SADD", &map, "p_a", "p_z"]).await;

    // No marker yet.
    set_default_profile(&f.typed, &f.realm, &wechat(), &id("p_z"))
        .await
        .unwrap();
    assert_eq!(f.raw::<String>(&["GET", &marker]).await, "p_z");
    assert_eq!(f.raw::<String>(&["TYPE", &marker]).await, "string");
    // Over a marker another program wrote.
    let _: () = f.raw(&["SET", &marker, "p_z"]).await;
    set_default_profile(&f.typed, &f.realm, &wechat(), &id("p_a"))
        .await
        .unwrap();
    assert_eq!(f.raw::<String>(&["GET", &marker]).await, "p_a");
    assert_eq!(
        default_profile(&f.typed, &f.realm, &wechat())
            .await
            .unwrap(),
        Some(id("p_a"))
    );
    // A profile outside the raw map: NotFound, the raw marker untouched.
    let err = set_default_profile(&f.typed, &f.realm, &wechat(), &id("p_other"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert_eq!(f.raw::<String>(&["GET", &marker]).await, "p_a");
    // A member another program added a moment ago can be chosen.
    let _: i64 = f.raw(&["SADD", &map, "p_later"]).await;
    set_default_profile(&f.typed, &f.realm, &wechat(), &id("p_later"))
        .await
        .unwrap();
    assert_eq!(f.raw::<String>(&["GET", &marker]).await, "p_later");
}

/// The document's old layout (§1), written raw, migrates as its §5.2 script does: group
/// HASH fields and index SET members join the map, the group's `default` field becomes the
/// marker, the group and index are deleted, the config strings stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_legacy_layout_migrates() {
    let Some(mut f) = fixture().await else { return };
    let realm = f.realm.to_string();
    let group = format!("nexus:config:group:WeChat:{realm}");
    let index = format!("nexus:config:index:WeChat:{realm}");
    let config = format!("nexus:config:WeChat:{realm}:p_1");
    let _: i64 = f
        .raw(&["HSET", &group, "p_1", "1", "p_2", "1", "default", "p_2"])
        .await;
    let _: i64 = f.raw(&["SADD", &index, "p_2", "p_3"]).await;
    let _: () = f.raw(&["SET", &config, "ciphertext"]).await;
    // The new map already holds a profile another service added.
    let map = f.map.clone();
    let _: i64 = f.raw(&["SADD", &map, "p_0"]).await;

    let provider = LegacyProvider::new(wechat()).unwrap();
    let done = migrate_legacy(&f.typed, &provider, &f.realm).await.unwrap();
    assert_eq!(
        done.profiles,
        BTreeSet::from([id("p_1"), id("p_2"), id("p_3")])
    );
    assert_eq!(done.default, Some(id("p_2")));
    assert_eq!(f.members(&map).await, set(&["p_0", "p_1", "p_2", "p_3"]));
    let marker = f.marker.clone();
    assert_eq!(f.raw::<String>(&["GET", &marker]).await, "p_2");
    assert!(!f.exists(&group).await, "the legacy group is deleted");
    assert!(!f.exists(&index).await, "the legacy index is deleted");
    assert_eq!(f.raw::<String>(&["GET", &config]).await, "ciphertext");
    assert_eq!(f.ask(None).await.unwrap().profile, id("p_2"));

    // Again: nothing left to migrate, nothing changes.
    let again = migrate_legacy(&f.typed, &provider, &f.realm).await.unwrap();
    assert_eq!(again, LegacyMigration::default());
    assert_eq!(f.members(&map).await, set(&["p_0", "p_1", "p_2", "p_3"]));

    // A raw legacy id that is not a valid profile id stops before any write.
    let Some(mut g) = fixture().await else { return };
    let realm = g.realm.to_string();
    let group = format!("nexus:config:group:WeChat:{realm}");
    let _: i64 = g.raw(&["HSET", &group, "p_ok", "1", "bad id", "1"]).await;
    let err = migrate_legacy(&g.typed, &provider, &g.realm)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidValue, "{err}");
    let map = g.map.clone();
    assert!(!g.exists(&map).await);
    assert_eq!(g.fields(&group).await.len(), 2);
}

/// A raw STRING where the instance HASH belongs (another program's data, not an nxc
/// instance): create_profile refuses with `WrongType` and writes nothing, neither the
/// instance nor the map nor the marker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_over_a_raw_string_instance_is_wrong_type() {
    let Some(mut f) = fixture().await else { return };
    let (map, marker, inst_a) = (f.map.clone(), f.marker.clone(), f.inst("p_a"));
    let _: () = f.raw(&["SET", &inst_a, "a-string-not-a-hash"]).await;
    let _: i64 = f.raw(&["SADD", &map, "p_z"]).await;

    let new = new_profile(&f, "p_a", &[("sub_mchid", "333")], true);
    let err = create_profile(&f.typed, &new).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WrongType, "{err}");
    assert_eq!(
        f.raw::<String>(&["GET", &inst_a]).await,
        "a-string-not-a-hash"
    );
    assert_eq!(f.members(&map).await, set(&["p_z"]));
    assert!(!f.exists(&marker).await);
}

/// A raw STRING where the map SET belongs: every operation that needs the map is an error
/// (`WrongType`), never a partial success, and the raw data stays as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_string_map_is_wrong_type_everywhere() {
    let Some(mut f) = fixture().await else { return };
    let (map, marker, inst_a) = (f.map.clone(), f.marker.clone(), f.inst("p_a"));
    let _: () = f.raw(&["SET", &map, "p_a"]).await;
    let _: i64 = f.raw(&["HSET", &inst_a, "sub_mchid", "111"]).await;

    let new = new_profile(&f, "p_b", &[("sub_mchid", "333")], true);
    let err = create_profile(&f.typed, &new).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WrongType, "create: {err}");
    let inst_b = f.inst("p_b");
    assert!(
        !f.exists(&inst_b).await,
        "no instance without its map entry"
    );
    assert!(!f.exists(&marker).await);

    let err = delete_profile(&f.typed, &f.realm, &wechat(), &id("p_a"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WrongType, "delete: {err}");
    assert_eq!(f.fields(&inst_a).await, params(&[("sub_mchid", "111")]));

    let err = f.ask(Some("p_a")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WrongType, "resolve: {err}");
    let err = default_profile(&f.typed, &f.realm, &wechat())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WrongType, "default: {err}");
    let err = set_default_profile(&f.typed, &f.realm, &wechat(), &id("p_a"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WrongType, "set default: {err}");
    assert!(!f.exists(&marker).await);
    assert_eq!(f.raw::<String>(&["GET", &map]).await, "p_a");
}

/// A raw HASH where the marker STRING belongs names no profile: choosing a default over
/// it is `WrongType` and keeps it; deleting a profile does its whole job (map entry and
/// instance) and leaves the HASH, which is not a marker naming the profile, as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_hash_marker_is_never_overwritten() {
    let Some(mut f) = fixture().await else { return };
    let (map, marker, inst_a) = (f.map.clone(), f.marker.clone(), f.inst("p_a"));
    let _: i64 = f.raw(&["SADD", &map, "p_a", "p_b"]).await;
    let _: i64 = f.raw(&["HSET", &inst_a, "sub_mchid", "111"]).await;
    let _: i64 = f.raw(&["HSET", &marker, "profile", "p_a"]).await;

    let err = set_default_profile(&f.typed, &f.realm, &wechat(), &id("p_a"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WrongType, "set default: {err}");
    assert_eq!(f.fields(&marker).await, params(&[("profile", "p_a")]));
    let new = new_profile(&f, "p_c", &[("sub_mchid", "333")], true);
    let err = create_profile(&f.typed, &new).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WrongType, "create: {err}");
    let inst_c = f.inst("p_c");
    assert!(!f.exists(&inst_c).await);
    assert_eq!(f.members(&map).await, set(&["p_a", "p_b"]));

    assert!(
        delete_profile(&f.typed, &f.realm, &wechat(), &id("p_a"))
            .await
            .unwrap()
    );
    assert_eq!(f.members(&map).await, set(&["p_b"]));
    assert!(!f.exists(&inst_a).await);
    assert_eq!(f.fields(&marker).await, params(&[("profile", "p_a")]));
}

/// Raw writes interleaved with the library's own: each side sees the other's latest
/// state, whoever wrote the key first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_writes_interleaved_with_library_writes() {
    let Some(mut f) = fixture().await else { return };
    let (map, marker) = (f.map.clone(), f.marker.clone());
    let (inst_a, inst_z) = (f.inst("p_a"), f.inst("p_z"));
    create_profile(
        &f.typed,
        &new_profile(&f, "p_a", &[("sub_mchid", "111")], true),
    )
    .await
    .unwrap();
    // The C# service adds p_z and makes it the default.
    let _: i64 = f.raw(&["SADD", &map, "p_z"]).await;
    let _: i64 = f.raw(&["HSET", &inst_z, "sub_mchid", "222"]).await;
    let _: () = f.raw(&["SET", &marker, "p_z"]).await;
    assert_eq!(f.ask(None).await.unwrap().profile, id("p_z"));
    // The library deletes p_z, clearing the marker the service wrote.
    assert!(
        delete_profile(&f.typed, &f.realm, &wechat(), &id("p_z"))
            .await
            .unwrap()
    );
    assert!(!f.exists(&marker).await);
    assert!(
        !f.exists(&inst_z).await,
        "the service's instance HASH is deleted"
    );
    // The service changes a field the library wrote.
    let _: i64 = f.raw(&["HSET", &inst_a, "sub_mchid", "112"]).await;
    assert_eq!(
        f.ask(Some("p_a")).await.unwrap().params,
        params(&[("sub_mchid", "112")])
    );
    // The service revokes p_a from the map: the library no longer resolves it, and a
    // delete reports it was not in the map but still removes the instance.
    let _: i64 = f.raw(&["SREM", &map, "p_a"]).await;
    let err = f.ask(Some("p_a")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unauthorized);
    assert!(
        !delete_profile(&f.typed, &f.realm, &wechat(), &id("p_a"))
            .await
            .unwrap()
    );
    assert!(!f.exists(&inst_a).await);
    assert!(
        !f.exists(&map).await,
        "an empty SET does not exist in Redis"
    );
    assert_eq!(
        f.ask(None).await.unwrap_err().kind(),
        ErrorKind::NotFound,
        "no profile left"
    );
}

/// A pool entry the service sealed with the shared keyring and wrote with `SET` decrypts;
/// a plaintext one written raw is refused (`Codec`), never handed out as a secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_pool_entries() {
    let Some(mut f) = fixture().await else { return };
    let ring = Arc::new(Keyring::new("pool-1", EncryptionKey::generate()).unwrap());
    let typed = f.typed.clone().with_codec_state(ring.clone());
    // A provider of its own: pool keys have no realm.
    let provider = ProviderName::new(format!("prov_{}", uuid::Uuid::new_v4().simple())).unwrap();
    let secret = "-----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----\n";
    let sealed = format!("nxc:pool:{provider}:p_a");
    // Sealed for its key, as the envelope format requires.
    let envelope = ring
        .encrypt_for(sealed.as_bytes(), secret.as_bytes())
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg(&sealed)
        .arg(&envelope)
        .query_async(&mut f.con)
        .await
        .unwrap();
    assert_eq!(
        pool_secret(&typed, &provider, &id("p_a"))
            .await
            .unwrap()
            .as_deref(),
        Some(secret)
    );

    let plain = format!("nxc:pool:{provider}:p_b");
    let _: () = f.raw(&["SET", &plain, secret]).await;
    let err = pool_secret(&typed, &provider, &id("p_b"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Codec, "{err}");

    // Overwriting the raw entry seals it again; the service reads it with the keyring.
    put_pool_secret(&typed, &provider, &id("p_b"), "rotated")
        .await
        .unwrap();
    let raw: Vec<u8> = f.raw(&["GET", &plain]).await;
    assert_eq!(
        ring.decrypt_for(plain.as_bytes(), &raw).unwrap(),
        b"rotated"
    );
    // Bound to its key: the same bytes copied to another pool key do not open there.
    let copy = format!("nxc:pool:{provider}:p_c");
    let _: () = redis::cmd("SET")
        .arg(&copy)
        .arg(&raw)
        .query_async(&mut f.con)
        .await
        .unwrap();
    let err = pool_secret(&typed, &provider, &id("p_c"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Codec, "{err}");
}
