//! The nxc resolver cache ([`ResolverCache`]): on every backend it answers exactly as the live
//! resolver on the same data, through creates, deletes and default changes (and so does its
//! pool read with the ownership check); a property test drives random operations; on Redis
//! it reads what raw commands wrote and follows their later changes.

use futures::StreamExt;
use keyplane_core::Store;
use keyplane_core::keyspace::{EncryptionKey, Keyring, ListOptions, TypedStore};
use keyplane_schemas::ReaderOptions;
use keyplane_schemas::nxc::*;
use proptest::prelude::*;
use std::sync::Arc;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

fn realm(tag: &str) -> RealmId {
    RealmId::new(format!("{tag}_{}", uuid::Uuid::new_v4().simple())).unwrap()
}
fn provider() -> ProviderName {
    ProviderName::new("Alipay").unwrap()
}
fn id(n: usize) -> ProfileId {
    ProfileId::new(format!("app_{n:03}")).unwrap()
}

/// A typed store with a keyring (for the pool).
fn typed(store: Arc<dyn Store>) -> TypedStore {
    let ring = Arc::new(Keyring::new("k1", EncryptionKey::generate()).unwrap());
    TypedStore::new(store).with_codec_state(ring)
}

/// One operation of the resolver's writers.
#[derive(Debug, Clone)]
enum Op {
    Create {
        realm: usize,
        profile: usize,
        default: bool,
    },
    Delete {
        realm: usize,
        profile: usize,
    },
    SetDefault {
        realm: usize,
        profile: usize,
    },
    PoolSecret {
        profile: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..2usize, 0..4usize, any::<bool>())
            .prop_map(|(realm, profile, default)| Op::Create { realm, profile, default }),
        1 => (0..2usize, 0..4usize).prop_map(|(realm, profile)| Op::Delete { realm, profile }),
        1 => (0..2usize, 0..4usize).prop_map(|(realm, profile)| Op::SetDefault { realm, profile }),
        1 => (0..4usize).prop_map(|profile| Op::PoolSecret { profile }),
    ]
}

struct World {
    typed: TypedStore,
    realms: [RealmId; 2],
    cache: ResolverCache,
}

impl World {
    async fn new(store: Arc<dyn Store>) -> Self {
        let typed = typed(store);
        let cache = ResolverCache::start(&typed).await.unwrap();
        World {
            typed,
            realms: [realm("cache_a"), realm("cache_b")],
            cache,
        }
    }

    /// Runs `op`; refusals (a profile that exists, a default outside the map) are part of
    /// the game and change nothing.
    async fn run(&self, op: &Op) {
        let typed = &self.typed;
        let _ = match op {
            Op::Create {
                realm,
                profile,
                default,
            } => {
                let new = NewProfile {
                    realm: self.realms[*realm].clone(),
                    provider: provider(),
                    profile: id(*profile),
                    params: [
                        ("sub_mchid".to_string(), format!("{realm}-{profile}")),
                        ("gateway_url".to_string(), "https://gw".to_string()),
                    ]
                    .into(),
                    default: *default,
                };
                create_profile(typed, &new).await
            }
            Op::Delete { realm, profile } => {
                delete_profile(typed, &self.realms[*realm], &provider(), &id(*profile))
                    .await
                    .map(|_| ())
            }
            Op::SetDefault { realm, profile } => {
                set_default_profile(typed, &self.realms[*realm], &provider(), &id(*profile)).await
            }
            Op::PoolSecret { profile } => {
                put_pool_secret(
                    typed,
                    &provider(),
                    &id(*profile),
                    &format!("secret-{profile}"),
                )
                .await
            }
        };
    }

