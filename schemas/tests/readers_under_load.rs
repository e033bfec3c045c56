//! The readers start and relist on a busy Redis: a typed [`Mirror`], the tenant Provider and
//! the nxc resolver cache each list their range over several pages while 8 tasks write other
//! keys of the same revision sequence (one Redis's, one Redis Cluster group's) as fast as
//! they can; the first view, the view after a relist and the view after a later write are
//! each exactly what the store holds in the range.
//!
//! Every listing call of a reader waits until the writers have written 8 more times, so each
//! page is read after writes the previous page did not see: a reader that needs the store to
//! stay still between two pages fails here. The relist is a watch that drops (an injected
//! fault) while the reader waits for a revision the writers made: the reader lists again,
//! under the same load.
//!
//! The writers are `keyplane_tests::busy::Writers`: in this process, yielding after each
//! write, bounded inside Redis's default history retention, so that a listing that fails
//! here fails for being busy, not for reading a revision the store let go.

mod tenant_common;

use keyplane_core::keyspace::{Key, Prefix, Text, TypedStore};
use keyplane_core::layer::{
    Call, Fault, FaultLayer, FaultStore, Interceptor, NamespaceLayer, StoreExt,
};
use keyplane_core::mirror::{Mirror, MirrorSnapshot};
use keyplane_core::{
    CollectionKind, CollectionOp, CollectionResult, CollectionValue, RangeOptions, Result, Store,
};
use keyplane_redis::{RedisConfig, RedisStore};
use keyplane_schemas::ReaderOptions;
use keyplane_schemas::nxc::{NewProfile, ProfileId, ProviderName, RealmId, ResolverCache};
use keyplane_schemas::tenant::{TenantProvider, publish_tenant};
use keyplane_tests::busy::{WRITERS, Writers};
use keyplane_tests::harness::{shared_redis, shared_redis_cluster};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::watch;

/// Keys per page of the readers' listings.
const PAGE: usize = 10;
/// How long one step may take before the test fails as hung.
const WAIT: Duration = Duration::from_secs(60);

async fn timed<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, f)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen within {WAIT:?}"))
}

/// A store of its own on the shared Redis: its own internal prefix, so its own revision
/// sequence, index and event log, which nothing else writes.
async fn single_redis() -> Option<Arc<dyn Store>> {
    let server = shared_redis().await?;
    let config = RedisConfig::new(server.url())
        .internal_prefix(format!("__kvbusy{}:", uuid::Uuid::new_v4().simple()));
    Some(Arc::new(RedisStore::open(config).await.unwrap()))
}

/// A fresh co-location group of the shared Redis Cluster, every key under its hash tag
/// (`{tag}/`): one slot, one revision sequence.
async fn cluster_group() -> Option<Arc<dyn Store>> {
    let cluster = shared_redis_cluster().await?;
    let store = RedisStore::from_url(&cluster.url()).await.unwrap();
    let tag = uuid::Uuid::new_v4().simple().to_string();
    let group = store.group(tag.as_bytes()).unwrap();
    Some(Arc::new(
        group.layer(NamespaceLayer::new(format!("{{{tag}}}/")).unwrap()),
    ))
}

/// Holds every listing call until the writers have written [`WRITERS`] more times, and
/// counts them.
struct Gate {
    written: watch::Receiver<u64>,
    ranges: AtomicU64,
}

#[keyplane_core::raw::async_trait]
impl Interceptor for Gate {
    async fn before(&self, call: Call) -> Result<()> {
        if call == Call::Range {
            self.ranges.fetch_add(1, Ordering::SeqCst);
            let mut written = self.written.clone();
            let target = *written.borrow_and_update() + WRITERS;
            let _ = written.wait_for(|n| *n >= target).await;
        }
        Ok(())
    }
}

/// A store under load: the writers on `base`, and the readers' store over it, whose
/// listings wait for the writers ([`Gate`]) and whose watch can be made to drop once.
struct Busy {
    base: Arc<dyn Store>,
    gate: Arc<Gate>,
    faults: Arc<FaultStore<Arc<dyn Store>>>,
    writers: Writers,
}

impl Busy {
    /// Starts the writers under a root of their own in `base`.
    fn start(base: Arc<dyn Store>) -> Busy {
        let root = format!("busy-{}/", uuid::Uuid::new_v4().simple());
        let writers = Writers::start(&base, root.as_bytes());
        let gate = Arc::new(Gate {
            written: writers.counter(),
            ranges: AtomicU64::new(0),
        });
        let gated: Arc<dyn Store> = Arc::new(
            base.clone()
                .layer(FaultLayer::new(0).intercept(gate.clone())),
        );
        let faults =
            Arc::new(gated.layer(FaultLayer::new(37).with(Fault::watch_disconnect().times(1))));
        faults.set_enabled(false);
        Busy {
            base,
            gate,
            faults,
            writers,
        }
    }

    /// The readers' typed store.
    fn typed(&self) -> TypedStore {
        TypedStore::new(self.faults.clone())
    }

