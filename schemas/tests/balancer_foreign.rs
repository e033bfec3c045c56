//! The balancer over a cache the Go service wrote with plain Redis commands (`HSET`,
//! `SADD`, `LPUSH`/`RPUSH`, `LMOVE`) in the document's layout (§3): the library's
//! operations read it and keep its invariant (a key is in a group's active list exactly
//! when it is active and linked), and plain commands then see the result. An operation
//! that cannot do its whole job returns an error and leaves the raw data as it was.
//!
//! The document's keys have no root (`key:{id}`), and that is the cache's default; the
//! cases share one Redis, so each writes the document's layout under a root of its own
//! ([`Balancer::with_root`], `{root}:key:{id}`), except the one that checks the exact bytes.

use keyplane_core::ErrorKind;
use keyplane_core::keyspace::TypedStore;
use keyplane_schemas::balancer::*;
use std::collections::{BTreeMap, BTreeSet};

type Con = redis::aio::MultiplexedConnection;

/// A cache under a root of its own on the shared harness Redis, with a raw connection.
struct Fixture {
    cache: Balancer,
    con: Con,
    root: String,
}

async fn fixture() -> Option<Fixture> {
    let (store, con) = keyplane_tests::backends::redis_with_connection().await?;
    let root = BalancerRoot::new(format!("bal{}", uuid::Uuid::new_v4().simple())).unwrap();
    Some(Fixture {
        cache: Balancer::with_root(&TypedStore::new(store), root.clone()).unwrap(),
        con,
        root: root.to_string(),
    })
}

impl Fixture {
    /// `{root}:key:{id}`
    fn object(&self, id: u64) -> String {
        format!("{}:key:{id}", self.root)
    }

    /// `{root}:key:{id}:groups`
    fn reverse(&self, id: u64) -> String {
        format!("{}:key:{id}:groups", self.root)
    }

    /// `{root}:group:{id}:keys:active`
    fn active(&self, group: u64) -> String {
        format!("{}:group:{group}:keys:active", self.root)
    }