    /// Every question a realm can ask, answered by the cache (once it reflects the store's
    /// revision) and by the live resolver, on the same data: the same answers.
    async fn agree(&self) {
        let revision = self.typed.revision().await.unwrap();
        let view = tokio::time::timeout(WAIT, self.cache.wait_for(revision))
            .await
            .expect("the cache catching up")
            .unwrap();
        for realm in &self.realms {
            let mut asks = vec![None];
            asks.extend((0..5).map(|p| Some(id(p))));
            for profile in asks {
                let identity = Identity {
                    realm: realm.clone(),
                    provider: provider(),
                    profile: profile.clone(),
                };
                let cached = view.resolve(&identity);
                let live = resolve_profile(&self.typed, &identity).await;
                match (&cached, &live) {
                    (Ok(c), Ok(l)) => assert_eq!(c, l, "{identity:?}"),
                    (Err(c), Err(l)) => assert_eq!(c.kind(), l.kind(), "{identity:?}"),
                    _ => panic!("{identity:?}: cache {cached:?}, live {live:?}"),
                }
                if let Some(profile) = &profile {
                    let cached = view.pool_secret(realm, &provider(), profile);
                    let live = owned_pool_secret(&self.typed, realm, &provider(), profile).await;
                    match (&cached, &live) {
                        (Ok(c), Ok(l)) => assert_eq!(c, l, "{identity:?}"),
                        (Err(c), Err(l)) => assert_eq!(c.kind(), l.kind(), "{identity:?}"),
                        _ => panic!("pool {identity:?}: cache {cached:?}, live {live:?}"),
                    }
                }
            }
            assert_eq!(
                view.profiles(realm, &provider()).unwrap(),
                list_profiles(&self.typed, realm, &provider(), ListOptions::limit(100))
                    .await
                    .unwrap()
                    .members
                    .into_iter()
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect::<Vec<_>>(),
            );
        }
    }
}

/// A fixed sequence that passes through every case: the cache agrees after each step.
async fn the_cache_resolves_as_the_live_resolver(store: Arc<dyn Store>) {
    let world = World::new(store).await;
    world.agree().await;
    let steps = [
        Op::Create {
            realm: 0,
            profile: 1,
            default: false,
        },
        Op::Create {
            realm: 0,
            profile: 2,
            default: true,
        },
        Op::Create {
            realm: 1,
            profile: 1,
            default: false,
        },
        Op::PoolSecret { profile: 1 },
        Op::PoolSecret { profile: 2 },
        Op::SetDefault {
            realm: 0,
            profile: 1,
        },
        Op::Delete {
            realm: 0,
            profile: 1,
        },
        Op::Create {
            realm: 1,
            profile: 3,
            default: true,
        },
        Op::Delete {
            realm: 1,
            profile: 3,
        },
        Op::Delete {
            realm: 1,
            profile: 1,
        },
    ];
    for step in &steps {
        world.run(step).await;
        world.agree().await;
    }
    // Realm 0 still owns profile 2, whose secret is in the shared pool; realm 1 owns none.
    let [r0, r1] = &world.realms;
    let secret = owned_pool_secret(&world.typed, r0, &provider(), &id(2)).await;
    assert_eq!(secret.unwrap().as_deref(), Some("secret-2"));
    let refused = owned_pool_secret(&world.typed, r1, &provider(), &id(2)).await;
    assert_eq!(
        refused.unwrap_err().kind(),
        keyplane_core::ErrorKind::Unauthorized
    );
    let view = world.cache.view();
    assert_eq!(
        view.pool_secret(r0, &provider(), &id(2))
            .unwrap()
            .as_deref(),
        Some("secret-2")
    );
    assert_eq!(
        view.pool_secret(r1, &provider(), &id(2))
            .unwrap_err()
            .kind(),
        keyplane_core::ErrorKind::Unauthorized
    );
    assert_eq!(world.cache.health().relists, 0);
    assert_eq!(view.unreadable(), 0);
}

/// A profile created in one transaction arrives in one batch: its map member, its instance
/// hash and its marker together.
async fn a_new_profile_arrives_whole(store: Arc<dyn Store>) {
    let world = World::new(store).await;
    let mut changes = world.cache.mirror().subscribe();
    world
        .run(&Op::Create {
            realm: 0,
            profile: 7,
            default: true,
        })
        .await;
    let batch = tokio::time::timeout(WAIT, changes.next())
        .await
        .expect("a batch")
        .unwrap();
    let kinds: std::collections::BTreeSet<_> = batch.collections.iter().map(|c| c.kind).collect();
    assert_eq!(kinds.len(), 2, "the set and the hash: {batch:?}");
    assert_eq!(batch.events.len(), 1, "the marker: {batch:?}");
    let view = world.cache.view();
    assert!(view.revision() >= batch.revision);
    let resolved = view
        .resolve(&Identity {
            realm: world.realms[0].clone(),
            provider: provider(),
            profile: None,
        })
        .unwrap();
    assert_eq!(resolved.profile, id(7));
    assert_eq!(resolved.params["sub_mchid"], "0-7");
}