    /// The listing calls the readers made so far.
    fn ranges(&self) -> u64 {
        self.gate.ranges.load(Ordering::SeqCst)
    }

    /// Makes `mirror` list again while the writers write: once the store has moved past the
    /// view, the mirror is asked for the store's revision, which it confirms with a new
    /// watch; that watch drops at its first batch, and the mirror lists again. Returns the
    /// listing calls of the relist.
    async fn relist<K, V>(&mut self, mirror: &Mirror<K, V>) -> u64
    where
        K: Clone + Send + Sync + 'static,
        V: Clone + Send + Sync + 'static,
    {
        let relists = mirror.health().relists;
        self.writers.advance(WRITERS).await;
        let ranges = self.ranges();
        self.faults.set_enabled(true);
        let target = self.base.revision().await.unwrap();
        assert!(target > mirror.revision(), "the writers moved the store on");
        timed("the relist", mirror.wait_for(target))
            .await
            .expect("the mirror lists again while others write");
        self.writers.assert_running("the relist");
        self.faults.set_enabled(false);
        assert_eq!(self.faults.injected(), 1, "the watch dropped once");
        let health = mirror.health();
        assert!(health.relists > relists, "{health:?}");
        self.ranges() - ranges
    }

    async fn stop(self) {
        self.writers.stop().await;
    }
}

/// What the store holds under a prefix: each key's revision, each collection's contents.
#[derive(Debug, PartialEq)]
struct Held {
    keys: BTreeMap<Vec<u8>, i64>,
    collections: BTreeMap<(Vec<u8>, CollectionKind), CollectionValue>,
}

/// What `store` holds under `prefix` now, in one read (the prefix is quiet: the writers
/// write elsewhere).
async fn held(store: &dyn Store, prefix: &str) -> Held {
    let read = store
        .range(RangeOptions::prefix(prefix.as_bytes()).with_collections())
        .await
        .expect("the range in one read");
    assert!(read.next.is_none());
    let keys = read
        .entries
        .into_iter()
        .map(|e| (e.key, e.mod_revision))
        .collect();
    let mut collections = BTreeMap::new();
    for c in read.collections {
        let value = match store
            .collection(CollectionOp::read_all(c.key.clone(), c.kind))
            .await
            .expect("a collection's contents")
        {
            CollectionResult::Members(members) => {
                CollectionValue::Set(members.into_iter().collect())
            }
            CollectionResult::Fields(fields) => CollectionValue::Map(fields.into_iter().collect()),
            CollectionResult::Items(items) => CollectionValue::List(items),
            other => panic!("a read of a whole collection answered {other:?}"),
        };
        collections.insert((c.key, c.kind), value);
    }
    Held { keys, collections }
}

/// What a reader's view holds, as [`held`] reads the store (every key and collection of the
/// view parsed and decoded: none unreadable).
fn viewed<K, V>(view: &MirrorSnapshot<K, V>, held: &Held) -> Held {
    assert_eq!(view.unreadable().count(), 0, "unreadable keys");
    assert_eq!(
        view.unreadable_collections().count(),
        0,
        "unreadable collections"
    );
    assert_eq!(view.len(), held.keys.len(), "the view's keys");
    assert_eq!(
        view.collection_count(),
        held.collections.len(),
        "the view's collections"
    );
    // Looked up by the store's raw keys: with the counts above, the view holds these and
    // nothing else.
    let keys = held
        .keys
        .keys()
        .filter_map(|raw| Some((raw.clone(), view.get_raw(raw)?.1.mod_revision)))
        .collect();
    let collections = held
        .collections
        .keys()
        .filter_map(|(raw, kind)| {
            let (_, value) = view.collection_raw(raw, *kind)?;
            Some(((raw.clone(), *kind), value.clone()))
        })
        .collect();
    Held { keys, collections }
}

/// One reader on a busy `base`: `seed` writes its range (`prefix`) before the writers start,
/// `start` starts it on the busy store while they write; its first view is the seeded range
/// exactly, listed over several pages; it lists again over several pages while they write,
/// and its view is still exact; `write` changes the range, and the view at the write's
/// revision is the range's new state exactly.
async fn reader_under_load<K, V, S, SF, R, RF, W, WF>(
    base: Arc<dyn Store>,
    prefix: &str,
    seed: S,
    start: R,
    write: W,
) where
    K: Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    S: FnOnce(TypedStore) -> SF,
    SF: Future<Output = ()>,
    R: FnOnce(TypedStore) -> RF,
    RF: Future<Output = Result<Mirror<K, V>>>,
    W: FnOnce(TypedStore) -> WF,
    WF: Future<Output = i64>,
{
    seed(TypedStore::new(base.clone())).await;
    let seeded = held(&*base, prefix).await;
    let pages = (seeded.keys.len() + seeded.collections.len()).div_ceil(PAGE) as u64;
    assert!(pages >= 3, "the seed fills several pages");

    let mut busy = Busy::start(base.clone());
    busy.writers.advance(WRITERS).await;
    let mirror = timed("the reader starting", start(busy.typed()))
        .await
        .expect("the reader starts while others write");
    busy.writers.assert_running("the start");
    assert!(
        busy.ranges() >= pages,
        "the start listed {} pages",
        busy.ranges()
    );
    assert_eq!(
        viewed(&mirror.snapshot(), &seeded),
        seeded,
        "the first view"
    );

    let relisted = busy.relist(&mirror).await;
    assert!(relisted >= pages, "the relist listed {relisted} pages");
    assert_eq!(
        viewed(&mirror.snapshot(), &seeded),
        seeded,
        "the view after the relist"
    );

    let written = write(TypedStore::new(base.clone())).await;
    let view = timed("the reader catching up", mirror.wait_for(written))
        .await
        .unwrap();
    let now = held(&*base, prefix).await;
    assert_ne!(now, seeded, "the write changed the range");
    assert_eq!(viewed(&view, &now), now, "the view after a later write");
    busy.stop().await;
}

