//! Leader election ([`keyplane_core::recipes::Election`]): campaign order, proclaim, resign, hand-over
//! on lease loss, fencing, observation.

use super::locks::{keeper, lease, within};
use super::support::{key, names, next_batch, put, root, snapshot};
use futures::StreamExt;
use keyplane_core::recipes::{Election, Leader, Leadership, LeaseKeeper};
use keyplane_core::{
    Compare, CompareOp, ErrorKind, Event, LeaseId, Store, Txn, TxnOp, WatchOptions,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::task::JoinHandle;

/// Starts a campaign that has to wait, and returns once its key is queued (seen by a watch).
async fn queue_candidate(
    store: &Arc<dyn Store>,
    election: &Election,
    lease: LeaseId,
    value: &'static str,
) -> JoinHandle<keyplane_core::Result<Leadership>> {
    let mut queued = store
        .watch(WatchOptions::prefix(election.prefix()))
        .await
        .unwrap();
    let election = election.clone();
    let waiter = tokio::spawn(async move { election.campaign(lease, value).await });
    let batch = next_batch(&mut queued).await;
    assert!(
        matches!(&batch.events[..], [Event::Put { entry, .. }] if entry.value == value.as_bytes()),
        "the candidate's key is queued"
    );
    waiter
}

/// The first candidate leads at once; a second waits; `try_campaign` by a third leaves nothing
/// behind; a proclamation changes the leader's value; a resignation elects the waiter with a
/// greater fencing revision.
pub async fn election_campaign_proclaim_resign(store: Arc<dyn Store>) {
    let root = root();
    let election = Election::new(store.clone(), key(&root, "election")).unwrap();
    assert_eq!(election.leader().await.unwrap(), None);
    let (a, b, c) = (
        keeper(&store).await,
        keeper(&store).await,
        keeper(&store).await,
    );
    let first = election.campaign(a.id(), "a").await.unwrap();
    assert!(first.key().starts_with(&key(&root, "election/")));
    let leader = election.leader().await.unwrap().expect("a leader");
    assert_eq!(
        (leader.key.as_slice(), leader.value.as_slice()),
        (first.key(), &b"a"[..])
    );
    assert_eq!(
        (leader.revision, leader.lease),
        (first.revision(), Some(a.id()))
    );

    let waiter = queue_candidate(&store, &election, b.id(), "b").await;
    assert!(
        election.try_campaign(c.id(), "c").await.unwrap().is_none(),
        "a candidate leads"
    );
    assert_eq!(
        snapshot(&*store, &root).await.len(),
        2,
        "a refused try_campaign leaves no key"
    );
    assert!(!waiter.is_finished(), "the waiter was elected early");

    let proclaimed = first.proclaim("a, second term").await.unwrap();
    let leader = election.leader().await.unwrap().unwrap();
    assert_eq!(leader.value, b"a, second term");
    assert_eq!(leader.mod_revision, proclaimed);
    assert_eq!(
        leader.revision,
        first.revision(),
        "a proclamation keeps the fencing revision"
    );
    assert_eq!(
        store.get(first.key()).await.unwrap().unwrap().lease,
        Some(a.id()),
        "a proclamation keeps the lease"
    );

    let first_revision = first.revision();
    first.resign().await.unwrap();
    let second = within("the waiter's election", waiter)
        .await
        .unwrap()
        .unwrap();
    assert!(second.revision() > first_revision);
    assert_eq!(second.lease(), b.id());
    assert_eq!(election.leader().await.unwrap().unwrap().value, b"b");
    second.resign().await.unwrap();
    assert_eq!(election.leader().await.unwrap(), None);
    assert!(snapshot(&*store, &root).await.is_empty());
}

/// Revoking the leader's lease hands leadership over: `lost()` fires, the next candidate is
/// elected, and the old leader's proclamation and fenced writes fail and change nothing.
pub async fn election_hands_over_when_the_lease_ends(store: Arc<dyn Store>) {
    let root = root();
    let election = Election::new(store.clone(), key(&root, "election")).unwrap();
    let data = key(&root, "data");
    let old_lease = lease(&store, Duration::from_secs(60)).await;
    let old = election.campaign(old_lease, "old").await.unwrap();
    let fenced = |fence: Compare, value: &str| {
        Txn::new()
            .when([fence])
            .and_then([TxnOp::put(&data, value)])
    };
    assert!(
        store
            .txn(fenced(old.fence(), "old"))
            .await
            .unwrap()
            .succeeded
    );
    let next_keeper = keeper(&store).await;
    let next = {
        let (election, id) = (election.clone(), next_keeper.id());
        tokio::spawn(async move { election.campaign(id, "next").await })
    };
    store.lease_revoke(old_lease).await.unwrap();
    let err = within("lost() after the revoke", old.lost()).await;
    assert_eq!(err.kind(), ErrorKind::LockLost);
    assert!(old.is_lost());
    let next = within("the next election", next).await.unwrap().unwrap();
    assert!(next.revision() > old.revision());

    let err = old.proclaim("stale").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LockLost, "{err}");
    assert!(
        !store
            .txn(fenced(old.fence(), "stale"))
            .await
            .unwrap()
            .succeeded
    );
    assert!(
        store
            .txn(fenced(next.fence(), "next"))
            .await
            .unwrap()
            .succeeded
    );
    assert_eq!(store.get(&data).await.unwrap().unwrap().value, b"next");
    let leader = election.leader().await.unwrap().unwrap();
    assert_eq!(
        (leader.value.as_slice(), leader.lease),
        (&b"next"[..], Some(next_keeper.id()))
    );
    assert!(
        old.resign().await.is_err(),
        "resigning a lost leadership fails"
    );
    next.resign().await.unwrap();
}

