//! The elected dispatcher on every backend: one scheduler instance at a time holds the
//! document's lock keys (`/Cronix/lock/<name>.<lease>`), its writes are fenced on its
//! leadership, and the next instance takes over when its lease ends.

use futures::StreamExt;
use keyplane_core::keyspace::{Key, Keyspace, TypedStore};
use keyplane_core::recipes::LeaseHeld;
use keyplane_core::{Event, RangeOptions, Store, WatchOptions};
use keyplane_schemas::cronix::*;
use std::sync::Arc;
use uuid::Uuid;

mod cronix_support;
use cronix_support::*;

fn prefix(name: &LockName) -> String {
    format!("/Cronix/lock/{name}.")
}

async fn candidates(store: &TypedStore, name: &LockName) -> Vec<String> {
    let page = store
        .store()
        .range(RangeOptions::prefix(prefix(name)))
        .await
        .unwrap();
    page.entries
        .into_iter()
        .map(|e| String::from_utf8(e.key).unwrap())
        .collect()
}

/// Starts a campaign that has to wait and returns once its key is queued.
async fn queued_campaign(
    store: &TypedStore,
    election: &DispatcherElection,
) -> tokio::task::JoinHandle<keyplane_core::Result<Dispatcher>> {
    let mut queue = store
        .store()
        .watch(WatchOptions::prefix(prefix(election.name())))
        .await
        .unwrap();
    let waiting = {
        let election = election.clone();
        tokio::spawn(async move { election.campaign(LONG_TTL).await })
    };
    let batch = tokio::time::timeout(PATIENCE, queue.next())
        .await
        .expect("the candidate queued in time")
        .unwrap()
        .unwrap();
    assert!(matches!(batch.events[..], [Event::Put { .. }]));
    waiting
}

async fn one_dispatcher_at_a_time(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let name = unique_lock();
    let election = DispatcherElection::named(&store, &name).unwrap();
    let node = Uuid::new_v4();
    let registration = register_node(&store, &node_info(node), LONG_TTL)
        .await
        .unwrap();
    let first = election.campaign(LONG_TTL).await.unwrap();

    // The candidate's key is the document's lock key, with its empty value.
    let key = first.lock_key().encode();
    assert!(key.starts_with(&prefix(&name)), "{key}");
    let raw = store.store().get(key.as_bytes()).await.unwrap().unwrap();
    assert_eq!(raw.value, b"");
    assert_eq!(raw.lease, Some(first.lease()));
    assert!(matches!(
        CronixKeyspace::parse(&key),
        Ok(CronixKeyspace::Lock(ref lock)) if lock == first.lock_key()
    ));
    let leader = election.leader().await.unwrap().unwrap();
    assert_eq!(
        (&leader.lock, leader.revision, leader.lease),
        (first.lock_key(), first.revision(), Some(first.lease()))
    );

    let second = queued_campaign(&store, &election).await;
    assert!(election.try_campaign(LONG_TTL).await.unwrap().is_none());
    assert_eq!(
        candidates(&store, &name).await.len(),
        2,
        "a refused try_campaign leaves no key"
    );
    assert!(!second.is_finished(), "two dispatchers");

    let job = unique_job();
    first
        .assign_job(node, &job, &job_config("0 2 * * *"))
        .await
        .unwrap();

    // The first instance's lease ends (a pause longer than its TTL): the second takes over.
    store.store().lease_revoke(first.lease()).await.unwrap();
    tokio::time::timeout(PATIENCE, first.lost())
        .await
        .expect("the loss seen in time");
    let second = tokio::time::timeout(PATIENCE, second)
        .await
        .expect("the second instance elected in time")
        .unwrap()
        .unwrap();
    assert!(second.revision() > first.revision());
    assert_eq!(
        election.leader().await.unwrap().unwrap().lock,
        *second.lock_key()
    );

    // The deposed instance's writes are refused and change nothing.
    let other = unique_job();
    let refused = [
        first
            .assign_job(node, &other, &job_config("0 3 * * *"))
            .await,
        first.trigger_once(&other, OnceTarget::AllNodes).await,
    ];
    for result in refused {
        assert!(
            matches!(
                result.as_ref().map_err(|e| CronixError::of(e).cloned()),
                Err(Some(CronixError::NotDispatcher))
            ),
            "{result:?}"
        );
        // The class a caller that does not know cronix sees: the hold was lost.
        let kind = result.as_ref().map(|_| ()).unwrap_err().kind();
        assert_eq!(kind, keyplane_core::ErrorKind::LockLost);
    }
    assert!(matches!(
        first
            .remove_job(node, &job)
            .await
            .as_ref()
            .map_err(|e| CronixError::of(e).cloned()),
        Err(Some(CronixError::NotDispatcher))
    ));
    assert!(
        !store
            .exists(&JobKey {
                node,
                job: other.clone()
            })
            .await
            .unwrap()
    );
    assert!(!store.exists(&OnceKey { job: other.clone() }).await.unwrap());
    assert!(
        store
            .exists(&JobKey {
                node,
                job: job.clone()
            })
            .await
            .unwrap(),
        "the deposed instance's remove changed nothing"
    );

    // The new dispatcher writes.
    second
        .trigger_once(&other, OnceTarget::Node(node))
        .await
        .unwrap();
    assert!(second.remove_job(node, &job).await.unwrap());
    assert!(!second.remove_job(node, &job).await.unwrap());
    second.resign().await.unwrap();
    assert!(election.leader().await.unwrap().is_none());
    assert!(candidates(&store, &name).await.is_empty());
    let _ = first.resign().await;
    registration.deregister().await.unwrap();
}

