//! Process termination as the cronix document says ("任务终止时 Node 服务删除") on every
//! backend: the scheduler sets the process's `killed` flag, the node sees it through a watch,
//! ends the process and removes only the key it recorded.

use keyplane_core::Store;
use keyplane_core::keyspace::{Key, TypedStore};
use keyplane_core::recipes::LeaseHeld;
use keyplane_schemas::cronix::*;
use std::sync::Arc;
use uuid::Uuid;

mod cronix_support;
use cronix_support::*;

fn proc(node: Uuid, job: &JobId, pid: u32, started_at: u64) -> (ProcKey, ProcInfo) {
    (
        ProcKey {
            node,
            job: job.clone(),
            pid,
        },
        ProcInfo {
            pid,
            job_id: job.as_str().into(),
            killed: false,
            started_at,
        },
    )
}

async fn next(requests: &mut TerminationRequests) -> TerminateRequest {
    tokio::time::timeout(PATIENCE, requests.next())
        .await
        .expect("a termination request in time")
        .expect("the requests go on")
        .expect("no watch error")
}

async fn terminate_request_reaches_the_node(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let node = Uuid::new_v4();
    let registration = register_node(&store, &node_info(node), LONG_TTL)
        .await
        .unwrap();
    let job = unique_job();
    let (first, first_info) = proc(node, &job, 100, 1);
    let (second, second_info) = proc(node, &job, 101, 2);
    for (key, info) in [(&first, &first_info), (&second, &second_info)] {
        record_process(&store, key, info, registration.lease())
            .await
            .unwrap();
    }
    // A request made before the node starts listening is delivered too.
    terminate_process(&store, &first).await.unwrap();
    let mut requests = termination_requests(&store, node).await.unwrap();
    let pending = next(&mut requests).await;
    assert_eq!(pending.key, first);
    assert!(pending.info.killed);
    // The flag keeps the process on its lease.
    let raw = store
        .store()
        .get(first.encode().as_bytes())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(raw.lease, Some(registration.lease()));

    let revision = terminate_process(&store, &second).await.unwrap();
    let live = next(&mut requests).await;
    assert_eq!(
        (live.key.clone(), live.revision),
        (second.clone(), revision)
    );
    assert_eq!(
        terminate_process(&store, &second).await.unwrap(),
        revision,
        "asking again changes nothing"
    );

    // The node ends both processes and removes their keys.
    assert!(
        finish_process(&store, &pending.key, &first_info)
            .await
            .unwrap()
    );
    assert!(
        finish_process(&store, &live.key, &second_info)
            .await
            .unwrap()
    );
    assert!(
        job_processes(
            &store,
            &JobProcsDir {
                node,
                job: job.clone()
            }
        )
        .await
        .unwrap()
        .is_empty()
    );
    assert!(matches!(
    terminate_process(&store, &first).await.as_ref().map_err(|e| CronixError::of(e).cloned()),
    Err(Some(CronixError::ProcessNotFound(ref k))) if *k == first
    ));
    assert!(
        !store.exists(&first).await.unwrap(),
        "a refused request writes nothing"
    );
    registration.deregister().await.unwrap();
}

async fn a_stale_finisher_leaves_a_newer_process(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let node = Uuid::new_v4();
    let registration = register_node(&store, &node_info(node), LONG_TTL)
        .await
        .unwrap();
    let job = unique_job();
    let (key, old) = proc(node, &job, 7, 1);
    record_process(&store, &key, &old, registration.lease())
        .await
        .unwrap();
    // The pid is reused by a new run before the old run's finisher gets to it.
    let (_, new) = proc(node, &job, 7, 2);
    record_process(&store, &key, &new, registration.lease())
        .await
        .unwrap();
    assert!(!finish_process(&store, &key, &old).await.unwrap());
    assert_eq!(store.get(&key).await.unwrap(), Some(new.clone()));
    // Terminated, the new run is still finished by its own finisher.
    terminate_process(&store, &key).await.unwrap();
    assert!(!finish_process(&store, &key, &old).await.unwrap());
    assert!(finish_process(&store, &key, &new).await.unwrap());
    assert!(!store.exists(&key).await.unwrap());
    registration.deregister().await.unwrap();
}

keyplane_tests::on_every_backend!(
    terminate_request_reaches_the_node,
    a_stale_finisher_leaves_a_newer_process,
);
