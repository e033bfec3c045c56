//! Reads at a revision on a busy store, on every backend: page 2 of a 1,000-key listing
//! (pages of 100, so pinned to page 1's revision) while 8 tasks write other keys of the same
//! store as fast as they can, against the same read on the idle store.
//!
//! The writers run on a runtime of their own (one worker thread), as another service's
//! writers would, so that the reader's runtime is not queued behind them; the machine's two
//! cores are still shared by both, and by the server.

use crate::measure::{Budget, Goal, MIN_ROUNDS, Measure, Pair, Report, median, multi_thread};
use crate::single::VALUE;
use keyplane_core::recipes::BulkLoader;
use keyplane_core::{PutOptions, RangeOptions, Store};
use keyplane_etcd::{EtcdConfig, EtcdStore};
use keyplane_mem::MemStore;
use keyplane_redis::{RedisConfig, RedisStore};
use keyplane_sled::{SledConfig, SledStore};
use keyplane_tests::harness::{EtcdServer, RedisServer};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

const DIRECTORY: &str = "busy/dir/";
const KEYS: u64 = 1_000;
const PAGE: usize = 100;
const WRITERS: u64 = 8;

pub fn run(budget: Budget, report: &mut Report) {
    let rt = multi_thread();
    rt.block_on(async {
        let memory: Arc<dyn Store> = Arc::new(MemStore::new());
        measure(budget, report, "memory", memory, Goal::Info).await;
        let dir = tempfile::tempdir().unwrap();
        let sled: Arc<dyn Store> =
            Arc::new(SledStore::open(SledConfig::new(dir.path())).await.unwrap());
        measure(budget, report, "sled", sled, Goal::Info).await;
        if let Some(server) = RedisServer::start() {
            let store = RedisStore::open(RedisConfig::new(server.url()))
                .await
                .expect("connect");
            measure(budget, report, "redis", Arc::new(store), Goal::AtMost(2.0)).await;
        }
        if let Some(server) = EtcdServer::start() {
            let store = EtcdStore::open(EtcdConfig::new([server.endpoint()]))
                .await
                .expect("connect");
            measure(budget, report, "etcd", Arc::new(store), Goal::Info).await;
        }
    });
}

async fn measure(
    budget: Budget,
    report: &mut Report,
    backend: &str,
    store: Arc<dyn Store>,
    goal: Goal,
) {
    BulkLoader::new(store.as_ref())
        .load((0..KEYS).map(|i| (format!("{DIRECTORY}{i:04}").into_bytes(), VALUE.to_vec())))
        .await
        .expect("bulk load");
    // Rounds alternate the idle store and the busy one (the writers started for the round
    // and stopped after it); each side's figure in a round is the median of its reads.
    let rounds = if budget.quick { MIN_ROUNDS } else { 9 };
    let (mut idle, mut busy, mut rates) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        if round % 2 == 0 {
            idle.push(page_two(budget, store.as_ref()).await);
        }
        let writers = Writers::start(&store).await;
        busy.push(page_two(budget, store.as_ref()).await);
        rates.push(writers.stop().await);
        if round % 2 == 1 {
            idle.push(page_two(budget, store.as_ref()).await);
        }
    }
    report.add(
        Measure::paired(
            format!("{backend} page 2 of a 1,000-key listing: 8 tasks writing elsewhere vs idle"),
            Pair::of(busy, idle),
            "µs",
            goal,
        )
        .note(format!("{:.0} writes/s meanwhile", median(rates))),
    );
}

/// Median microseconds of page 2 over 9 reads (5 in a quick run), each reading page 1 again (a
/// new revision on the busy store) and timing the page after it.
async fn page_two(budget: Budget, store: &dyn Store) -> f64 {
    let reads = if budget.quick { 5 } else { 9 };
    let mut times = Vec::with_capacity(reads);
    for _ in 0..reads {
        let first = store
            .range(RangeOptions::prefix(DIRECTORY).limit(PAGE))
            .await
            .expect("page 1");
        let next = first.next.expect("a second page");
        let started = Instant::now();
        let page = store
            .range(RangeOptions::prefix(DIRECTORY).limit(PAGE).after(next))
            .await
            .expect("page 2");
        times.push(started.elapsed().as_secs_f64() * 1e6);
        assert_eq!(page.entries.len(), PAGE);
        assert_eq!(page.revision, first.revision);
    }
    median(times)
}

/// 8 tasks putting keys outside the listed directory in a loop, on a runtime of their own.
struct Writers {
    runtime: tokio::runtime::Runtime,
    stop: Arc<AtomicBool>,
    written: Arc<AtomicU64>,
    started: Instant,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Writers {
    /// Starts the writers and returns once each has written.
    async fn start(store: &Arc<dyn Store>) -> Writers {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("writers' runtime");
        let stop = Arc::new(AtomicBool::new(false));
        let written = Arc::new(AtomicU64::new(0));
        let running = Arc::new(tokio::sync::Barrier::new(WRITERS as usize + 1));
        let tasks = (0..WRITERS)
            .map(|w| {
                let (store, stop, written) = (store.clone(), stop.clone(), written.clone());
                let running = running.clone();
                runtime.spawn(async move {
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let key = format!("busy/other/{w}/{}", i % 100);
                        store
                            .put(key.as_bytes(), &VALUE, PutOptions::default())
                            .await
                            .expect("a writer's put");
                        written.fetch_add(1, Ordering::Relaxed);
                        i += 1;
                        if i == 1 {
                            running.wait().await;
                        }
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        running.wait().await;
        Writers {
            runtime,
            stop,
            written,
            started: Instant::now(),
            tasks,
        }
    }

    /// Stops the writers; their writes per second.
    async fn stop(self) -> f64 {
        self.stop.store(true, Ordering::Relaxed);
        for task in self.tasks {
            task.await.expect("a writer task");
        }
        let rate =
            self.written.load(Ordering::Relaxed) as f64 / self.started.elapsed().as_secs_f64();
        self.runtime.shutdown_background();
        rate
    }
}