/// Candidates that campaign, write fenced and resign in turns never lead together, and every
/// fenced write lands: the count of rounds is exact.
pub async fn election_one_leader_at_a_time(store: Arc<dyn Store>) {
    let root = root();
    let name = key(&root, "election");
    let counter = key(&root, "counter");
    let leading = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for who in 0..3 {
        let (store, name, counter, leading) = (
            store.clone(),
            name.clone(),
            counter.clone(),
            leading.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let keeper: LeaseKeeper = keeper(&store).await;
            let election = Election::new(store.clone(), &name).unwrap();
            for round in 0..3 {
                let leadership = election
                    .campaign(keeper.id(), format!("{who}/{round}"))
                    .await
                    .unwrap();
                assert!(!leading.swap(true, Ordering::SeqCst), "two leaders at once");
                let current = store.get(&counter).await.unwrap();
                let (n, revision) = current.map_or((0, 0), |e| {
                    (
                        String::from_utf8(e.value).unwrap().parse::<u32>().unwrap(),
                        e.mod_revision,
                    )
                });
                let write = Txn::new()
                    .when([
                        leadership.fence(),
                        Compare::mod_revision(&counter, CompareOp::Equal, revision),
                    ])
                    .and_then([TxnOp::put(&counter, (n + 1).to_string())]);
                assert!(
                    store.txn(write).await.unwrap().succeeded,
                    "the leader's write lost a race"
                );
                leading.store(false, Ordering::SeqCst);
                leadership.resign().await.unwrap();
            }
            keeper.revoke().await.unwrap();
        }));
    }
    for t in tasks {
        within("every candidate finishing", t).await.unwrap();
    }
    assert_eq!(store.get(&counter).await.unwrap().unwrap().value, b"9");
}

/// `observe` yields the current leader, then each new leader and each proclamation once, and
/// `None` when nobody leads; a queued candidate is not a change.
pub async fn election_observe_follows_the_leadership(store: Arc<dyn Store>) {
    let root = root();
    let election = Election::new(store.clone(), key(&root, "election")).unwrap();
    let mut observed = election.observe();
    let mut next = async || -> Option<Leader> {
        within("an observation", observed.next())
            .await
            .expect("the observation continues")
            .unwrap()
    };
    assert_eq!(next().await, None);
    let (a, b) = (keeper(&store).await, keeper(&store).await);
    let first = election.campaign(a.id(), "a").await.unwrap();
    let seen = next().await.expect("a leader");
    assert_eq!(
        (seen.key.as_slice(), seen.value.as_slice()),
        (first.key(), &b"a"[..])
    );
    let waiter = queue_candidate(&store, &election, b.id(), "b").await;
    first.proclaim("a2").await.unwrap();
    // The queued candidate changed nothing: the next observation is the proclamation.
    let seen = next().await.expect("a leader");
    assert_eq!(seen.value, b"a2");
    assert_eq!(seen.revision, first.revision());
    first.resign().await.unwrap();
    let second = within("the waiter's election", waiter)
        .await
        .unwrap()
        .unwrap();
    let seen = next().await.expect("a leader");
    assert_eq!(
        (seen.value.as_slice(), seen.revision),
        (&b"b"[..], second.revision())
    );
    second.resign().await.unwrap();
    assert_eq!(next().await, None);
}

/// A bad name is `InvalidKey`, a revoked lease `LeaseNotFound`, a second campaign with one
/// lease `AlreadyExists`; none leaves a key behind. Keys under the election's prefix that are
/// not candidates (no lease id) are ignored.
pub async fn election_rejects_bad_input(store: Arc<dyn Store>) {
    let root = root();
    assert_eq!(
        Election::new(store.clone(), "").unwrap_err().kind(),
        ErrorKind::InvalidKey
    );
    let election = Election::new(store.clone(), key(&root, "election")).unwrap();
    // Not candidates: a key of a nested election, and a name that is not a lease id.
    put(&*store, &key(&root, "election/sub/1"), "nested").await;
    put(&*store, &key(&root, "election/notes"), "other").await;
    assert_eq!(election.leader().await.unwrap(), None);
    let revoked = lease(&store, Duration::from_secs(30)).await;
    store.lease_revoke(revoked).await.unwrap();
    let err = election.campaign(revoked, "x").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LeaseNotFound, "{err}");
    let held = keeper(&store).await;
    let leadership = election.campaign(held.id(), "first").await.unwrap();
    let err = election
        .try_campaign(held.id(), "second")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyExists, "{err}");
    assert_eq!(
        election.leader().await.unwrap().unwrap().value,
        b"first",
        "a refused campaign changes nothing"
    );
    leadership.resign().await.unwrap();
    assert_eq!(
        names(&root, &snapshot(&*store, &root).await),
        ["election/notes", "election/sub/1"]
    );
}