    /// One raw command, as the Go service or redis-cli would send it.
    async fn raw<T: redis::FromRedisValue>(&mut self, args: &[&str]) -> T {
        let mut cmd = redis::cmd(args[0]);
        for arg in &args[1..] {
            cmd.arg(*arg);
        }
        cmd.query_async(&mut self.con)
            .await
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    async fn lrange(&mut self, group: u64) -> Vec<String> {
        let key = self.active(group);
        self.raw(&["LRANGE", &key, "0", "-1"]).await
    }

    async fn groups(&mut self, id: u64) -> BTreeSet<String> {
        let key = self.reverse(id);
        self.raw(&["SMEMBERS", &key]).await
    }

    async fn fields(&mut self, id: u64) -> BTreeMap<String, String> {
        let key = self.object(id);
        self.raw(&["HGETALL", &key]).await
    }

    async fn exists(&mut self, key: &str) -> bool {
        self.raw::<i64>(&["EXISTS", key]).await == 1
    }

    /// The Go service caching key `id`: `HSET key:{id} api_key sk-{id} status {status}` and
    /// `SADD key:{id}:groups {groups...}` (no list writes: each case lays its lists out).
    async fn write_key(&mut self, id: u64, status: &str, groups: &[u64]) {
        let object = self.object(id);
        let api_key = format!("sk-{id}");
        let _: i64 = self
            .raw(&["HSET", &object, "api_key", &api_key, "status", status])
            .await;
        if !groups.is_empty() {
            let reverse = self.reverse(id);
            let mut args = vec!["SADD".to_string(), reverse];
            args.extend(groups.iter().map(|g| g.to_string()));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let _: i64 = self.raw(&args).await;
        }
    }

    /// `RPUSH group:{id}:keys:active {ids...}`
    async fn rpush(&mut self, group: u64, ids: &[u64]) {
        self.push("RPUSH", group, ids).await
    }

    /// `LPUSH group:{id}:keys:active {ids...}`, as the Go service's cache refresh does.
    async fn lpush(&mut self, group: u64, ids: &[u64]) {
        self.push("LPUSH", group, ids).await
    }

    async fn push(&mut self, cmd: &str, group: u64, ids: &[u64]) {
        let mut args = vec![cmd.to_string(), self.active(group)];
        args.extend(ids.iter().map(|i| i.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let _: i64 = self.raw(&args).await;
    }

    async fn picks(&self, group: u64, n: usize) -> Vec<u64> {
        let mut picks = Vec::with_capacity(n);
        for _ in 0..n {
            picks.push(self.cache.pick(group).await.unwrap().expect("a key"));
        }
        picks
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn hash(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(f, v)| (f.to_string(), v.to_string()))
        .collect()
}

/// Round robin over a list the Go service wrote: picks rotate through the raw members
/// (`LMOVE list list LEFT RIGHT`), in step with the service's own `LMOVE`s and pushes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn picks_rotate_through_a_raw_active_list() {
    let Some(mut f) = fixture().await else { return };
    for id in [1, 2, 3] {
        f.write_key(id, "active", &[10, 20]).await;
    }
    f.rpush(10, &[1, 2, 3]).await;
    // LPUSH 1 2 3 leaves 3 at the head.
    f.lpush(20, &[1, 2, 3]).await;

    assert_eq!(f.cache.active_keys(10).await.unwrap(), [1, 2, 3]);
    assert_eq!(f.picks(10, 7).await, [1, 2, 3, 1, 2, 3, 1]);
    assert_eq!(f.lrange(10).await, strings(&["2", "3", "1"]));
    assert_eq!(f.picks(20, 4).await, [3, 2, 1, 3]);
    assert_eq!(f.lrange(20).await, strings(&["2", "1", "3"]));

    // The service rotates too: the next pick is the head it left.
    let list = f.active(10);
    let moved: String = f.raw(&["LMOVE", &list, &list, "LEFT", "RIGHT"]).await;
    assert_eq!(moved, "2");
    assert_eq!(f.picks(10, 3).await, [3, 1, 2]);
    // A key the service appends joins the rotation.
    f.write_key(4, "active", &[10]).await;
    f.rpush(10, &[4]).await;
    assert_eq!(f.picks(10, 5).await, [3, 1, 2, 4, 3]);
    assert_eq!(f.lrange(10).await, strings(&["1", "2", "4", "3"]));

    // A group the service never listed has no key.
    assert_eq!(f.cache.pick(99).await.unwrap(), None);
    // A raw STRING where the list belongs is an error, not an empty group.
    let bad = f.active(30);
    let _: () = f.raw(&["SET", &bad, "1,2,3"]).await;
    let err = f.cache.pick(30).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WrongType, "{err}");
    assert_eq!(f.raw::<String>(&["GET", &bad]).await, "1,2,3");
}

/// The Go service's `LMOVE`s and the library's picks, concurrently on one raw list, share
/// the keys exactly: 200 rotations of 10 keys, each key handed out 20 times in all, and
/// the list back in its order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_lmoves_and_picks_share_the_keys() {
    let Some(mut f) = fixture().await else { return };
    let ids: Vec<u64> = (1..=10).collect();
    for id in &ids {
        f.write_key(*id, "active", &[1]).await;
    }
    f.rpush(1, &ids).await;
    let list = f.active(1);
    let tasks: Vec<tokio::task::JoinHandle<u64>> = (0..200)
        .map(|i| {
            if i % 2 == 0 {
                let cache = f.cache.clone();
                tokio::spawn(async move { cache.pick(1).await.unwrap().expect("a key") })
            } else {
                let (mut con, list) = (f.con.clone(), list.clone());
                tokio::spawn(async move {
                    let moved: String = redis::cmd("LMOVE")
                        .arg(&list)
                        .arg(&list)
                        .arg("LEFT")
                        .arg("RIGHT")
                        .query_async(&mut con)
                        .await
                        .unwrap();
                    moved.parse().unwrap()
                })
            }
        })
        .collect();
    let mut counts: BTreeMap<u64, u32> = BTreeMap::new();
    for task in tasks {
        *counts.entry(task.await.unwrap()).or_default() += 1;
    }
    assert_eq!(counts, ids.iter().map(|id| (*id, 20)).collect());
    let expected: Vec<String> = ids.iter().map(u64::to_string).collect();
    assert_eq!(f.lrange(1).await, expected);
}

/// The library's reads of a cache written raw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_of_a_raw_cache() {
    let Some(mut f) = fixture().await else { return };
    f.write_key(7, "active", &[1, 2]).await;
    f.write_key(8, "disabled", &[2]).await;
    f.rpush(1, &[7]).await;
    f.rpush(2, &[7]).await;

