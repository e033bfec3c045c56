//! Throughput under concurrency: 1, 16 and 64 tasks each calling get, put or a 2-key
//! compare-and-set in a loop, ours against the raw client driven the same way (one redis-rs
//! multiplexed connection; one etcd-client channel), on the default multi-thread runtime. At
//! 64 tasks each is also measured on a current-thread runtime and the worse ratio is
//! reported. Then the balancer's round-robin pick against a raw `LMOVE` under 64 tasks, on
//! both runtimes too.

use crate::measure::{
    Budget, Goal, Measure, Report, current_thread, multi_thread, on_both_runtimes,
    paired_throughput,
};
use crate::single::{VALUE, etcd_clients, load, redis_store, spread};
use etcd_client::{
    Compare as EtcdCompare, CompareOp as EtcdCompareOp, Txn as EtcdTxn, TxnOp as EtcdOp,
};
use keyplane_core::keyspace::{Key, TypedStore};
use keyplane_core::{Compare, CompareOp, OpResult, PutOptions, Store, Txn, TxnOp};
use keyplane_schemas::balancer::{ApiKeyRecord, Balancer, BalancerRoot, KeyStatus, LoadedKey};
use keyplane_tests::harness::{EtcdServer, RedisServer, redis_connection};
use std::future::Future;
use std::sync::{Arc, Mutex};

const TASKS: [usize; 3] = [1, 16, 64];

/// The value each task's compare-and-set expects next, per task.
fn expectations() -> Arc<Vec<Mutex<Vec<u8>>>> {
    Arc::new((0..64).map(|_| Mutex::new(b"0".to_vec())).collect())
}

fn cas_keys(side: &str, t: usize) -> (String, String) {
    (
        format!("bench/cas/{side}/{t}/a"),
        format!("bench/cas/{side}/{t}/b"),
    )
}

/// The target of `kind` (get, put, 2-key CAS) at `tasks` tasks, ours against raw.
fn goal(kind: &str, tasks: usize) -> Goal {
    match (kind, tasks) {
        ("get", 64) => Goal::AtLeast(0.7),
        ("put", 64) => Goal::AtLeast(0.6),
        ("2-key CAS", 64) => Goal::AtLeast(0.5),
        _ => Goal::Info,
    }
}

/// The ops of one backend, built on the runtime that drives them.
trait Backend: Send + Sync + 'static {
    fn get(&self, t: usize, i: u64) -> impl Future<Output = ()> + Send;
    fn put(&self, t: usize, i: u64) -> impl Future<Output = ()> + Send;
    fn cas(&self, t: usize, expected: &Mutex<Vec<u8>>, i: u64) -> impl Future<Output = ()> + Send;

    /// Operation `kind` ("get", "put" or "cas") of task `t`.
    fn op(
        &self,
        kind: &'static str,
        t: usize,
        expected: &Mutex<Vec<u8>>,
        i: u64,
    ) -> impl Future<Output = ()> + Send {
        async move {
            match kind {
                "get" => self.get(t, i).await,
                "put" => self.put(t, i).await,
                _ => self.cas(t, expected, i).await,
            }
        }
    }
}

/// The loop body of `tasks` tasks running `kind` on `backend`, each with its own expected
/// value for the compare-and-set.
fn task_op<B: Backend>(
    backend: Arc<B>,
    kind: &'static str,
) -> Arc<impl Fn(usize, u64) -> OpFuture + Send + Sync> {
    let expected = expectations();
    Arc::new(move |t, i| {
        let (backend, expected) = (backend.clone(), expected.clone());
        Box::pin(async move { backend.op(kind, t, &expected[t], i).await }) as OpFuture
    })
}

/// One call of a throughput loop.
type OpFuture = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

