//! Cronix operations on every backend: node registration with keep-alive, job moves in one
//! transaction, one-shot triggers, locks lost with their lease, the system-info flow.

use futures::StreamExt;
use kv_core::keyspace::{Key, TypedEvent, TypedStore};
use kv_core::{Event, Store, WatchOptions};
use schemas::cronix::*;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// Bounds every wait on an event, so that a missing event fails the test instead of hanging.
const PATIENCE: Duration = Duration::from_secs(30);
const LONG_TTL: Duration = Duration::from_secs(30);
const SHORT_TTL: Duration = Duration::from_secs(1);
/// A lease kept alive while the test watches for its expiry: renewals every third of it must
/// survive a loaded machine, and the test outlives it a few times.
const KEPT_TTL: Duration = Duration::from_secs(2);

fn node_info(uuid: Uuid) -> NodeInfo {
    NodeInfo {
        uuid,
        ip: "10.0.3.21".parse().unwrap(),
        port: 9527,
        status: NodeStatus::Online,
        hostname: "worker".into(),
        started_at: 1,
    }
}

fn job_config(cron: &str) -> JobConfig {
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
fn unique_job() -> JobId {
    JobId::new(format!("job-{}", Uuid::new_v4().simple())).unwrap()
}

fn unique_lock() -> LockName {
    LockName::new(format!("lock.{}", Uuid::new_v4().simple())).unwrap()
}

/// Waits for a delete event on a raw watch of one key.
async fn deleted(watch: &mut kv_core::WatchStream) {
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

async fn watch_key(store: &TypedStore, key: &impl Key) -> kv_core::WatchStream {
    let from = store.store().revision().await.unwrap() + 1;
    let opts = WatchOptions::key(key.encode()).from_revision(from);
    store.store().watch(opts).await.unwrap()
}

async fn node_registration_with_keep_alive(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let id = Uuid::new_v4();
    let key = NodeKey { node: id };
    let node = register_node(&store, &node_info(id), KEPT_TTL)
        .await
        .unwrap();
    let entry = store
        .get_versioned(&key)
        .await
        .unwrap()
        .expect("registered");
    assert_eq!(entry.value, node_info(id));
    assert_eq!(entry.lease, Some(node.lease()));
    assert!(list_nodes(&store).await.unwrap().contains(&node_info(id)));

    // Kept alive: no delete arrives for several TTLs.
    let mut watch = watch_key(&store, &key).await;
    let quiet = tokio::time::timeout(KEPT_TTL * 3, watch.next()).await;
    assert!(quiet.is_err(), "the node key changed: {quiet:?}");
    assert!(!node.is_lost());
    assert!(store.exists(&key).await.unwrap());

    let err = register_node(&store, &node_info(id), LONG_TTL)
        .await
        .unwrap_err();
    assert!(
        matches!(err, CronixError::NodeExists(n) if n == id),
        "{err}"
    );

    // Normal shutdown deletes the key at once.
    node.deregister().await.unwrap();
    assert!(!store.exists(&key).await.unwrap());

    // A failed node (renewals stop) disappears when its lease expires.
    let failed = register_node(&store, &node_info(id), SHORT_TTL)
        .await
        .unwrap();
    let mut watch = watch_key(&store, &key).await;
    drop(failed);
    deleted(&mut watch).await;
    assert!(!store.exists(&key).await.unwrap());
}

async fn processes_live_under_a_lease(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let id = Uuid::new_v4();
    let node = register_node(&store, &node_info(id), LONG_TTL)
        .await
        .unwrap();
    let job = unique_job();
    let key = |pid| ProcKey {
        node: id,
        job: job.clone(),
        pid,
    };
    let info = |pid| ProcInfo {
        pid,
        job_id: job.to_string(),
        killed: false,
        started_at: 1,
    };
    record_process(&store, &key(100), &info(100), node.lease())
        .await
        .unwrap();
    record_process(&store, &key(101), &info(101), node.lease())
        .await
        .unwrap();
    let err = record_process(&store, &key(102), &info(7), node.lease())
        .await
        .unwrap_err();
    assert!(matches!(err, CronixError::Invalid { .. }), "{err}");
    assert!(!store.exists(&key(102)).await.unwrap());

    let dir = JobProcsDir {
        node: id,
        job: job.clone(),
    };
    let pids: Vec<u32> = job_processes(&store, &dir)
        .await
        .unwrap()
        .iter()
        .map(|(k, _)| k.pid)
        .collect();
    assert_eq!(pids, [100, 101]);
    assert!(end_process(&store, &key(100)).await.unwrap());
    assert!(!end_process(&store, &key(100)).await.unwrap());
    // The node going offline takes its processes with it.
    node.deregister().await.unwrap();
    assert!(job_processes(&store, &dir).await.unwrap().is_empty());
}

async fn move_a_job_off_a_failed_node(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let node_a = register_node(&store, &node_info(a), LONG_TTL)
        .await
        .unwrap();
    let node_b = register_node(&store, &node_info(b), LONG_TTL)
        .await
        .unwrap();
    let job = unique_job();
    let config = job_config("0 2 * * *");

    let err = assign_job(&store, a, &job, &job_config("0 2 * *"))
        .await
        .unwrap_err();
    assert!(matches!(err, CronixError::Invalid { .. }), "{err}");
    let err = assign_job(&store, c, &job, &config).await.unwrap_err();
    assert!(matches!(err, CronixError::NodeDown(n) if n == c), "{err}");
    assert!(
        !store
            .exists(&JobKey {
                node: c,
                job: job.clone()
            })
            .await
            .unwrap()
    );
    assign_job(&store, a, &job, &config).await.unwrap();

    // Node a fails; the job moves to b in one transaction.
    node_a.deregister().await.unwrap();
    let err = move_job(&store, &job, a, c).await.unwrap_err();
    assert!(matches!(err, CronixError::NodeDown(n) if n == c), "{err}");
    let err = move_job(&store, &job, a, a).await.unwrap_err();
    assert!(matches!(err, CronixError::Invalid { .. }), "{err}");
    let moved_at = move_job(&store, &job, a, b).await.unwrap();
    assert!(
        !store
            .exists(&JobKey {
                node: a,
                job: job.clone()
            })
            .await
            .unwrap()
    );
    let moved = store
        .get_versioned(&JobKey {
            node: b,
            job: job.clone(),
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(moved.value, config);
    assert_eq!(moved.mod_revision, moved_at);
    let err = move_job(&store, &job, a, b).await.unwrap_err();
    assert!(
        matches!(err, CronixError::JobNotFound { node, .. } if node == a),
        "{err}"
    );

    // A job of that id already on the target: nothing moves.
    let node_c = register_node(&store, &node_info(c), LONG_TTL)
        .await
        .unwrap();
    assign_job(&store, c, &job, &job_config("*/5 * * * *"))
        .await
        .unwrap();
    let err = move_job(&store, &job, b, c).await.unwrap_err();
    assert!(
        matches!(err, CronixError::JobExists { node, .. } if node == c),
        "{err}"
    );
    assert!(
        store
            .exists(&JobKey {
                node: b,
                job: job.clone()
            })
            .await
            .unwrap()
    );
    assert!(remove_job(&store, c, &job).await.unwrap());

    // Two schedulers move the same job at once: exactly one wins.
    let (s1, s2) = (store.clone(), store.clone());
    let (j1, j2) = (job.clone(), job.clone());
    let (r1, r2) = tokio::join!(
        tokio::spawn(async move { move_job(&s1, &j1, b, c).await }),
        tokio::spawn(async move { move_job(&s2, &j2, b, a).await }),
    );
    let results = [r1.unwrap(), r2.unwrap()];
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{results:?}"
    );
    let loser = results.iter().find_map(|r| r.as_ref().err()).unwrap();
    assert!(
        matches!(
            loser,
            CronixError::JobNotFound { .. }
                | CronixError::JobChanged { .. }
                | CronixError::NodeDown(_)
        ),
        "{loser}"
    );
    assert!(
        !store
            .exists(&JobKey {
                node: b,
                job: job.clone()
            })
            .await
            .unwrap()
    );
    assert!(
        store
            .exists(&JobKey {
                node: c,
                job: job.clone()
            })
            .await
            .unwrap()
    );
    node_b.deregister().await.unwrap();
    node_c.deregister().await.unwrap();
    remove_job(&store, c, &job).await.unwrap();
}

async fn one_shot_trigger_and_cleanup(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let job = unique_job();
    let key = OnceKey { job: job.clone() }.encode();
    let node = Uuid::new_v4();
    trigger_once(&store, &job, OnceTarget::Node(node))
        .await
        .unwrap();
    let raw = store.store().get(key.as_bytes()).await.unwrap().unwrap();
    assert_eq!(raw.value, node.hyphenated().to_string().as_bytes());
    assert_eq!(
        pending_once(&store, &job).await.unwrap(),
        Some(OnceTarget::Node(node))
    );
    let err = trigger_once(&store, &job, OnceTarget::AllNodes)
        .await
        .unwrap_err();
    assert!(
        matches!(err, CronixError::AlreadyTriggered(ref j) if *j == job),
        "{err}"
    );
    assert_eq!(
        pending_once(&store, &job).await.unwrap(),
        Some(OnceTarget::Node(node))
    );

    assert!(finish_once(&store, &job).await.unwrap());
    assert!(!finish_once(&store, &job).await.unwrap());
    assert_eq!(pending_once(&store, &job).await.unwrap(), None);

    trigger_once(&store, &job, OnceTarget::AllNodes)
        .await
        .unwrap();
    let raw = store.store().get(key.as_bytes()).await.unwrap().unwrap();
    assert_eq!(raw.value, b"");
    assert_eq!(
        pending_once(&store, &job).await.unwrap(),
        Some(OnceTarget::AllNodes)
    );
    assert!(finish_once(&store, &job).await.unwrap());
}

async fn lock_unlock_and_lease_expiry(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let name = unique_lock();
    let key = LockKey { name: name.clone() };
    let held = try_lock(&store, &name, LONG_TTL).await.unwrap();
    let raw = store
        .store()
        .get(key.encode().as_bytes())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(raw.value, b"", "the lock key's value is empty");
    assert_eq!(raw.lease, Some(held.lease()));
    assert_eq!(raw.create_revision, held.fencing_token());
    let err = try_lock(&store, &name, LONG_TTL).await.unwrap_err();
    assert!(
        matches!(err, CronixError::LockHeld(ref n) if *n == name),
        "{err}"
    );

    // A waiter takes the lock when the holder unlocks.
    let waiter = {
        let (store, name) = (store.clone(), name.clone());
        tokio::spawn(async move { lock(&store, &name, SHORT_TTL).await })
    };
    held.unlock().await.unwrap();
    let second = tokio::time::timeout(PATIENCE, waiter)
        .await
        .expect("in time")
        .unwrap()
        .unwrap();
    assert!(second.fencing_token() > raw.create_revision);

    // The holder dies (renewals stop): the lock is released when its lease expires.
    let waiter = {
        let (store, name) = (store.clone(), name.clone());
        tokio::spawn(async move { lock(&store, &name, KEPT_TTL).await })
    };
    drop(second);
    let third = tokio::time::timeout(PATIENCE, waiter)
        .await
        .expect("in time")
        .unwrap()
        .unwrap();

    // The lease is revoked behind the holder's back: the holder learns the lock is lost.
    store.store().lease_revoke(third.lease()).await.unwrap();
    let reason = tokio::time::timeout(PATIENCE, third.lost())
        .await
        .expect("lost in time");
    assert_eq!(reason.kind(), kv_core::ErrorKind::LeaseNotFound);
    assert!(third.is_lost());
    assert!(!store.exists(&key).await.unwrap());
    third.unlock().await.unwrap();
    try_lock(&store, &name, LONG_TTL)
        .await
        .unwrap()
        .unlock()
        .await
        .unwrap();
}

async fn system_info_flow(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let node = Uuid::new_v4();
    let info = SystemInfo {
        cpu: CpuInfo {
            cores: 8,
            usage_percent: 12.5,
        },
        memory: Usage {
            total_bytes: 16 << 30,
            used_bytes: 5 << 30,
        },
        disk: Usage {
            total_bytes: 512 << 30,
            used_bytes: 100 << 30,
        },
        collected_at: 1,
    };
    // No request: the node has nothing to answer.
    let err = publish_system_info(&store, node, &info).await.unwrap_err();
    assert!(
        matches!(err, CronixError::NoRequest(n) if n == node),
        "{err}"
    );
    assert!(!store.exists(&SystemInfoKey { node }).await.unwrap());
    assert_eq!(collect_system_info(&store, node).await.unwrap(), None);

    // The node watches its switch; the scheduler turns it on.
    let from = store.store().revision().await.unwrap() + 1;
    let mut switch = store
        .watch_key(&SystemSwitchKey { node }, Some(from))
        .await
        .unwrap();
    request_system_info(&store, node).await.unwrap();
    let batch = tokio::time::timeout(PATIENCE, switch.next())
        .await
        .expect("in time")
        .unwrap()
        .unwrap();
    assert!(
        matches!(&batch.events[0], TypedEvent::Put { key, value } if key.node == node && value.value == SWITCH_ON)
    );
    assert_eq!(
        collect_system_info(&store, node).await.unwrap(),
        None,
        "not answered yet"
    );
    assert!(store.exists(&SystemSwitchKey { node }).await.unwrap());

    let lease = publish_system_info(&store, node, &info).await.unwrap();
    let ttl = store.store().lease_time_to_live(lease).await.unwrap();
    assert_eq!(ttl.granted_ttl, SYSTEM_INFO_TTL);
    assert_eq!(ttl.keys, [SystemInfoKey { node }.encode().into_bytes()]);

    // Collected in one transaction with the switch's deletion.
    assert_eq!(
        collect_system_info(&store, node).await.unwrap(),
        Some(info.clone())
    );
    assert!(!store.exists(&SystemSwitchKey { node }).await.unwrap());
    assert_eq!(system_info(&store, node).await.unwrap(), Some(info));
    // When the lease ends, the information goes.
    store.store().lease_revoke(lease).await.unwrap();
    assert_eq!(system_info(&store, node).await.unwrap(), None);
}

async fn example_dataset(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let node = Uuid::new_v4();
    let example = write_example(&store, node, LONG_TTL).await.unwrap();
    assert!(store.exists(&NodeKey { node }).await.unwrap());
    let job = store.get(&example.job).await.unwrap().expect("the job");
    assert_eq!(job.cron, "0 30 2 * * *");
    assert!(store.exists(example.lock.key()).await.unwrap());
    let lock_name = example.lock.key().name.clone();
    assert!(matches!(
        try_lock(&store, &lock_name, LONG_TTL).await,
        Err(CronixError::LockHeld(_))
    ));
    example.lock.unlock().await.unwrap();
    example.node.deregister().await.unwrap();
    remove_job(&store, node, &example.job.job).await.unwrap();
}

kv_tests::on_every_backend!(
    node_registration_with_keep_alive,
    processes_live_under_a_lease,
    move_a_job_off_a_failed_node,
    one_shot_trigger_and_cleanup,
    lock_unlock_and_lease_expiry,
    system_info_flow,
    example_dataset,
);
