//! Cronix coordination keys on every backend: one-shot triggers and their cleanup, locks
//! (lost with their lease), the system-info flow, and the example dataset.

use futures::StreamExt;
use keyplane_core::Store;
use keyplane_core::keyspace::TypedStore;
use keyplane_core::keyspace::{Key, TypedEvent};
use keyplane_core::recipes::LeaseHeld;
use keyplane_schemas::cronix::*;
use std::sync::Arc;
use uuid::Uuid;

mod cronix_support;
use cronix_support::*;

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
        pending_once(&store, &job).await.unwrap().map(|p| p.target),
        Some(OnceTarget::Node(node))
    );
    let err = trigger_once(&store, &job, OnceTarget::AllNodes)
        .await
        .unwrap_err();
    assert!(
        matches!(CronixError::of(&err).cloned(), Some(CronixError::AlreadyTriggered(ref j)) if *j == job),
        "{err}"
    );
    let pending = pending_once(&store, &job).await.unwrap().unwrap();
    assert_eq!(pending.target, OnceTarget::Node(node));

    assert!(finish_once(&store, &job, &pending).await.unwrap());
    assert!(!finish_once(&store, &job, &pending).await.unwrap());
    assert_eq!(pending_once(&store, &job).await.unwrap(), None);

    trigger_once(&store, &job, OnceTarget::AllNodes)
        .await
        .unwrap();
    let raw = store.store().get(key.as_bytes()).await.unwrap().unwrap();
    assert_eq!(raw.value, b"");
    let pending = pending_once(&store, &job).await.unwrap().unwrap();
    assert_eq!(pending.target, OnceTarget::AllNodes);
    // A newer trigger written after this one was read survives the cleanup of the old run.
    assert!(finish_once(&store, &job, &pending).await.unwrap());
    trigger_once(&store, &job, OnceTarget::Node(node))
        .await
        .unwrap();
    assert!(!finish_once(&store, &job, &pending).await.unwrap());
    assert_eq!(
        pending_once(&store, &job).await.unwrap().map(|p| p.target),
        Some(OnceTarget::Node(node)),
        "the newer trigger is kept"
    );
    let newer = pending_once(&store, &job).await.unwrap().unwrap();
    assert!(finish_once(&store, &job, &newer).await.unwrap());
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
    assert_eq!(raw.create_revision, held.revision());
    let err = try_lock(&store, &name, LONG_TTL).await.unwrap_err();
    assert!(
        matches!(CronixError::of(&err).cloned(), Some(CronixError::LockHeld(ref n)) if *n == name),
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
    assert!(second.revision() > raw.create_revision);

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
    assert_eq!(reason.kind(), keyplane_core::ErrorKind::LeaseNotFound);
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
        matches!(CronixError::of(&err).cloned(), Some(CronixError::NoRequest(n)) if n == node),
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
    assert!(store.exists(example.lock.lock_key()).await.unwrap());
    let lock_name = example.lock.lock_key().name.clone();
    assert!(matches!(
        try_lock(&store, &lock_name, LONG_TTL)
            .await
            .as_ref()
            .map_err(|e| CronixError::of(e).cloned()),
        Err(Some(CronixError::LockHeld(_)))
    ));
    example.lock.unlock().await.unwrap();
    example.node.deregister().await.unwrap();
    remove_job(&store, node, &example.job.job).await.unwrap();
}

keyplane_tests::on_every_backend!(
    one_shot_trigger_and_cleanup,
    lock_unlock_and_lease_expiry,
    system_info_flow,
    example_dataset,
);