/// Measures get, put and CAS throughput of `ours` against `raw` with `tasks` tasks.
async fn measure<O: Backend, R: Backend>(
    budget: Budget,
    backend: &str,
    ours: Arc<O>,
    raw: Arc<R>,
    tasks: usize,
    kinds: &[&'static str],
) -> Vec<Measure> {
    let mut out = Vec::new();
    for &kind in kinds {
        let pair = paired_throughput(
            budget,
            tasks,
            task_op(ours.clone(), kind),
            task_op(raw.clone(), kind),
        )
        .await;
        let kind_name = if kind == "cas" { "2-key CAS" } else { kind };
        out.push(Measure::paired(
            format!("{backend} {kind_name} throughput, {tasks} tasks"),
            pair,
            "ops/s",
            goal(kind_name, tasks),
        ));
    }
    out
}

/// Runs the task counts on a multi-thread runtime, and 64 tasks on a current-thread one too
/// (the worse ratio is reported).
fn run_all<O, R, F, Fut>(budget: Budget, report: &mut Report, backend: &str, make: F)
where
    O: Backend,
    R: Backend,
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = (Arc<O>, Arc<R>)>,
{
    let rt = multi_thread();
    let mut at_64 = Vec::new();
    for tasks in TASKS {
        let figures = rt.block_on(async {
            let (ours, raw) = make().await;
            measure(budget, backend, ours, raw, tasks, &["get", "put", "cas"]).await
        });
        for m in figures {
            if tasks == 64 {
                at_64.push(m);
            } else {
                report.add(m.note("multi-thread runtime"));
            }
        }
    }
    let current = current_thread().block_on(async {
        let (ours, raw) = make().await;
        measure(budget, backend, ours, raw, 64, &["get", "put", "cas"]).await
    });
    for (m, c) in at_64.into_iter().zip(current) {
        let (m, c) = (m.note("multi-thread"), c.note("current-thread"));
        let worse = m.worse(c);
        let runtime = worse.note.clone();
        report.add(worse.note(format!("worse of two runtimes: {runtime}")));
    }
}

struct OursStore<S>(S);

impl<S: Store + Send + Sync + 'static> Backend for OursStore<S> {
    async fn get(&self, t: usize, i: u64) {
        let k = spread(t as u64 * 1_000_003 + i);
        self.0.get(k.as_bytes()).await.unwrap().unwrap();
    }

    async fn put(&self, t: usize, i: u64) {
        let k = format!("bench/tp/ours/{t}/{}", i % 100);
        self.0
            .put(k.as_bytes(), &VALUE, PutOptions::default())
            .await
            .unwrap();
    }

    async fn cas(&self, t: usize, expected: &Mutex<Vec<u8>>, i: u64) {
        let (a, b) = cas_keys("ours", t);
        let want = expected.lock().unwrap().clone();
        let new = format!("{t}-{i}");
        let resp = self
            .0
            .txn(
                Txn::new()
                    .when([Compare::value(&a, CompareOp::Equal, &want)])
                    .and_then([TxnOp::put(&a, &new), TxnOp::put(&b, &new)])
                    .or_else([TxnOp::get(&a)]),
            )
            .await
            .unwrap();
        *expected.lock().unwrap() = if resp.succeeded {
            new.into_bytes()
        } else {
            match &resp.results[0] {
                OpResult::Get(Some(e)) => e.value.clone(),
                _ => Vec::new(),
            }
        };
    }
}

struct RawRedis {
    con: redis::aio::MultiplexedConnection,
    cas: redis::Script,
}

/// The raw compare-and-set: one script that compares the first key's value and sets both.
const RAW_CAS: &str = "local cur = redis.call('GET', KEYS[1]) \
    if cur == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) \
    redis.call('SET', KEYS[2], ARGV[2]) return {1, ARGV[2]} end \
    return {0, cur or ''}";

impl Backend for RawRedis {
    async fn get(&self, t: usize, i: u64) {
        let k = spread(t as u64 * 1_000_003 + i);
        let v: Vec<u8> = redis::cmd("GET")
            .arg(k)
            .query_async(&mut self.con.clone())
            .await
            .unwrap();
        assert!(!v.is_empty());
    }

    async fn put(&self, t: usize, i: u64) {
        let k = format!("bench/tp/raw/{t}/{}", i % 100);
        let _: () = redis::cmd("SET")
            .arg(k)
            .arg(&VALUE[..])
            .query_async(&mut self.con.clone())
            .await
            .unwrap();
    }

    async fn cas(&self, t: usize, expected: &Mutex<Vec<u8>>, i: u64) {
        let (a, b) = cas_keys("raw", t);
        let want = expected.lock().unwrap().clone();
        let new = format!("{t}-{i}");
        let (_, value): (i64, Vec<u8>) = self
            .cas
            .key(a)
            .key(b)
            .arg(want)
            .arg(&new)
            .invoke_async(&mut self.con.clone())
            .await
            .unwrap();
        *expected.lock().unwrap() = value;
    }
}

