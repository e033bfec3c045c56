//! The driver: one run per backend (clients, watches and faults for a while, then the
//! faults stop, leased keys must disappear, a sentinel write marks the end the watch must
//! reach), and the report of what the records show.

use super::check::{Analysis, Layout, analyse};
use super::faults;
use super::history::Recorder;
use super::workload::{Watchers, Workload, bookmark_watch, client, main_watch};
use crate::harness::{EtcdCluster, RedisServer, key_root};
use keyplane_core::layer::{Fault, FaultLayer, StoreExt};
use keyplane_core::{PutOptions, RangeOptions, Store};
use keyplane_etcd::{EtcdConfig, EtcdStore};
use keyplane_mem::MemStore;
use keyplane_redis::{RedisConfig, RedisStore};
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::task::block_in_place;

/// How long and how hard a backend is exercised.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How long the clients run (faults run for the same time).
    pub duration: Duration,
    /// Concurrent clients.
    pub clients: u32,
    /// Seed of the clients' and the faults' choices.
    pub seed: u64,
    /// Step budget of the linearizability search per key.
    pub budget: u64,
}

/// What one backend's run showed.
#[derive(Debug)]
pub struct Report {
    /// The backend.
    pub backend: &'static str,
    /// The checks' results.
    pub analysis: Analysis,
    /// Wall time of the run, checks included.
    pub wall: Duration,
    /// On a replicated deployment whose replication is asynchronous (Redis under
    /// Sentinel): what a partition may cost by design, reported apart from the anomalies.
    pub apart: Option<Apart>,
}

/// What asynchronous replication permits under a partition, counted apart from the
/// anomalies: acknowledged writes not waited for that a failover lost, and what the
/// consistency checks found once writes could be lost.
#[derive(Debug, Default)]
pub struct Apart {
    /// Writes acknowledged without `wait_replicas` that the final history lacks.
    pub lost_unwaited: Vec<String>,
    /// Writes acknowledged with `wait_replicas`, all of which must survive.
    pub waited: usize,
    /// Writes acknowledged without it.
    pub unwaited: usize,
    /// What the linearizability, revision and watch checks found.
    pub findings: Vec<String>,
}

impl Report {
    /// The report's summary line.
    pub fn line(&self) -> String {
        let a = &self.analysis;
        format!(
            "chaos: {}: {} operations ({} ok, {} failed, {} unknown: {} seen applied, {} \
             without effect), {} faults, {} watch batches in {} watches, {} anomalies, {} \
             inconclusive, {:.1} s",
            self.backend,
            a.operations,
            a.ok,
            a.failed,
            a.unknown,
            a.resolved,
            a.dropped,
            a.faults,
            a.batches,
            a.segments,
            a.anomalies.len(),
            a.inconclusive.len(),
            self.wall.as_secs_f64()
        )
    }

    /// The line of what was counted apart, if anything was.
    pub fn apart_line(&self) -> Option<String> {
        let apart = self.apart.as_ref()?;
        Some(format!(
            "  apart: {} of {} acknowledged writes not waited for were lost ({} writes waited \
             for, none may be); {} findings of the consistency checks after writes were lost",
            apart.lost_unwaited.len(),
            apart.unwaited,
            apart.waited,
            apart.findings.len()
        ))
    }

    /// The faults by kind, one line.
    pub fn faults_line(&self) -> String {
        let kinds: Vec<String> = self
            .analysis
            .fault_kinds
            .iter()
            .map(|(kind, n)| format!("{n} x {kind}"))
            .collect();
        format!("  faults: {}", kinds.join("; "))
    }
}

/// The workload of a run under `root`.
pub fn workload(root: &str, op_timeout: Duration, pace: Duration) -> Workload {
    Workload {
        layout: Layout::new(root, 8, 2, 4),
        lease_ttl: Duration::from_secs(2),
        pace,
        op_timeout,
    }
}

/// Writes `records` to `$KV_CHAOS_RECORDS/<backend>.records`, one line each, when that
/// variable names a directory: the raw material behind an anomaly.
pub fn save(backend: &str, records: &[super::history::Record]) {
    let Some(dir) = std::env::var_os("KV_CHAOS_RECORDS") else {
        return;
    };
    let path = std::path::Path::new(&dir).join(format!("{backend}.records"));
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, text)) {
        Ok(()) => println!("chaos: {backend}: records saved in {}", path.display()),
        Err(e) => eprintln!("chaos: cannot save the records in {}: {e}", path.display()),
    }
}