keyplane_tests::on_every_backend!(
    the_cache_resolves_as_the_live_resolver,
    a_new_profile_arrives_whole,
);

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random operations on a memory store: after each, the cache answers every question
    /// as the live resolver does.
    #[test]
    fn random_operations_keep_the_cache_equal_to_the_live_resolver(
        ops in proptest::collection::vec(op(), 1..16)
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let world = World::new(Arc::new(keyplane_mem::MemStore::new())).await;
            for op in &ops {
                world.run(op).await;
                world.agree().await;
            }
        });
    }
}

/// On Redis, data another program wrote with raw commands (the document's layout) is in the
/// cache from its first load; later raw changes reach it as events through the store's
/// reconciler (roots configured).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_redis_data_is_resolved_and_followed() {
    let Some(server) = keyplane_tests::harness::shared_redis().await else {
        return;
    };
    let mut con = keyplane_tests::harness::redis_connection(&server.url()).await;
    let mut config = keyplane_redis::RedisConfig::new(server.url());
    config.internal_prefix = format!("__kvc{}:", uuid::Uuid::new_v4().simple());
    config.reconcile_roots = vec!["nxc:".to_string()];
    let redis = Arc::new(keyplane_redis::RedisStore::open(config).await.unwrap());
    let typed = typed(redis.clone());
    let realm = realm("raw");
    let map = format!("nxc:map:{realm}:Alipay");
    let cmd = |args: &[&str]| {
        let mut c = redis::cmd(args[0]);
        for a in &args[1..] {
            c.arg(*a);
        }
        c
    };
    for args in [
        vec!["SADD", &map, "app_001", "app_002"],
        vec!["SET", &format!("{map}:default"), "app_002"],
        vec![
            "HSET",
            &format!("nxc:inst:{realm}:Alipay:app_002"),
            "sub_mchid",
            "1900",
        ],
    ] {
        let _: redis::Value = cmd(&args).query_async(&mut con).await.unwrap();
    }
    redis.reconcile(b"nxc:").await.unwrap();
    let options = ReaderOptions::default().resync_every(Duration::from_millis(300));
    let cache = ResolverCache::start_with(&typed, options).await.unwrap();
    let ask = |profile: Option<&str>| Identity {
        realm: realm.clone(),
        provider: provider(),
        profile: profile.map(|p| ProfileId::new(p).unwrap()),
    };
    let view = cache.view();
    let resolved = view.resolve(&ask(None)).unwrap();
    assert_eq!(resolved, resolve_profile(&typed, &ask(None)).await.unwrap());
    assert_eq!(resolved.params["sub_mchid"], "1900");
    assert_eq!(
        view.resolve(&ask(Some("app_003"))).unwrap_err().kind(),
        keyplane_core::ErrorKind::Unauthorized
    );

    // A raw SADD and HSET: the reconciler turns them into events the cache follows.
    let mut changes = cache.mirror().subscribe();
    let inst = format!("nxc:inst:{realm}:Alipay:app_003");
    let _: redis::Value = cmd(&["HSET", &inst, "sub_mchid", "2000"])
        .query_async(&mut con)
        .await
        .unwrap();
    let _: redis::Value = cmd(&["SADD", &map, "app_003"])
        .query_async(&mut con)
        .await
        .unwrap();
    let app_003 = ProfileId::new("app_003").unwrap();
    while !cache.view().owns(&realm, &provider(), &app_003) {
        tokio::time::timeout(WAIT, changes.next())
            .await
            .expect("the raw SADD reaching the cache")
            .unwrap();
    }
    let view = cache.view();
    let resolved = view.resolve(&ask(Some("app_003"))).unwrap();
    assert_eq!(resolved.params["sub_mchid"], "2000");
    assert_eq!(
        resolved,
        resolve_profile(&typed, &ask(Some("app_003")))
            .await
            .unwrap()
    );
    assert_eq!(cache.health().relists, 0);
}