struct RawEtcd(etcd_client::KvClient);

impl Backend for RawEtcd {
    async fn get(&self, t: usize, i: u64) {
        let k = spread(t as u64 * 1_000_003 + i);
        let resp = self.0.clone().get(k, None).await.unwrap();
        assert!(!resp.kvs().is_empty());
    }

    async fn put(&self, t: usize, i: u64) {
        let k = format!("bench/tp/raw/{t}/{}", i % 100);
        self.0.clone().put(k, VALUE.to_vec(), None).await.unwrap();
    }

    async fn cas(&self, t: usize, expected: &Mutex<Vec<u8>>, i: u64) {
        let (a, b) = cas_keys("raw", t);
        let want = expected.lock().unwrap().clone();
        let new = format!("{t}-{i}");
        let txn = EtcdTxn::new()
            .when([EtcdCompare::value(a.clone(), EtcdCompareOp::Equal, want)])
            .and_then([
                EtcdOp::put(a.clone(), new.clone(), None),
                EtcdOp::put(b, new.clone(), None),
            ])
            .or_else([EtcdOp::get(a, None)]);
        let resp = self.0.clone().txn(txn).await.unwrap();
        *expected.lock().unwrap() = if resp.succeeded() {
            new.into_bytes()
        } else {
            match resp.op_responses().into_iter().next() {
                Some(etcd_client::TxnOpResponse::Get(g)) => g
                    .kvs()
                    .first()
                    .map(|kv| kv.value().to_vec())
                    .unwrap_or_default(),
                _ => Vec::new(),
            }
        };
    }
}

/// Sets every task's compare-and-set keys to the expected start value, "0".
async fn seed_cas(store: &dyn Store) {
    for side in ["ours", "raw"] {
        let ops = (0..64).flat_map(|t| {
            let (a, b) = cas_keys(side, t);
            [TxnOp::put(a, "0"), TxnOp::put(b, "0")]
        });
        store.txn(Txn::new().and_then(ops)).await.unwrap();
    }
}

pub fn redis(budget: Budget, report: &mut Report) {
    let Some(server) = RedisServer::start() else {
        return;
    };
    multi_thread().block_on(async { load(&redis_store(&server).await).await });
    let server = &server;
    run_all(budget, report, "redis", || async move {
        let store = redis_store(server).await;
        seed_cas(&store).await;
        let raw = RawRedis {
            con: redis_connection(&server.url()).await,
            cas: redis::Script::new(RAW_CAS),
        };
        (Arc::new(OursStore(store)), Arc::new(raw))
    });
    balancer(budget, report, server);
    metadata_floor(budget, report, server);
    cas_floor(budget, report, server);
}

pub fn etcd(budget: Budget, report: &mut Report) {
    let Some(server) = EtcdServer::start() else {
        return;
    };
    multi_thread().block_on(async { load(&etcd_clients(&server).await.0).await });
    let server = &server;
    run_all(budget, report, "etcd", || async move {
        let (store, raw) = etcd_clients(server).await;
        seed_cas(&store).await;
        (Arc::new(OursStore(store)), Arc::new(RawEtcd(raw)))
    });
}

/// The balancer's pick (`Balancer::pick`, LMOVE in the store's script path) on group 1,
/// against a raw `LMOVE list list LEFT RIGHT` on group 2's list, 64 tasks each.
fn balancer(budget: Budget, report: &mut Report, server: &RedisServer) {
    on_both_runtimes(report, |runtime| async move {
        vec![pick(budget, server, runtime).await]
    });
}