async fn dispatcher_moves_and_fails_over_fenced(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let election = DispatcherElection::named(&store, &unique_lock()).unwrap();
    let (dead, live) = (Uuid::new_v4(), Uuid::new_v4());
    let dead_node = register_node(&store, &node_info(dead), LONG_TTL)
        .await
        .unwrap();
    let live_node = register_node(&store, &node_info(live), LONG_TTL)
        .await
        .unwrap();
    let dispatcher = election.campaign(LONG_TTL).await.unwrap();
    let (a, b) = (unique_job(), unique_job());
    for job in [&a, &b] {
        dispatcher
            .assign_job(dead, job, &job_config("@every 5m"))
            .await
            .unwrap();
    }
    dispatcher.move_job(&a, dead, live).await.unwrap();
    dead_node.deregister().await.unwrap();
    let report = dispatcher.fail_over(dead, &[live]).await.unwrap();
    assert_eq!(report.moved, vec![(b.clone(), live)]);

    // Deposed: a move is refused and the job stays where it is.
    let c = unique_job();
    dispatcher
        .assign_job(live, &c, &job_config("@daily"))
        .await
        .unwrap();
    store
        .store()
        .lease_revoke(dispatcher.lease())
        .await
        .unwrap();
    let other = Uuid::new_v4();
    let _other_node = register_node(&store, &node_info(other), LONG_TTL)
        .await
        .unwrap();
    assert!(matches!(
        dispatcher
            .move_job(&c, live, other)
            .await
            .as_ref()
            .map_err(|e| CronixError::of(e).cloned()),
        Err(Some(CronixError::NotDispatcher))
    ));
    assert!(
        store
            .exists(&JobKey {
                node: live,
                job: c.clone()
            })
            .await
            .unwrap()
    );
    for job in [a, b, c] {
        remove_job(&store, live, &job).await.unwrap();
    }
    live_node.deregister().await.unwrap();
}

async fn observers_follow_the_dispatcher(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let election = DispatcherElection::named(&store, &unique_lock()).unwrap();
    let mut observed = election.observe();
    let mut next = async || {
        tokio::time::timeout(PATIENCE, observed.next())
            .await
            .expect("an observation in time")
            .expect("the observation continues")
            .unwrap()
    };
    assert_eq!(next().await, None);
    let first = election.campaign(LONG_TTL).await.unwrap();
    assert_eq!(next().await.unwrap().lock, *first.lock_key());
    let second = queued_campaign(&store, &election).await;
    first.resign().await.unwrap();
    let second = tokio::time::timeout(PATIENCE, second)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    // The queued candidate was no change: the next observation is the hand-over.
    let seen = next().await.unwrap();
    assert_eq!(
        (&seen.lock, seen.revision),
        (second.lock_key(), second.revision())
    );
    second.resign().await.unwrap();
    assert_eq!(next().await, None);
}

async fn a_name_leaving_no_room_for_the_lease_is_refused(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let long = LockName::new("d".repeat(112)).unwrap();
    assert!(matches!(
        DispatcherElection::named(&store, &long)
            .as_ref()
            .map_err(|e| CronixError::of(e).cloned()),
        Err(Some(CronixError::Invalid { .. }))
    ));
    let longest = LockName::new(format!("{}{}", "d".repeat(79), Uuid::new_v4().simple())).unwrap();
    let election = DispatcherElection::named(&store, &longest).unwrap();
    let dispatcher = election.campaign(LONG_TTL).await.unwrap();
    assert_eq!(
        dispatcher.lock_key().name.as_str().len(),
        111 + 1 + dispatcher.lease().to_string().len()
    );
    dispatcher.resign().await.unwrap();
}

keyplane_tests::on_every_backend!(
    one_dispatcher_at_a_time,
    dispatcher_moves_and_fails_over_fenced,
    observers_follow_the_dispatcher,
    a_name_leaving_no_room_for_the_lease_is_refused,
);
