//! Cronix nodes, processes and jobs on every backend: node registration with keep-alive and
//! expiry, processes under a lease, a job moved off a failed node in one transaction.

use keyplane_core::Store;
use keyplane_core::keyspace::TypedStore;
use keyplane_core::recipes::LeaseHeld;
use keyplane_schemas::cronix::*;
use std::sync::Arc;
use uuid::Uuid;

mod cronix_support;
use cronix_support::*;

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
    assert!(
        list_nodes(&store)
            .await
            .unwrap()
            .infos()
            .any(|n| *n == node_info(id))
    );

    // Kept alive: after four renewals (one every third of the TTL) more than a TTL has
    // passed, and the node key is still the one registered.
    tokio::time::timeout(PATIENCE, node.renewed(4))
        .await
        .expect("the registration is renewed")
        .unwrap_or_else(|e| panic!("the node lease was lost: {e}"));
    assert!(!node.is_lost());
    let kept = store
        .get_versioned(&key)
        .await
        .unwrap()
        .expect("still registered");
    assert_eq!(
        kept.mod_revision, entry.mod_revision,
        "the node key changed"
    );

    let err = register_node(&store, &node_info(id), LONG_TTL)
        .await
        .unwrap_err();
    assert!(
        matches!(CronixError::of(&err).cloned(), Some(CronixError::NodeExists(n)) if n == id),
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
    assert!(
        matches!(
            CronixError::of(&err).cloned(),
            Some(CronixError::Invalid { .. })
        ),
        "{err}"
    );
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
    assert!(
        matches!(
            CronixError::of(&err).cloned(),
            Some(CronixError::Invalid { .. })
        ),
        "{err}"
    );
    let err = assign_job(&store, c, &job, &config).await.unwrap_err();
    assert!(
        matches!(CronixError::of(&err).cloned(), Some(CronixError::NodeDown(n)) if n == c),
        "{err}"
    );
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
    assert!(
        matches!(CronixError::of(&err).cloned(), Some(CronixError::NodeDown(n)) if n == c),
        "{err}"
    );
    let err = move_job(&store, &job, a, a).await.unwrap_err();
    assert!(
        matches!(
            CronixError::of(&err).cloned(),
            Some(CronixError::Invalid { .. })
        ),
        "{err}"
    );
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
        matches!(CronixError::of(&err).cloned(), Some(CronixError::JobNotFound { node, .. }) if node == a),
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
        matches!(CronixError::of(&err).cloned(), Some(CronixError::JobExists { node, .. }) if node == c),
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
            CronixError::of(loser).cloned(),
            Some(
                CronixError::JobNotFound { .. }
                    | CronixError::JobChanged { .. }
                    | CronixError::NodeDown(_)
            )
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

/// The live cluster view: nodes and their jobs, and a node whose lease expires reported as
/// lost with the jobs failover has to move.
async fn the_live_cluster_reports_a_lost_node_with_its_jobs(store: Arc<dyn Store>) {
    use futures::StreamExt;
    let store = TypedStore::new(store);
    let cluster = LiveCluster::start(&store).await.unwrap();
    let mut events = cluster.node_events();
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    let node_a = register_node(&store, &node_info(a), LONG_TTL)
        .await
        .unwrap();
    let node_b = register_node(&store, &node_info(b), SHORT_TTL)
        .await
        .unwrap();
    let job = unique_job();
    let written = assign_job(&store, b, &job, &job_config("0 3 * * *"))
        .await
        .unwrap();
    let view = tokio::time::timeout(PATIENCE, cluster.wait_for(written))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(view.node(a), Some(node_info(a)));
    assert_eq!(view.jobs(b), [(job.clone(), job_config("0 3 * * *"))]);
    assert!(view.orphaned_jobs().iter().all(|(node, _)| *node != b));

    // Node b stops renewing: its lease expires and the cluster view reports it lost.
    drop(node_b);
    let lost = tokio::time::timeout(PATIENCE, async {
        loop {
            match events.next().await.expect("node events") {
                NodeEvent::Lost { node, jobs } if node == b => return jobs,
                _ => {}
            }
        }
    })
    .await
    .expect("node b lost");
    assert_eq!(lost, std::slice::from_ref(&job));
    let view = cluster.view();
    assert_eq!(view.node(b), None);
    assert!(view.orphaned_jobs().contains(&(b, job.clone())));
    assert!(view.nodes().contains(&node_info(a)));

    // The failover the event calls for: b's job moves to a, the only live node.
    let targets: Vec<Uuid> = view.nodes().iter().map(|n| n.uuid).collect();
    let report = fail_over(&store, b, &targets).await.unwrap();
    assert_eq!(report.moved, vec![(job.clone(), a)]);
    let moved = store.revision().await.unwrap();
    let view = cluster.wait_for(moved).await.unwrap();
    assert!(view.orphaned_jobs().iter().all(|(node, _)| *node != b));
    assert_eq!(view.jobs(a), [(job.clone(), job_config("0 3 * * *"))]);
    remove_job(&store, a, &job).await.unwrap();
    node_a.deregister().await.unwrap();
}

/// Two schedulers fail over one lost node at once: every job moves exactly once (each is on
/// exactly one live node afterwards, and exactly one scheduler reports it moved). A node
/// registered again stops the failover.
async fn two_schedulers_fail_over_one_node(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let (dead, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let node_b = register_node(&store, &node_info(b), LONG_TTL)
        .await
        .unwrap();
    let node_c = register_node(&store, &node_info(c), LONG_TTL)
        .await
        .unwrap();
    let lost = register_node(&store, &node_info(dead), LONG_TTL)
        .await
        .unwrap();
    let jobs: Vec<JobId> = (0..12).map(|_| unique_job()).collect();
    for job in &jobs {
        assign_job(&store, dead, job, &job_config("*/5 * * * *"))
            .await
            .unwrap();
    }
    lost.deregister().await.unwrap();
    let run = |targets: Vec<Uuid>| {
        let store = store.clone();
        tokio::spawn(async move { fail_over(&store, dead, &targets).await.unwrap() })
    };
    let (one, two) = (run(vec![b, c]), run(vec![c, b]));
    let (one, two) = (one.await.unwrap(), two.await.unwrap());
    let mut moved: Vec<JobId> = one
        .moved
        .iter()
        .chain(&two.moved)
        .map(|(job, _)| job.clone())
        .collect();
    moved.sort();
    let mut expected = jobs.clone();
    expected.sort();
    assert_eq!(moved, expected, "each job moved once: {one:?} {two:?}");
    assert!(one.stranded.is_empty() && two.stranded.is_empty());
    // What one took, the other moved: a scheduler that listed the jobs late sees fewer.
    for job in one.taken.iter().chain(&two.taken) {
        assert!(moved.contains(job), "{job} taken but never moved");
    }
    for job in &jobs {
        let on_b = store
            .exists(&JobKey {
                node: b,
                job: job.clone(),
            })
            .await
            .unwrap();
        let on_c = store
            .exists(&JobKey {
                node: c,
                job: job.clone(),
            })
            .await
            .unwrap();
        let on_dead = store
            .exists(&JobKey {
                node: dead,
                job: job.clone(),
            })
            .await
            .unwrap();
        assert!(
            on_b != on_c && !on_dead,
            "{job}: b {on_b}, c {on_c}, dead {on_dead}"
        );
    }

    // A node that comes back before its failover keeps its jobs.
    let back = unique_job();
    let returned = register_node(&store, &node_info(dead), LONG_TTL)
        .await
        .unwrap();
    assign_job(&store, dead, &back, &job_config("0 * * * *"))
        .await
        .unwrap();
    let err = fail_over(&store, dead, &[b]).await.unwrap_err();
    assert!(
        matches!(CronixError::of(&err).cloned(), Some(CronixError::NodeExists(n)) if n == dead),
        "{err}"
    );
    assert!(
        store
            .exists(&JobKey {
                node: dead,
                job: back.clone()
            })
            .await
            .unwrap()
    );
    let err = fail_over(&store, dead, &[dead]).await.unwrap_err();
    assert!(
        matches!(
            CronixError::of(&err).cloned(),
            Some(CronixError::Invalid { .. })
        ),
        "{err}"
    );
    for (node, job) in jobs
        .iter()
        .flat_map(|j| [(b, j.clone()), (c, j.clone())])
        .chain([(dead, back)])
    {
        remove_job(&store, node, &job).await.unwrap();
    }
    for registration in [node_b, node_c, returned] {
        registration.deregister().await.unwrap();
    }
}

/// Jobs take the document's descriptors as well as five or six fields; a schedule that does
/// not parse is refused with the field at fault, and nothing is written.
async fn jobs_take_descriptors_and_refuse_bad_schedules(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let node = Uuid::new_v4();
    let registration = register_node(&store, &node_info(node), LONG_TTL)
        .await
        .unwrap();
    for cron in [
        "@every 5m",
        "@daily",
        "@hourly",
        "*/10 9-17 * * MON-FRI",
        "0 30 2 * * *",
    ] {
        let job = unique_job();
        assign_job(&store, node, &job, &job_config(cron))
            .await
            .unwrap_or_else(|e| panic!("{cron}: {e}"));
        assert!(remove_job(&store, node, &job).await.unwrap());
    }
    for (cron, says) in [
        ("@sometimes", "descriptor"),
        ("0 24 * * *", "hour"),
        ("@every 0s", "positive"),
    ] {
        let job = unique_job();
        let err = assign_job(&store, node, &job, &job_config(cron))
            .await
            .unwrap_err();
        assert!(
            matches!(CronixError::of(&err), Some(CronixError::Invalid { reason, .. }) if reason.contains(says)),
            "{cron}: {err}"
        );
        assert!(!store.exists(&JobKey { node, job }).await.unwrap());
    }
    registration.deregister().await.unwrap();
}

/// A node that restarts with its old UUID while its old lease is alive takes over at once:
/// the old lease and the process keys on it go, the new registration holds the node key.
async fn a_restarted_node_takes_over_its_uuid(store: Arc<dyn Store>) {
    let store = TypedStore::new(store);
    let id = Uuid::new_v4();
    let old = register_node(&store, &node_info(id), LONG_TTL)
        .await
        .unwrap();
    let old_lease = old.lease();
    let job = unique_job();
    let proc_key = ProcKey {
        node: id,
        job: job.clone(),
        pid: 4242,
    };
    let info = ProcInfo {
        pid: 4242,
        job_id: job.to_string(),
        killed: false,
        started_at: 1,
    };
    record_process(&store, &proc_key, &info, old_lease)
        .await
        .unwrap();
    // The old process dies without deregistering: its lease stays alive for LONG_TTL.
    drop(old);
    let err = register_node(&store, &node_info(id), LONG_TTL)
        .await
        .unwrap_err();
    assert!(
        matches!(CronixError::of(&err).cloned(), Some(CronixError::NodeExists(n)) if n == id),
        "{err}"
    );
    let new = take_over_node(&store, &node_info(id), LONG_TTL)
        .await
        .unwrap();
    let entry = store
        .get_versioned(&NodeKey { node: id })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(entry.lease, Some(new.lease()));
    assert_ne!(new.lease(), old_lease);
    assert!(
        !store.exists(&proc_key).await.unwrap(),
        "the old process keys went with the old lease"
    );
    assert_eq!(
        store
            .store()
            .lease_time_to_live(old_lease)
            .await
            .unwrap_err()
            .kind(),
        keyplane_core::ErrorKind::LeaseNotFound
    );
    // With nothing to take over it is a plain registration.
    new.deregister().await.unwrap();
    let again = take_over_node(&store, &node_info(id), LONG_TTL)
        .await
        .unwrap();
    again.deregister().await.unwrap();
}

keyplane_tests::on_every_backend!(
    a_restarted_node_takes_over_its_uuid,
    jobs_take_descriptors_and_refuse_bad_schedules,
    the_live_cluster_reports_a_lost_node_with_its_jobs,
    node_registration_with_keep_alive,
    processes_live_under_a_lease,
    move_a_job_off_a_failed_node,
    two_schedulers_fail_over_one_node,
);