/// The pick against the raw `LMOVE`, on the runtime named `runtime`.
async fn pick(budget: Budget, server: &RedisServer, runtime: &'static str) -> Measure {
    let store = Arc::new(redis_store(server).await);
    let typed = TypedStore::new(store.clone());
    // A root per runtime: each measure loads its own keys.
    let name = if runtime == "multi-thread" {
        "benchmt"
    } else {
        "benchct"
    };
    let root = BalancerRoot::new(name).unwrap();
    let cache = Balancer::with_root(&typed, root).unwrap();
    let keys: Vec<LoadedKey> = (1..=20)
        .map(|id| LoadedKey {
            id,
            record: ApiKeyRecord {
                api_key: format!("sk-bench-{id:04}"),
                status: KeyStatus::Active,
            },
            groups: vec![if id <= 10 { 1 } else { 2 }],
        })
        .collect();
    cache.load_keys(&keys).await.unwrap();
    let list = format!("{name}:{}", cache.active_key(2).encode());
    let con = redis_connection(&server.url()).await;
    let len: usize = redis::cmd("LLEN")
        .arg(&list)
        .query_async(&mut con.clone())
        .await
        .unwrap();
    assert_eq!(len, 10, "the raw side rotates group 2's list");
    let cache = Arc::new(cache);
    let pair = paired_throughput(
        budget,
        64,
        Arc::new(move |_, _| {
            let cache = cache.clone();
            async move {
                cache.pick(1).await.unwrap().unwrap();
            }
        }),
        Arc::new(move |_, _| {
            let (mut con, list) = (con.clone(), list.clone());
            async move {
                let id: Option<String> = redis::cmd("LMOVE")
                    .arg(&list)
                    .arg(&list)
                    .arg("LEFT")
                    .arg("RIGHT")
                    .query_async(&mut con)
                    .await
                    .unwrap();
                assert!(id.is_some());
            }
        }),
    )
    .await;
    Measure::paired(
        "redis balancer pick vs raw LMOVE, 64 tasks",
        pair,
        "ops/s",
        Goal::AtLeast(0.6),
    )
    .note(runtime)
}

/// What reading a key's metadata beside its value costs by itself: a raw pipeline of `HGET`
/// of the metadata and `GET` of the value per key, against a raw `GET`, 64 tasks, the worse
/// of both runtimes. A get of the store reads both, so this is what stands between its
/// throughput and a raw `GET`'s.
fn metadata_floor(budget: Budget, report: &mut Report, server: &RedisServer) {
    on_both_runtimes(report, |runtime| async move {
        let con = redis_connection(&server.url()).await;
        let pair_con = con.clone();
        let pair = paired_throughput(
            budget,
            64,
            Arc::new(move |t: usize, i: u64| {
                let con = pair_con.clone();
                async move { crate::floor::get(con, &spread(t as u64 * 1_000_003 + i)).await }
            }),
            Arc::new(move |t: usize, i: u64| {
                let mut con = con.clone();
                async move {
                    let k = spread(t as u64 * 1_000_003 + i);
                    let value: Vec<u8> = redis::cmd("GET")
                        .arg(&k)
                        .query_async(&mut con)
                        .await
                        .unwrap();
                    assert!(!value.is_empty());
                }
            }),
        )
        .await;
        vec![
            Measure::paired(
                "redis raw HGET + GET pipeline (a get's two reads) vs raw GET, 64 tasks",
                pair,
                "ops/s",
                Goal::Info,
            )
            .note(runtime),
        ]
    });
}

/// The store's 2-key compare-and-set against the floor's ([`crate::floor::cas`]: `WATCH` and
/// `GET`, then the puts' commands in one `MULTI`/`EXEC`, each task on a connection of its
/// own), 64 tasks, the worse of both runtimes.
fn cas_floor(budget: Budget, report: &mut Report, server: &RedisServer) {
    on_both_runtimes(report, |runtime| async move {
        let store = Arc::new(OursStore(redis_store(server).await));
        seed_cas(&store.0).await;
        let mut cons = Vec::new();
        for t in 0..64 {
            let con = redis_connection(&server.url()).await;
            let (a, b) = cas_keys("floor", t);
            let () = redis::cmd("MSET")
                .arg(&[a.as_str(), "0", b.as_str(), "0"][..])
                .query_async(&mut con.clone())
                .await
                .unwrap();
            cons.push(con);
        }
        let (cons, expected) = (Arc::new(cons), expectations());
        let floor = Arc::new(move |t: usize, i: u64| {
            let (cons, expected) = (cons.clone(), expected.clone());
            async move {
                let (a, b) = cas_keys("floor", t);
                let want = expected[t].lock().unwrap().clone();
                let new = format!("{t}-{i}");
                let after = crate::floor::cas(&cons[t], (&a, &b), &want, new.as_bytes()).await;
                *expected[t].lock().unwrap() = after;
            }
        });
        let pair = paired_throughput(budget, 64, task_op(store, "cas"), floor).await;
        vec![
            Measure::paired(
                "redis 2-key CAS throughput vs the no-Lua floor, 64 tasks",
                pair,
                "ops/s",
                Goal::Info,
            )
            .note(runtime),
        ]
    });
}