/// A mirrored item: `seeded/{id}`, a text value.
#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "seeded/{id}", value = Text)]
struct SeededKey {
    id: u64,
}

/// The directory of items.
#[derive(Prefix, Debug, Clone, PartialEq)]
#[kv(template = "seeded/", key = SeededKey)]
struct SeededDir {}

async fn mirror_case(base: Arc<dyn Store>) {
    reader_under_load(
        base,
        "seeded/",
        |typed| async move {
            for id in 0..60 {
                typed
                    .put(&SeededKey { id }, &format!("v{id}"))
                    .await
                    .unwrap();
            }
        },
        |typed| async move { typed.mirror(&SeededDir {})?.page_size(PAGE).start().await },
        |typed| async move {
            typed
                .put(&SeededKey { id: 60 }, &"later".to_string())
                .await
                .unwrap()
        },
    )
    .await;
}

async fn tenant_provider_case(base: Arc<dyn Store>) {
    reader_under_load(
        base,
        "jxt/",
        |typed| async move {
            for _ in 0..5 {
                let tenant = tenant_common::unique_tenant(2);
                publish_tenant(&typed, &tenant).await.unwrap();
            }
        },
        |typed| async move {
            let options = ReaderOptions::default().page_size(PAGE);
            let provider = TenantProvider::start_with(&typed, options).await?;
            Ok(provider.mirror().clone())
        },
        |typed| async move {
            publish_tenant(&typed, &tenant_common::unique_tenant(1))
                .await
                .unwrap()
        },
    )
    .await;
}

fn profile(realm: u64, id: u64) -> NewProfile {
    NewProfile {
        realm: RealmId::new(format!("realm_{realm}")).unwrap(),
        provider: ProviderName::new("Alipay").unwrap(),
        profile: ProfileId::new(format!("app_{id:03}")).unwrap(),
        params: [("sub_mchid".to_string(), format!("19{realm}{id:03}"))].into(),
        default: id == 0,
    }
}

async fn resolver_cache_case(base: Arc<dyn Store>) {
    reader_under_load(
        base,
        "nxc:",
        |typed| async move {
            for realm in 0..3 {
                for id in 0..10 {
                    keyplane_schemas::nxc::create_profile(&typed, &profile(realm, id))
                        .await
                        .unwrap();
                }
            }
        },
        |typed| async move {
            let options = ReaderOptions::default().page_size(PAGE);
            let cache = ResolverCache::start_with(&typed, options).await?;
            Ok(cache.mirror().clone())
        },
        |typed| async move {
            keyplane_schemas::nxc::create_profile(&typed, &profile(3, 0))
                .await
                .unwrap();
            typed.revision().await.unwrap()
        },
    )
    .await;
}

/// A typed mirror starts over several pages on a busy Redis and lists again under load,
/// exact each time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mirror_starts_and_relists_on_a_busy_redis() {
    let Some(base) = single_redis().await else {
        return;
    };
    mirror_case(base).await;
}

/// The same on a busy Redis Cluster group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mirror_starts_and_relists_on_a_busy_cluster_group() {
    let Some(base) = cluster_group().await else {
        return;
    };
    mirror_case(base).await;
}

/// The tenant Provider starts over several pages on a busy Redis and lists again under
/// load, exact each time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tenant_provider_starts_and_relists_on_a_busy_redis() {
    let Some(base) = single_redis().await else {
        return;
    };
    tenant_provider_case(base).await;
}

/// The same on a busy Redis Cluster group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tenant_provider_starts_and_relists_on_a_busy_cluster_group() {
    let Some(base) = cluster_group().await else {
        return;
    };
    tenant_provider_case(base).await;
}

/// The nxc resolver cache (keys, sets and hashes) starts over several pages on a busy Redis
/// and lists again under load, exact each time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resolver_cache_starts_and_relists_on_a_busy_redis() {
    let Some(base) = single_redis().await else {
        return;
    };
    resolver_cache_case(base).await;
}

/// The same on a busy Redis Cluster group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resolver_cache_starts_and_relists_on_a_busy_cluster_group() {
    let Some(base) = cluster_group().await else {
        return;
    };
    resolver_cache_case(base).await;
}
