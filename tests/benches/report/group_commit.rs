//! The Redis write path at the server's limit: how the group commit's batches form at 1, 16
//! and 64 writers (`INFO commandstats`: the calls the puts went in), and the server's time
//! per put at 64 writers (`INFO cpu`, user and system: running the calls, and reading and
//! answering them, which is most of what a bare `SET` costs) against a raw `SET` and against
//! the floor of the data model ([`floor`]: a put's commands raw in one `MULTI`/`EXEC`),
//! driven the same way in alternating rounds. Each figure is taken on the multi-thread and
//! the current-thread runtime, and the worse is reported.

use crate::floor;
use crate::measure::{
    Budget, Goal, MIN_ROUNDS, Measure, Pair, Report, current_thread, multi_thread,
};
use crate::single::{VALUE, raw_set, redis_store, server_cpu_us};
use futures::future::join_all;
use keyplane_core::{PutOptions, Store};
use keyplane_tests::harness::{RedisServer, redis_command_calls, redis_connection};
use redis::aio::MultiplexedConnection;
use std::time::Instant;

/// What `tasks` writers doing `per_task` writes each cost the server: the calls of `cmd`, and
/// the server's CPU µs.
async fn writers<F, Fut>(
    con: &MultiplexedConnection,
    cmd: &str,
    tasks: usize,
    per_task: usize,
    write: F,
) -> (u64, f64)
where
    F: Fn(usize, usize) -> Fut,
    Fut: Future<Output = ()>,
{
    let before = redis_command_calls(&mut con.clone(), cmd).await;
    let cpu = server_cpu_us(&mut con.clone()).await;
    join_all((0..tasks).map(|t| {
        let write = &write;
        async move {
            for i in 0..per_task {
                write(t, i).await;
            }
        }
    }))
    .await;
    let cpu = server_cpu_us(&mut con.clone()).await - cpu;
    (
        redis_command_calls(&mut con.clone(), cmd).await - before,
        cpu,
    )
}

/// The figures of one runtime.
struct Figures {
    /// Puts per call at 1, 16 and 64 tasks.
    per_call: Vec<(usize, f64)>,
    /// The server's µs per put, ours against `SET`, per round.
    vs_set: Pair,
    /// The server's µs per put, ours against the floor, per round.
    vs_floor: Pair,
    /// Puts per second at 64 tasks, ours against the floor, per round.
    rate_vs_floor: Pair,
}

/// The three writers of a round: the store's put, the floor's, a raw `SET`.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Ours,
    Floor,
    Set,
}

/// The figures of one runtime: puts per call at 1 and 16 tasks, then rounds of 64 tasks
/// writing through the store, at the floor and with `SET` (the order turning each round),
/// each side's server µs per put and puts per second taken per round.
async fn figures(server: &RedisServer, budget: Budget) -> Figures {
    let store = redis_store(server).await;
    let con = redis_connection(&server.url()).await;
    let per_task = if budget.quick { 100 } else { 400 };
    let ours_put = async |t: usize, i: usize| {
        let key = format!("bench/gc/ours/{t}/{}", i % 100);
        store
            .put(key.as_bytes(), &VALUE, PutOptions::default())
            .await
            .unwrap();
    };
    let mut per_call = Vec::new();
    for tasks in [1, 16] {
        let (calls, _) = writers(&con, "fcall", tasks, per_task, ours_put).await;
        per_call.push((tasks, (tasks * per_task) as f64 / calls.max(1) as f64));
    }
    let puts = (64 * per_task) as f64;
    let (mut cpu, mut rate) = ([vec![], vec![], vec![]], [vec![], vec![], vec![]]);
    let mut calls_64 = 0;
    for round in 0..MIN_ROUNDS {
        let mut order = [Side::Ours, Side::Floor, Side::Set];
        order.rotate_left(round % 3);
        for side in order {
            let started = Instant::now();
            let (calls, us) = match side {
                Side::Ours => writers(&con, "fcall", 64, per_task, ours_put).await,
                Side::Floor => {
                    writers(&con, "exec", 64, per_task, async |t, i| {
                        let key = format!("bench/gc/floor/{t}/{}", i % 100);
                        floor::put(&con, &key, &VALUE, round == 0 && i < 100).await;
                    })
                    .await
                }
                Side::Set => {
                    writers(&con, "set", 64, per_task, async |t, i| {
                        raw_set(&con, format!("bench/gc/raw/{t}/{}", i % 100)).await;
                    })
                    .await
                }
            };
            let elapsed = started.elapsed().as_secs_f64();
            if side == Side::Ours {
                calls_64 += calls;
            }
            cpu[side as usize].push(us / puts);
            rate[side as usize].push(puts / elapsed);
        }
    }
    per_call.push((64, puts * MIN_ROUNDS as f64 / calls_64.max(1) as f64));
    let [ours_cpu, floor_cpu, set_cpu] = cpu;
    let [ours_rate, floor_rate, _] = rate;
    Figures {
        per_call,
        vs_set: Pair::of(ours_cpu.clone(), set_cpu),
        vs_floor: Pair::of(ours_cpu, floor_cpu),
        rate_vs_floor: Pair::of(ours_rate, floor_rate),
    }
}

pub fn run(budget: Budget, report: &mut Report) {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let multi = multi_thread().block_on(figures(&server, budget));
    let current = current_thread().block_on(figures(&server, budget));
    for (i, tasks) in [1, 16, 64].into_iter().enumerate() {
        let (m, c) = (multi.per_call[i].1, current.per_call[i].1);
        let (worse, runtime) = if c < m {
            (c, "current-thread")
        } else {
            (m, "multi-thread")
        };
        report.add(
            Measure::new(
                format!("redis puts per call (group commit), {tasks} tasks vs one SET per call"),
                worse,
                1.0,
                "puts",
                Goal::Info,
            )
            .note(format!("fewer of two runtimes: {runtime}")),
        );
    }
    let rows = [
        (
            "redis server time per put vs SET, 64 tasks",
            [multi.vs_set, current.vs_set],
            "µs",
            Goal::AtMost(5.0),
            "INFO cpu (user + system) per write",
        ),
        (
            "redis server time per put vs the no-Lua floor, 64 tasks",
            [multi.vs_floor, current.vs_floor],
            "µs",
            Goal::AtMost(1.5),
            "INFO cpu per write; floor: a put's commands raw in one MULTI/EXEC",
        ),
        (
            "redis put throughput vs the no-Lua floor, 64 tasks",
            [multi.rate_vs_floor, current.rate_vs_floor],
            "puts/s",
            Goal::Info,
            "floor: a put's commands raw in one MULTI/EXEC",
        ),
    ];
    for (name, [on_multi, on_current], unit, goal, what) in rows {
        let worse = Measure::paired(name, on_multi, unit, goal)
            .note("multi-thread")
            .worse(Measure::paired(name, on_current, unit, goal).note("current-thread"));
        let runtime = worse.note.clone();
        report.add(worse.note(format!("{what}; worse of two runtimes: {runtime}")));
    }
}