    assert_eq!(
        f.cache.key(7).await.unwrap(),
        Some(ApiKeyRecord {
            api_key: "sk-7".into(),
            status: KeyStatus::Active,
        })
    );
    assert_eq!(
        f.cache.key(8).await.unwrap().unwrap().status,
        KeyStatus::Disabled
    );
    assert_eq!(f.cache.key(9).await.unwrap(), None);
    assert_eq!(f.cache.groups_of(7).await.unwrap(), [1, 2]);
    assert_eq!(f.cache.active_keys(2).await.unwrap(), [7]);
    // A status the document does not name is read as it is, never an error or a guess.
    let object = f.object(9);
    let _: i64 = f
        .raw(&["HSET", &object, "api_key", "sk-9", "status", "banned"])
        .await;
    assert_eq!(
        f.cache.key(9).await.unwrap().unwrap().status,
        KeyStatus::Other("banned".to_owned())
    );
}

/// A key the service cached with a status of its own (`suspended`, beyond the document's
/// examples): it reads without error, is never picked nor listed by a link, keeps its bytes
/// through every operation that does not change it, and leaves and rejoins rotation like a
/// disabled key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_unknown_status_is_kept_and_never_picked() {
    let Some(mut f) = fixture().await else { return };
    f.write_key(1, "active", &[10]).await;
    f.rpush(10, &[1]).await;
    f.write_key(5, "suspended", &[10]).await;
    let written = f.fields(5).await;

    let suspended = KeyStatus::Other("suspended".to_owned());
    assert_eq!(
        f.cache.key(5).await.unwrap(),
        Some(ApiKeyRecord {
            api_key: "sk-5".into(),
            status: suspended.clone(),
        })
    );
    assert_eq!(f.picks(10, 4).await, [1, 1, 1, 1]);
    // Linked to another group: joins the reverse index, not the list.
    assert!(f.cache.link(5, 20).await.unwrap());
    assert_eq!(f.lrange(20).await, Vec::<String>::new());
    assert_eq!(f.cache.pick(20).await.unwrap(), None);
    // Written back unchanged by the library: the same bytes.
    f.cache
        .put_key(5, &f.cache.key(5).await.unwrap().unwrap())
        .await
        .unwrap();
    f.cache.set_status(5, suspended.clone()).await.unwrap();
    assert_eq!(f.fields(5).await, written);
    assert!(f.cache.repair().await.unwrap().clean());
    assert_eq!(f.fields(5).await, written);
    // Into rotation and out again, back to the service's own word.
    f.cache.set_status(5, KeyStatus::Active).await.unwrap();
    assert_eq!(f.lrange(10).await, strings(&["5", "1"]));
    assert_eq!(f.lrange(20).await, strings(&["5"]));
    f.cache.set_status(5, suspended).await.unwrap();
    assert_eq!(f.lrange(10).await, strings(&["1"]));
    assert_eq!(f.lrange(20).await, Vec::<String>::new());
    assert_eq!(f.fields(5).await, written);
    assert_eq!(f.picks(10, 3).await, [1, 1, 1]);
}

/// Linking a key the service cached: the group joins the raw reverse index and the key
/// joins the end of the raw list; a raw link is not made twice; a disabled key is linked
/// but not listed; a key that is not cached cannot be linked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn link_raw_keys() {
    let Some(mut f) = fixture().await else { return };
    f.write_key(1, "active", &[10]).await;
    f.rpush(10, &[1]).await;
    f.write_key(7, "active", &[20]).await;
    f.write_key(8, "active", &[20]).await;
    f.rpush(20, &[7, 8]).await;

    assert!(f.cache.link(1, 20).await.unwrap());
    assert_eq!(f.groups(1).await, set(&["10", "20"]));
    assert_eq!(f.lrange(20).await, strings(&["7", "8", "1"]));
    assert_eq!(f.lrange(10).await, strings(&["1"]));
    // The raw reverse index already links 1 to 10: nothing changes.
    assert!(!f.cache.link(1, 10).await.unwrap());
    assert_eq!(f.lrange(10).await, strings(&["1"]));
    assert_eq!(f.groups(1).await, set(&["10", "20"]));

    f.write_key(2, "disabled", &[]).await;
    assert!(f.cache.link(2, 20).await.unwrap());
    assert_eq!(f.groups(2).await, set(&["20"]));
    assert_eq!(f.lrange(20).await, strings(&["7", "8", "1"]));

    let err = f.cache.link(3, 20).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    let reverse = f.reverse(3);
    assert!(!f.exists(&reverse).await);
    assert_eq!(f.lrange(20).await, strings(&["7", "8", "1"]));
}