/// Calls `f` until it succeeds or `within` passes.
pub async fn retry<T, F, Fut>(within: Duration, mut f: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = keyplane_core::Result<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        match tokio::time::timeout(Duration::from_secs(5), f()).await {
            Ok(Ok(v)) => return Some(v),
            _ if Instant::now() > deadline => return None,
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// After the faults: waits until no leased key is left (they must all expire), writes the
/// sentinel and waits until the main watch delivers it. Returns the sentinel's revision
/// and any anomaly.
pub async fn settle(
    store: &Arc<dyn Store>,
    workload: &Workload,
    watchers: &Watchers,
    main: tokio::task::JoinHandle<bool>,
) -> (Option<i64>, Vec<String>) {
    let mut anomalies = Vec::new();
    let layout = &workload.layout;
    let deadline = Instant::now() + workload.lease_ttl + Duration::from_secs(30);
    loop {
        let left = retry(Duration::from_secs(60), || {
            store.range(RangeOptions::prefix(&layout.leases).limit(20))
        })
        .await
        .map(|page| page.entries);
        match left {
            Some(left) if left.is_empty() => break,
            Some(left) if Instant::now() > deadline => {
                let keys: Vec<String> = left
                    .iter()
                    .map(|e| String::from_utf8_lossy(&e.key).into_owned())
                    .collect();
                anomalies.push(format!(
                    "lease: keys still present {} s after the faults stopped, though their \
                     leases of {} ms had expired: {keys:?}",
                    deadline.elapsed().as_secs() + 30,
                    workload.lease_ttl.as_millis()
                ));
                break;
            }
            Some(_) => tokio::time::sleep(Duration::from_millis(250)).await,
            None => {
                anomalies.push("the store did not answer for 60 s after the faults stopped".into());
                return (None, anomalies);
            }
        }
    }
    let end = retry(Duration::from_secs(60), || {
        store.put(layout.sentinel.as_bytes(), b"end", PutOptions::default())
    })
    .await
    .map(|r| r.revision);
    let Some(end) = end else {
        anomalies.push("the sentinel write did not succeed within 60 s".into());
        return (None, anomalies);
    };
    watchers.target.store(end, Ordering::SeqCst);
    let reached = tokio::time::timeout(Duration::from_secs(90), main)
        .await
        .is_ok_and(|r| r.unwrap_or(false));
    if !reached {
        anomalies.push(format!(
            "watch reliable: the main watch did not deliver the sentinel write (revision {end}) \
             within 90 s (it stopped at {})",
            watchers.next.load(Ordering::SeqCst) - 1
        ));
    }
    watchers.stop.store(true, Ordering::SeqCst);
    (Some(end), anomalies)
}

/// Runs the workload on `store` while `faults` runs (it must stop at `until` and leave the
/// store reachable), settles, and checks everything recorded.
pub async fn exercise<F>(
    backend: &'static str,
    store: Arc<dyn Store>,
    workload: Workload,
    settings: &Settings,
    recorder: Arc<Recorder>,
    faults: impl FnOnce(Instant) -> F,
) -> Report
where
    F: Future<Output = ()>,
{
    let began = Instant::now();
    let driven = drive(&[store], workload, settings, recorder, faults).await;
    save(backend, &driven.records);
    let mut analysis = driven.analyse(settings.budget);
    analysis.anomalies.extend(driven.anomalies);
    // These runs never compact and lose no acknowledged write: no watch may end with
    // `Compacted`, whatever the faults (a dropped connection above all).
    let segments = super::watch::segments(&driven.records);
    analysis
        .anomalies
        .extend(super::watch::false_compactions(&segments, |_, _| true));
    Report {
        backend,
        analysis,
        wall: began.elapsed(),
        apart: None,
    }
}

/// What a run recorded, before the checks.
pub struct Driven {
    /// The workload run.
    pub workload: Arc<Workload>,
    /// Every record.
    pub records: Vec<super::history::Record>,
    /// The revision of the sentinel write made after the faults, when it succeeded.
    pub end: Option<i64>,
    /// The first revision of the run.
    pub start: i64,
    /// What settling found.
    pub anomalies: Vec<String>,
}

impl Driven {
    /// The checks of [`analyse`] on what was recorded (settling's anomalies apart).
    pub fn analyse(&self, budget: u64) -> Analysis {
        block_in_place(|| analyse(&self.records, &self.workload.layout, self.end, budget))
    }
}

/// Runs the workload while `faults` runs, client `i` on `stores[i % stores.len()]` (the
/// watches and the settling on the first), and settles.
pub async fn drive<F>(
    stores: &[Arc<dyn Store>],
    workload: Workload,
    settings: &Settings,
    recorder: Arc<Recorder>,
    faults: impl FnOnce(Instant) -> F,
) -> Driven
where
    F: Future<Output = ()>,
{
    let store = Arc::clone(&stores[0]);
    let workload = Arc::new(workload);
    let prefix = workload.layout.root.clone();
    let start = retry(Duration::from_secs(60), || store.revision())
        .await
        .expect("the store answers before the faults")
        + 1;
    let watchers = Watchers::new(start, 0);
    let give_up = Instant::now() + settings.duration + Duration::from_secs(180);
    let main = tokio::spawn(main_watch(
        Arc::clone(&store),
        Arc::clone(&recorder),
        prefix.clone(),
        Arc::clone(&watchers),
        give_up,
    ));
    let bookmarks = tokio::spawn(bookmark_watch(
        Arc::clone(&store),
        Arc::clone(&recorder),
        prefix,
        Arc::clone(&watchers),
        settings.seed ^ 0xb00c,
    ));
    let until = Instant::now() + settings.duration;
    let clients: Vec<_> = (0..settings.clients)
        .map(|i| {
            tokio::spawn(client(
                Arc::clone(&stores[i as usize % stores.len()]),
                Arc::clone(&recorder),
                Arc::clone(&workload),
                i,
                settings.seed.wrapping_add(u64::from(i) * 7919),
                until,
            ))
        })
        .collect();
    faults(until).await;
    for c in clients {
        c.await.expect("a client panicked");
    }
    let (end, anomalies) = settle(&store, &workload, &watchers, main).await;
    let _ = tokio::time::timeout(Duration::from_secs(10), bookmarks).await;
    Driven {
        workload,
        records: recorder.records(),
        end,
        start,
        anomalies,
    }
}

/// MemStore behind a [`FaultLayer`]: refused calls, answers lost after the store applied
/// them, latency, and dropped watch connections.
pub async fn memory(settings: &Settings) -> Report {
    let layer = FaultLayer::new(settings.seed)
        .with(Fault::latency(Duration::from_millis(15)).probability(0.02))
        .with(Fault::unavailable().probability(0.01))
        .with(Fault::timeout().probability(0.01))
        .with(Fault::watch_disconnect().probability(0.01));
    let faulty = Arc::new(MemStore::new().layer(layer));
    let store: Arc<dyn Store> = faulty.clone();
    let recorder = Arc::new(Recorder::new());
    let root = key_root("chaos");
    let work = workload(&root, Duration::from_secs(5), Duration::from_millis(4));
    let switch = Arc::clone(&faulty);
    let rec = Arc::clone(&recorder);
    let mut report = exercise(
        "memory",
        store,
        work,
        settings,
        recorder,
        move |until| async move {
            tokio::time::sleep_until(until.into()).await;
            switch.set_enabled(false);
            // In the order the rules were added to the layer.
            let rules = ["latency", "refused call", "answer lost", "watch dropped"];
            for injection in switch.injections() {
                let rule = rules.get(injection.rule).unwrap_or(&"fault");
                rec.fault(format!("memory: {rule}"));
            }
        },
    )
    .await;
    report.analysis.faults = faulty.injected();
    report
}

/// RedisStore on a server with the AOF on (`appendfsync always`), killed and paused.
///
/// `None` after a SKIP line when `redis-server` is missing and servers are not required.
pub async fn redis(settings: &Settings) -> Option<Report> {
    let mut server = block_in_place(RedisServer::start_with_aof)?;
    let mut config = RedisConfig::new(server.url());
    config.persistent = true;
    config.connect_timeout = std::time::Duration::from_millis(1000);
    config.request_timeout = std::time::Duration::from_millis(2000);
    let store: Arc<dyn Store> = Arc::new(
        RedisStore::open(config)
            .await
            .expect("connect to the chaos Redis"),
    );
    let recorder = Arc::new(Recorder::new());
    let work = workload(
        &key_root("chaos"),
        Duration::from_secs(10),
        Duration::from_millis(2),
    );
    let mut rng = StdRng::seed_from_u64(settings.seed ^ 0x7ed15);
    let rec = Arc::clone(&recorder);
    let server = &mut server;
    let report = exercise(
        "redis",
        store,
        work,
        settings,
        recorder,
        move |until| async move {
            faults::redis(server, &rec, &mut rng, until).await;
        },
    )
    .await;
    Some(report)
}

/// EtcdStore on a 3-member cluster whose leader is killed, whose members are paused, and
/// which is partitioned: a follower or the leader cut off from the others, the clients cut
/// off from a member.
///
/// `None` after a SKIP line when `etcd` is missing and servers are not required.
pub async fn etcd(settings: &Settings) -> Option<Report> {
    let mut cluster = block_in_place(|| EtcdCluster::start_partitionable(3))?;
    let mut config = EtcdConfig::new(cluster.endpoints());
    config.connect_timeout = std::time::Duration::from_millis(1000);
    config.request_timeout = std::time::Duration::from_millis(3000);
    let store: Arc<dyn Store> = Arc::new(
        EtcdStore::open(config)
            .await
            .expect("connect to the chaos etcd cluster"),
    );
    let recorder = Arc::new(Recorder::new());
    let work = workload(
        &key_root("chaos"),
        Duration::from_secs(10),
        Duration::from_millis(2),
    );
    let mut rng = StdRng::seed_from_u64(settings.seed ^ 0xe7cd);
    let rec = Arc::clone(&recorder);
    let members = &mut cluster;
    let mut report = exercise(
        "etcd",
        store,
        work,
        settings,
        recorder,
        move |until| async move {
            faults::etcd(members, &rec, &mut rng, until).await;
        },
    )
    .await;
    if let Some(net) = cluster.network() {
        report.analysis.anomalies.extend(partition_leaks(net));
    }
    Some(report)
}

/// An anomaly when a connection came from a process the network could not place: a cut
/// would not have held it, so the run's partitions cannot be trusted.
pub fn partition_leaks(net: &crate::harness::Network) -> Option<String> {
    let n = net.unidentified();
    (n > 0).then(|| {
        format!(
            "partition: {n} connections came from a process that is neither a node nor this \
             one; the cuts may not have held them"
        )
    })
}
