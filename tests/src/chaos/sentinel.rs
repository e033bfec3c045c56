//! The Redis Sentinel run: half the clients write with `wait_replicas = 1`, half without,
//! while the network is partitioned (see [`super::faults::sentinel`]). Replication is
//! asynchronous, so a master cut off from its replicas goes on acknowledging the writes
//! not waited for until the sentinels demote it, and the failover loses them; reads from
//! it may return them meanwhile. The anomalies of this run are the writes acknowledged with
//! `wait_replicas` that the final history lacks, and what settling finds (the store must
//! answer, leases must expire, the watch must reach the end). The writes not waited for
//! that were lost, and what the consistency checks find once writes could be lost, are
//! counted apart.

use super::durability::{History, lost_writes};
use super::faults;
use super::history::{Recorder, operations};
use super::run::{Apart, Report, Settings, drive, save, workload};
use super::watch::event_text;
use crate::harness::{RedisSentinel, key_root};
use futures::StreamExt;
use keyplane_core::{Store, WatchOptions};
use keyplane_redis::{RedisConfig, RedisStore};
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::block_in_place;

/// Whether client `id` writes with `wait_replicas` (client `i` uses store `i % 2`).
fn waits(client: u32) -> bool {
    client.is_multiple_of(2)
}

/// RedisStore through `redis+sentinel://` on a deployment behind partitioning proxies.
///
/// `None` after a SKIP line when `redis-server` is missing and servers are not required.
pub async fn sentinel(settings: &Settings) -> Option<Report> {
    let began = Instant::now();
    let deployment = block_in_place(RedisSentinel::start_partitionable)?;
    let open = |wait_replicas: u32| {
        let mut config = RedisConfig::new(deployment.url());
        config.wait_replicas = wait_replicas;
        config.wait_timeout = std::time::Duration::from_millis(1000);
        config.connect_timeout = std::time::Duration::from_millis(1000);
        config.request_timeout = std::time::Duration::from_millis(2000);
        // The final history must reach back to the run's start.
        config.history_retention = 2_000_000;
        RedisStore::open(config)
    };
    let waited: Arc<dyn Store> = Arc::new(open(1).await.expect("open with wait_replicas"));
    let unwaited: Arc<dyn Store> = Arc::new(open(0).await.expect("open without wait_replicas"));
    let recorder = Arc::new(Recorder::new());
    let root = key_root("chaos");
    let work = workload(&root, Duration::from_secs(10), Duration::from_millis(2));
    let mut rng = StdRng::seed_from_u64(settings.seed ^ 0x5e7);
    let rec = Arc::clone(&recorder);
    let deployment = &deployment;
    let mut driven = drive(
        &[Arc::clone(&waited), unwaited],
        work,
        settings,
        recorder,
        move |until| async move {
            faults::sentinel(deployment, &rec, &mut rng, until).await;
        },
    )
    .await;
    save("sentinel", &driven.records);
    let mut anomalies = std::mem::take(&mut driven.anomalies);
    let history = match driven.end {
        Some(end) => match final_history(&*waited, &root, driven.start, end).await {
            Ok(history) => Some(history),
            Err(e) => {
                anomalies.push(format!("the final history could not be read: {e}"));
                None
            }
        },
        None => None,
    };
    let mut analysis = driven.analyse(settings.budget);
    let ops = operations(&driven.records);
    let acknowledged = |wait: bool| {
        ops.iter()
            .filter(|op| waits(op.client) == wait)
            .filter(|op| super::check::effects(op).is_some())
            .count()
    };
    let mut apart = Apart {
        waited: acknowledged(true),
        unwaited: acknowledged(false),
        findings: std::mem::take(&mut analysis.anomalies),
        ..Apart::default()
    };
    if let Some(history) = &history {
        for lost in lost_writes(&ops, history) {
            if waits(lost.client) {
                anomalies.push(format!(
                    "lost write acknowledged with wait_replicas: {}",
                    lost.text
                ));
            } else {
                apart.lost_unwaited.push(lost.text);
            }
        }
    }
    // A watch that learnt its history was rewound (`Compacted`) ends there, as it must:
    // that is a consequence of lost writes only when the final history lacks what the
    // watch read last; otherwise the end was false, an anomaly.
    let segments = super::watch::segments(&driven.records);
    if let Some(history) = &history {
        anomalies.extend(super::watch::false_compactions(
            &segments,
            |revision, events| match events {
                Some(events) => history.get(&revision).is_some_and(|held| {
                    let mut held = held.clone();
                    let mut read = events.to_vec();
                    held.sort();
                    read.sort();
                    held == read
                }),
                // Read nothing: lost only if writes were.
                None => apart.lost_unwaited.is_empty(),
            },
        ));
    }
    let rewound = segments.iter().any(|s| {
        s.main
            && s.end
                .as_deref()
                .is_some_and(|e| e.contains("no longer holds"))
    });
    if rewound && !apart.lost_unwaited.is_empty() {
        let (lost_watch, rest): (Vec<String>, Vec<String>) = anomalies
            .into_iter()
            .partition(|a| a.starts_with("watch reliable:"));
        anomalies = rest;
        apart.findings.extend(
            lost_watch
                .into_iter()
                .map(|a| format!("{a}; it ended with Compacted when a failover lost its history")),
        );
    }
    if let Some(net) = deployment.network() {
        anomalies.extend(super::run::partition_leaks(net));
    }
    analysis.anomalies = anomalies;
    Some(Report {
        backend: "sentinel",
        analysis,
        wall: began.elapsed(),
        apart: Some(apart),
    })
}

/// Every event under `root` from revision `start` to `end`, read by one watch.
async fn final_history(
    store: &dyn Store,
    root: &str,
    start: i64,
    end: i64,
) -> keyplane_core::Result<History> {
    let options = WatchOptions::prefix(root)
        .from_revision(start)
        .with_collections();
    let mut stream = store.watch(options).await?;
    let mut history = History::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let batch = match tokio::time::timeout(left, stream.next()).await {
            Ok(Some(batch)) => batch?,
            Ok(None) => {
                return Err(keyplane_core::Error::internal("the watch ended early"));
            }
            Err(_) => {
                return Err(keyplane_core::Error::internal(format!(
                    "the watch did not reach revision {end} within 60 s"
                )));
            }
        };
        history
            .entry(batch.revision)
            .or_default()
            .extend(batch.events.iter().map(event_text));
        if batch.revision >= end {
            return Ok(history);
        }
    }
}