/// Unlinking a raw link: the group leaves the raw reverse index, the key leaves the raw
/// list (wherever it sits), other groups are untouched; empty collections disappear.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlink_raw_links() {
    let Some(mut f) = fixture().await else { return };
    f.write_key(1, "active", &[10, 20]).await;
    f.write_key(5, "active", &[10]).await;
    f.write_key(6, "active", &[10]).await;
    f.rpush(10, &[5, 1, 6]).await;
    f.rpush(20, &[1]).await;

    assert!(f.cache.unlink(1, 10).await.unwrap());
    assert_eq!(f.groups(1).await, set(&["20"]));
    assert_eq!(f.lrange(10).await, strings(&["5", "6"]));
    assert_eq!(f.lrange(20).await, strings(&["1"]));
    assert!(!f.cache.unlink(1, 10).await.unwrap());
    assert_eq!(f.lrange(10).await, strings(&["5", "6"]));

    assert!(f.cache.unlink(1, 20).await.unwrap());
    let (reverse, list) = (f.reverse(1), f.active(20));
    assert!(!f.exists(&reverse).await);
    assert!(!f.exists(&list).await);
    assert_eq!(
        f.fields(1).await,
        hash(&[("api_key", "sk-1"), ("status", "active")]),
        "the key object stays"
    );
}

/// Changing the status of a key the service cached fans out through its raw reverse index
/// to every raw list; the object's other fields (the service stores more) are kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_status_fans_out_over_raw_indexes() {
    let Some(mut f) = fixture().await else { return };
    f.write_key(1, "active", &[10, 20, 30]).await;
    let object = f.object(1);
    let _: i64 = f.raw(&["HSET", &object, "error_count", "3"]).await;
    f.write_key(2, "active", &[10, 20]).await;
    f.rpush(10, &[1, 2]).await;
    f.rpush(20, &[2, 1]).await;
    f.rpush(30, &[1]).await;

    f.cache.set_status(1, KeyStatus::Disabled).await.unwrap();
    assert_eq!(
        f.fields(1).await,
        hash(&[
            ("api_key", "sk-1"),
            ("error_count", "3"),
            ("status", "disabled")
        ])
    );
    assert_eq!(f.lrange(10).await, strings(&["2"]));
    assert_eq!(f.lrange(20).await, strings(&["2"]));
    let list = f.active(30);
    assert!(!f.exists(&list).await);
    assert_eq!(f.groups(1).await, set(&["10", "20", "30"]), "links kept");

    f.cache.set_status(1, KeyStatus::Active).await.unwrap();
    // At the head, where the Go service's LPush puts a re-activated key.
    assert_eq!(f.lrange(10).await, strings(&["1", "2"]));
    assert_eq!(f.lrange(20).await, strings(&["1", "2"]));
    assert_eq!(f.lrange(30).await, strings(&["1"]));
    assert_eq!(f.fields(1).await["status"], "active");

    // put_key over the raw object: the value changes, the status transition fans out.
    f.cache
        .put_key(
            2,
            &ApiKeyRecord {
                api_key: "sk-2b".into(),
                status: KeyStatus::Disabled,
            },
        )
        .await
        .unwrap();
    assert_eq!(
        f.fields(2).await,
        hash(&[("api_key", "sk-2b"), ("status", "disabled")])
    );
    assert_eq!(f.lrange(10).await, strings(&["1"]));
    assert_eq!(f.lrange(20).await, strings(&["1"]));

    // A key the service never cached: NotFound, nothing written.
    let err = f.cache.set_status(3, KeyStatus::Active).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    let object = f.object(3);
    assert!(!f.exists(&object).await);
}

