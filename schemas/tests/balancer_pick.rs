//! The pick over active lists that another program wrote with keys that are not active in
//! them (the Go service's `RPUSH`, an operator's `HSET ... status disabled`, a list entry
//! whose object is gone): the pick reads each key's status in the same atomic step as the
//! rotation, so it never hands out a key that is not active; it skips it (leaving it where
//! it is for `repair`, and `kvctl lint` to report).

use keyplane_core::keyspace::TypedStore;
use keyplane_schemas::balancer::*;
use std::collections::BTreeMap;

type Con = redis::aio::MultiplexedConnection;

/// A cache under a root of its own on the shared harness Redis, and a raw connection.
struct Fixture {
    cache: Balancer,
    con: Con,
    root: String,
}

async fn fixture() -> Option<Fixture> {
    let (store, con) = keyplane_tests::backends::redis_with_connection().await?;
    let root = BalancerRoot::new(format!("pick{}", uuid::Uuid::new_v4().simple())).unwrap();
    Some(Fixture {
        cache: Balancer::with_root(&TypedStore::new(store), root.clone()).unwrap(),
        con,
        root: root.to_string(),
    })
}

impl Fixture {
    /// One raw command, as the Go service or redis-cli would send it.
    async fn raw<T: redis::FromRedisValue>(&self, args: &[String]) -> T {
        let mut cmd = redis::cmd(&args[0]);
        for arg in &args[1..] {
            cmd.arg(arg);
        }
        cmd.query_async(&mut self.con.clone())
            .await
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    /// `HSET key:{id} api_key sk-{id} status {status}`, `SADD key:{id}:groups {group}`.
    async fn write_key(&self, id: u64, status: &str, group: u64) {
        let root = &self.root;
        let _: i64 = self
            .raw(&[
                "HSET".into(),
                format!("{root}:key:{id}"),
                "api_key".into(),
                format!("sk-{id}"),
                "status".into(),
                status.into(),
            ])
            .await;
        let _: i64 = self
            .raw(&[
                "SADD".into(),
                format!("{root}:key:{id}:groups"),
                group.to_string(),
            ])
            .await;
    }

    /// `RPUSH group:{group}:keys:active {ids...}`
    async fn rpush(&self, group: u64, ids: &[u64]) {
        let mut args = vec!["RPUSH".to_string(), self.active(group)];
        args.extend(ids.iter().map(u64::to_string));
        let _: i64 = self.raw(&args).await;
    }

    fn active(&self, group: u64) -> String {
        format!("{}:group:{group}:keys:active", self.root)
    }

    async fn listed(&self, group: u64) -> Vec<u64> {
        let items: Vec<String> = self
            .raw(&["LRANGE".into(), self.active(group), "0".into(), "-1".into()])
            .await;
        let mut ids: Vec<u64> = items.iter().map(|i| i.parse().unwrap()).collect();
        ids.sort_unstable();
        ids
    }

    async fn picks(&self, group: u64, n: usize) -> Vec<u64> {
        let mut picks = Vec::with_capacity(n);
        for _ in 0..n {
            picks.push(self.cache.pick(group).await.unwrap().expect("a key"));
        }
        picks
    }
}

/// Keys listed by another program that are disabled, of a status of its own, or without an
/// object are never picked: the active ones are handed out in turn, the others stay listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_listed_by_another_program_that_are_not_active_are_never_picked() {
    let Some(f) = fixture().await else { return };
    f.write_key(1, "active", 10).await;
    f.write_key(2, "disabled", 10).await;
    f.write_key(3, "active", 10).await;
    f.write_key(4, "suspended", 10).await;
    // 5 is listed, with no object.
    f.rpush(10, &[1, 2, 3, 4, 5]).await;
    assert_eq!(f.picks(10, 6).await, [1, 3, 1, 3, 1, 3]);
    assert_eq!(
        f.listed(10).await,
        [1, 2, 3, 4, 5],
        "a pick repairs nothing"
    );

    // Disabled in place by another program while listed: skipped from the next pick on.
    let _: i64 = f
        .raw(&[
            "HSET".into(),
            format!("{}:key:3", f.root),
            "status".into(),
            "disabled".into(),
        ])
        .await;
    assert_eq!(f.picks(10, 3).await, [1, 1, 1]);

    // A list of keys none of which is active has none to pick.
    f.write_key(6, "disabled", 20).await;
    f.rpush(20, &[6, 7, 6]).await;
    assert_eq!(f.cache.pick(20).await.unwrap(), None);
    assert_eq!(f.listed(20).await, [6, 6, 7]);
}

/// Picks at once over a list with a disabled key another program put in: none hands it
/// out, and the active keys are handed out in turn (each as often as the other, within one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_picks_skip_a_listed_key_that_is_not_active() {
    let Some(f) = fixture().await else { return };
    f.write_key(1, "active", 10).await;
    f.write_key(2, "disabled", 10).await;
    f.write_key(3, "active", 10).await;
    f.rpush(10, &[1, 2, 3]).await;
    let picks = (0..60).map(|_| {
        let cache = f.cache.clone();
        tokio::spawn(async move { cache.pick(10).await.unwrap().expect("a key") })
    });
    let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
    for pick in futures::future::join_all(picks).await {
        *counts.entry(pick.unwrap()).or_default() += 1;
    }
    assert!(
        !counts.contains_key(&2),
        "the disabled key was handed out: {counts:?}"
    );
    let (one, three) = (counts[&1], counts[&3]);
    assert!(one.abs_diff(three) <= 1, "{counts:?}");
}
