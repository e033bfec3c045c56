//! Balancer operations racing each other on every backend: concurrent links of one pair,
//! and links, unlinks, status changes and key writes on one key and several groups. After
//! each round the cache keeps its invariant: a key is in a group's active list exactly once
//! when it is active and linked to the group, and not at all otherwise.

use keyplane_core::Store;
use keyplane_core::keyspace::TypedStore;
use keyplane_schemas::balancer::*;
use std::sync::Arc;

/// A cache under a root of its own for each case.
fn cache(store: Arc<dyn Store>) -> Balancer {
    let root = BalancerRoot::new(format!("bal{}", uuid::Uuid::new_v4().simple())).unwrap();
    Balancer::with_root(&TypedStore::new(store), root).unwrap()
}

fn record(id: u64, status: KeyStatus) -> ApiKeyRecord {
    ApiKeyRecord {
        api_key: format!("sk-{id}"),
        status,
    }
}

/// A deterministic pseudo-random number from a seed (splitmix64), so that a failing round
/// can be replayed.
fn mix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Checks the invariant for key `id` over `groups`: listed once when active and linked,
/// never otherwise.
async fn assert_lists_match(c: &Balancer, id: u64, groups: &[u64], when: &str) {
    let status = c.key(id).await.unwrap().expect("the key is cached").status;
    let linked = c.groups_of(id).await.unwrap();
    for &group in groups {
        let list = c.active_keys(group).await.unwrap();
        let listed = list.iter().filter(|k| **k == id).count();
        let expected = usize::from(status == KeyStatus::Active && linked.contains(&group));
        assert_eq!(
            listed, expected,
            "{when}: key {id} is {status}, linked to {linked:?}, and listed {listed} times \
             in group {group}'s active list {list:?}"
        );
    }
}

/// Eight concurrent links of one key to one group, round after round on fresh groups: the
/// key is listed once and exactly one link reports itself new.
async fn concurrent_links_of_one_pair_link_once(store: Arc<dyn Store>) {
    let c = cache(store);
    c.put_key(1, &record(1, KeyStatus::Active)).await.unwrap();
    for group in 1..=20 {
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let c = c.clone();
                tokio::spawn(async move { c.link(1, group).await })
            })
            .collect();
        let mut new = 0;
        for task in tasks {
            new += usize::from(task.await.unwrap().unwrap());
        }
        assert_eq!(
            c.active_keys(group).await.unwrap(),
            [1],
            "group {group}: the key is listed once"
        );
        assert_eq!(new, 1, "group {group}: exactly one of the links is new");
        assert!(c.groups_of(1).await.unwrap().contains(&group));
    }
}

/// One writer's step: a link or unlink of a group, a status change or a whole key write.
/// Statuses include one the document does not name, which is not active.
#[derive(Debug, Clone)]
enum Step {
    Link(u64),
    Unlink(u64),
    Status(KeyStatus),
    Put(KeyStatus),
}

impl Step {
    fn from_seed(seed: u64, groups: &[u64]) -> Self {
        let r = mix(seed);
        let group = groups[(r >> 8) as usize % groups.len()];
        let status = match (r >> 16) % 3 {
            0 => KeyStatus::Active,
            1 => KeyStatus::Disabled,
            _ => KeyStatus::Other("suspended".to_owned()),
        };
        match r % 8 {
            0..=2 => Step::Link(group),
            3 => Step::Unlink(group),
            4..=6 => Step::Status(status),
            _ => Step::Put(status),
        }
    }

    async fn run(self, c: &Balancer, id: u64) {
        let done = match &self {
            Step::Link(group) => c.link(id, *group).await.map(drop),
            Step::Unlink(group) => c.unlink(id, *group).await.map(drop),
            Step::Status(status) => c.set_status(id, status.clone()).await,
            Step::Put(status) => c.put_key(id, &record(id, status.clone())).await,
        };
        if let Err(e) = done {
            panic!("{self:?} on key {id}: {e}");
        }
    }
}

/// Six writers race links, unlinks, status changes and key writes on one key and four
/// groups, 30 rounds of two steps each; another key shares the groups and stays listed.
/// After every round the lists agree with the key's status and reverse index.
async fn racing_links_and_status_changes_keep_the_lists_exact(store: Arc<dyn Store>) {
    let c = cache(store);
    let groups = [1, 2, 3, 4];
    for id in [1, 2] {
        c.put_key(id, &record(id, KeyStatus::Active)).await.unwrap();
    }
    for group in groups {
        c.link(2, group).await.unwrap();
    }
    c.link(1, 1).await.unwrap();
    c.link(1, 2).await.unwrap();
    for round in 0..30u64 {
        let tasks: Vec<_> = (0..6u64)
            .map(|writer| {
                let c = c.clone();
                tokio::spawn(async move {
                    for step in 0..2u64 {
                        let seed = (round << 16) | (writer << 8) | step;
                        Step::from_seed(seed, &groups).run(&c, 1).await;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        assert_lists_match(&c, 1, &groups, &format!("after round {round}")).await;
        assert_lists_match(&c, 2, &groups, &format!("after round {round}")).await;
    }
}

keyplane_tests::on_every_backend!(
    concurrent_links_of_one_pair_link_once,
    racing_links_and_status_changes_keep_the_lists_exact,
);
