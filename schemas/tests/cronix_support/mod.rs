//! Shared values and waits of the cronix scenario tests.

#![allow(dead_code)]

use futures::StreamExt;
use keyplane_core::keyspace::{Key, TypedStore};
use keyplane_core::{Event, WatchOptions};
use keyplane_schemas::cronix::*;
use std::time::Duration;
use uuid::Uuid;

/// Bounds every wait on an event, so that a missing event fails the test instead of hanging.
pub const PATIENCE: Duration = Duration::from_secs(30);
pub const LONG_TTL: Duration = Duration::from_secs(30);
pub const SHORT_TTL: Duration = Duration::from_secs(1);
/// A lease kept alive while the test watches for its expiry: renewals every third of it must
/// survive a loaded machine, and the test outlives it a few times.
pub const KEPT_TTL: Duration = Duration::from_secs(2);

pub fn node_info(uuid: Uuid) -> NodeInfo {
    NodeInfo {
        uuid,
        ip: "10.0.3.21".parse().unwrap(),
        port: 9527,
        status: NodeStatus::Online,
        hostname: "worker".into(),
        started_at: 1,
    }
}

pub fn job_config(cron: &str) -> JobConfig {
    JobConfig {
        name: "backup".into(),
        cron: cron.into(),
        command: "/opt/backup/run.sh".into(),
        timeout_seconds: 60,
        retry: RetryPolicy {
            max_retries: 1,
            interval_seconds: 5,
        },
    }
}

/// A job id of its own for each case: the layout is fixed.
pub fn unique_job() -> JobId {
    JobId::new(format!("job-{}", Uuid::new_v4().simple())).unwrap()
}

pub fn unique_lock() -> LockName {
    LockName::new(format!("lock.{}", Uuid::new_v4().simple())).unwrap()
}

/// Waits for a delete event on a raw watch of one key.
pub async fn deleted(watch: &mut keyplane_core::WatchStream) {
    tokio::time::timeout(PATIENCE, async {
        while let Some(batch) = watch.next().await {
            let batch = batch.expect("no watch error");
            if batch
                .events
                .iter()
                .any(|e| matches!(e, Event::Delete { .. }))
            {
                return;
            }
        }
        panic!("the watch ended");
    })
    .await
    .expect("a delete event in time");
}

pub async fn watch_key(store: &TypedStore, key: &impl Key) -> keyplane_core::WatchStream {
    let from = store.store().revision().await.unwrap() + 1;
    let opts = WatchOptions::key(key.encode()).from_revision(from);
    store.store().watch(opts).await.unwrap()
}