/// A status change that cannot reach every list writes nothing: one of the key's raw
/// "lists" is a STRING, so the change is `WrongType`, the status stays and no other list
/// loses the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_status_over_a_raw_string_list_writes_nothing() {
    let Some(mut f) = fixture().await else { return };
    f.write_key(1, "active", &[10, 20]).await;
    f.rpush(10, &[1]).await;
    let bad = f.active(20);
    let _: () = f.raw(&["SET", &bad, "1"]).await;

    let err = f
        .cache
        .set_status(1, KeyStatus::Disabled)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WrongType, "{err}");
    assert_eq!(f.fields(1).await["status"], "active");
    assert_eq!(f.lrange(10).await, strings(&["1"]));
    assert_eq!(f.raw::<String>(&["GET", &bad]).await, "1");

    // Linking to that group is refused the same way, and the reverse index stays.
    f.write_key(2, "active", &[]).await;
    let err = f.cache.link(2, 20).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WrongType, "{err}");
    let reverse = f.reverse(2);
    assert!(!f.exists(&reverse).await);
}

/// A raw STRING where a reverse index belongs: no operation on the key pretends it has
/// no groups.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_string_reverse_index_is_wrong_type() {
    let Some(mut f) = fixture().await else { return };
    f.write_key(1, "active", &[]).await;
    f.rpush(10, &[1]).await;
    let reverse = f.reverse(1);
    let _: () = f.raw(&["SET", &reverse, "10"]).await;

    for (what, err) in [
        (
            "set_status",
            f.cache.set_status(1, KeyStatus::Disabled).await,
        ),
        ("link", f.cache.link(1, 20).await.map(|_| ())),
        ("unlink", f.cache.unlink(1, 10).await.map(|_| ())),
    ] {
        let err = err.expect_err(what);
        assert_eq!(err.kind(), ErrorKind::WrongType, "{what}: {err}");
    }
    assert_eq!(f.fields(1).await["status"], "active");
    assert_eq!(f.lrange(10).await, strings(&["1"]));
    let list = f.active(20);
    assert!(!f.exists(&list).await);
    assert_eq!(f.raw::<String>(&["GET", &reverse]).await, "10");
}

/// Bulk load into groups the service already filled: the new keys join the end of each
/// raw list in input order, beside the raw members; disabled keys are linked, not listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_load_onto_raw_groups() {
    let Some(mut f) = fixture().await else { return };
    f.write_key(100, "active", &[10]).await;
    f.write_key(101, "active", &[10]).await;
    f.lpush(10, &[101, 100]).await;

    let loaded = |id: u64, status: KeyStatus, groups: Vec<u64>| LoadedKey {
        id,
        record: ApiKeyRecord {
            api_key: format!("sk-{id}"),
            status,
        },
        groups,
    };
    let keys = vec![
        loaded(1, KeyStatus::Active, vec![10]),
        loaded(2, KeyStatus::Active, vec![10, 20]),
        loaded(3, KeyStatus::Disabled, vec![10]),
    ];
    let report = f.cache.load_keys(&keys).await.unwrap();
    assert_eq!(report.keys, 3);
    assert_eq!(f.lrange(10).await, strings(&["100", "101", "1", "2"]));
    assert_eq!(f.lrange(20).await, strings(&["2"]));
    assert_eq!(
        f.fields(1).await,
        hash(&[("api_key", "sk-1"), ("status", "active")])
    );
    assert_eq!(f.fields(3).await["status"], "disabled");
    assert_eq!(f.groups(2).await, set(&["10", "20"]));
    assert_eq!(f.groups(3).await, set(&["10"]));
    assert_eq!(f.groups(100).await, set(&["10"]));
    assert_eq!(f.picks(10, 4).await, [100, 101, 1, 2]);
}

/// A bulk load whose one transaction meets a raw STRING where a list belongs writes
/// nothing and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_load_over_a_raw_string_list_writes_nothing() {
    let Some(mut f) = fixture().await else { return };
    let bad = f.active(20);
    let _: () = f.raw(&["SET", &bad, "legacy"]).await;
    f.rpush(10, &[100]).await;

    let keys: Vec<LoadedKey> = [(1, vec![10]), (2, vec![10, 20])]
        .into_iter()
        .map(|(id, groups)| LoadedKey {
            id,
            record: ApiKeyRecord {
                api_key: format!("sk-{id}"),
                status: KeyStatus::Active,
            },
            groups,
        })
        .collect();
    let err = f.cache.load_keys(&keys).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WrongType, "{err}");
    for id in [1, 2] {
        let (object, reverse) = (f.object(id), f.reverse(id));
        assert!(!f.exists(&object).await, "key {id}");
        assert!(!f.exists(&reverse).await, "key {id}");
    }
    assert_eq!(f.lrange(10).await, strings(&["100"]));
    assert_eq!(f.raw::<String>(&["GET", &bad]).await, "legacy");
}
