//! The Redis write path at the server's limit: how the group commit's batches form at 1, 16
//! and 64 writers (`INFO commandstats`: the calls the puts went in), and the server's time
//! per put at 64 writers (`INFO cpu`, user and system: running the calls, and reading and
//! answering them, which is most of what a bare `SET` costs) against a raw `SET` driven the
//! same way. Each figure is taken on the multi-thread and the current-thread runtime, and
//! the worse is reported.

use crate::measure::{Budget, Goal, Measure, Report, current_thread, multi_thread};
use crate::single::{VALUE, redis_store, server_cpu_us};
use futures::future::join_all;
use keyplane_core::{PutOptions, Store};
use keyplane_tests::harness::{RedisServer, redis_command_calls, redis_connection};
use redis::aio::MultiplexedConnection;

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

/// The figures of one runtime: puts per call at each task count, and the server's µs per
/// put and per `SET` at 64 tasks.
async fn figures(server: &RedisServer, budget: Budget) -> (Vec<(usize, f64)>, f64, f64) {
    let store = redis_store(server).await;
    let con = redis_connection(&server.url()).await;
    let per_task = if budget.quick { 200 } else { 1_000 };
    let mut per_call = Vec::new();
    let mut ours_us = 0.0;
    for tasks in [1, 16, 64] {
        let (calls, us) = writers(&con, "fcall", tasks, per_task, async |t, i| {
            let key = format!("bench/gc/ours/{t}/{}", i % 100);
            store
                .put(key.as_bytes(), &VALUE, PutOptions::default())
                .await
                .unwrap();
        })
        .await;
        let puts = (tasks * per_task) as f64;
        per_call.push((tasks, puts / calls.max(1) as f64));
        ours_us = us / puts;
    }
    let (_, raw) = writers(&con, "set", 64, per_task, async |t, i| {
        let _: () = redis::cmd("SET")
            .arg(format!("bench/gc/raw/{t}/{}", i % 100))
            .arg(&VALUE[..])
            .query_async(&mut con.clone())
            .await
            .unwrap();
    })
    .await;
    (per_call, ours_us, raw / (64 * per_task) as f64)
}

pub fn run(budget: Budget, report: &mut Report) {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let multi = multi_thread().block_on(figures(&server, budget));
    let current = current_thread().block_on(figures(&server, budget));
    for (i, tasks) in [1, 16, 64].into_iter().enumerate() {
        let (m, c) = (multi.0[i].1, current.0[i].1);
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
    let (m, c) = (multi.1 / multi.2, current.1 / current.2);
    let (ours, raw, runtime) = if c > m {
        (current.1, current.2, "current-thread")
    } else {
        (multi.1, multi.2, "multi-thread")
    };
    report.add(
        Measure::new(
            "redis server time per put vs SET, 64 tasks",
            ours,
            raw,
            "µs",
            Goal::AtMost(2.0),
        )
        .note(format!(
            "INFO cpu (user + system) per write; worse of two runtimes: {runtime}"
        )),
    );
}
