//! The embedded stores (RedbStore, SledStore) under `kill -9`: the clients and the watches
//! run in a child process (the chaos binary started with `--embedded-child ENGINE`) that
//! prints every record as a line; the parent kills it with SIGKILL at a random moment and
//! starts another over the same database, again and again. Operations in flight at a kill are unknown. At the end the parent opens the
//! database itself, waits for the leased keys to expire, and resumes the main watch to the
//! sentinel write.
//!
//! This run found that a SledStore read could return a write committed but not yet flushed,
//! which a `kill -9` then lost (a value read, then gone without a delete: a "lost write" and a
//! linearizability anomaly on that key); SledStore's reads now flush first when a write is
//! between its commit and its flush (`tests/tests/embedded_read_durability.rs`).
//!
//! The child's times are on its own clock: the parent reads them as starting when it
//! spawned the child (for invocations, so they can only be earlier than the truth) or when
//! the child's first line arrived (for completions and receipts, so they can only be later).

use super::check::analyse;
use super::history::{Record, Recorder};
use super::run::{Report, Settings, retry, save, settle, workload};
use super::workload::{Watchers, bookmark_watch, client, main_watch};
use crate::embedded::Engine;
use crate::harness::{complete_lines, key_root};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};
use tokio::task::block_in_place;

const DIR: &str = "KV_CHAOS_EMBEDDED_DIR";
const ROOT: &str = "KV_CHAOS_EMBEDDED_ROOT";
const ROUND: &str = "KV_CHAOS_EMBEDDED_ROUND";
const START: &str = "KV_CHAOS_EMBEDDED_START";
const SEED: &str = "KV_CHAOS_EMBEDDED_SEED";
const CLIENTS: &str = "KV_CHAOS_EMBEDDED_CLIENTS";
/// The argument that starts the chaos binary as a child, followed by the engine's name.
pub const CHILD_ARG: &str = "--embedded-child";
/// The first line the child prints, as soon as it starts.
const READY: &str = "READY";
/// The line with the main watch's first start revision, printed before any client runs.
const START_LINE: &str = "START";
/// Segment ids of round `r` start at `r * SEGMENTS`; the parent's at `u32::MAX / 2`.
const SEGMENTS: u32 = 10_000;

fn var<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// The child process of `engine`: opens the store, runs the main and bookmark watches and the
/// clients until it is killed, printing every record.
pub fn child(engine: Engine) -> ! {
    let epoch = Instant::now();
    println!("{READY}");
    let dir: PathBuf = var(DIR).expect("run by the chaos parent");
    let root: String = var(ROOT).expect("run by the chaos parent");
    let round: u32 = var(ROUND).expect("run by the chaos parent");
    let seed: u64 = var(SEED).unwrap_or(0);
    let clients: u32 = var(CLIENTS).unwrap_or(6);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async move {
        let store = engine.open(&dir).await.expect("the child opens the store");
        let recorder = Arc::new(Recorder::printing(epoch));
        let start = match var::<i64>(START) {
            Some(start) => start,
            None => store.revision().await.expect("the store's revision") + 1,
        };
        // Before any client runs, so that the parent's main watch starts before every write.
        println!("{START_LINE} {start}");
        let watchers = Watchers::new(start, round * SEGMENTS);
        let far = Instant::now() + Duration::from_secs(24 * 3600);
        let prefix = root.clone();
        tokio::spawn(main_watch(
            Arc::clone(&store),
            Arc::clone(&recorder),
            prefix.clone(),
            Arc::clone(&watchers),
            far,
        ));
        tokio::spawn(bookmark_watch(
            Arc::clone(&store),
            Arc::clone(&recorder),
            prefix,
            Arc::clone(&watchers),
            seed ^ u64::from(round),
        ));
        let work = workload(&root, Duration::from_secs(10), Duration::from_millis(2));
        let work = Arc::new(work);
        for i in 0..clients {
            let id = round * 16 + i;
            tokio::spawn(client(
                Arc::clone(&store),
                Arc::clone(&recorder),
                Arc::clone(&work),
                id,
                seed.wrapping_add(u64::from(id) * 7919),
                far,
            ));
        }
        std::future::pending::<()>().await;
    });
    unreachable!("the child runs until it is killed")
}

/// Where the children run: the engine, the chaos binary, the database directory and the key
/// root.
struct Children<'a> {
    engine: Engine,
    exe: &'a Path,
    dir: &'a Path,
    root: &'a str,
}

/// One child's life: the main watch's start when the child chose it, and its records on the
/// parent's clock.
fn round(
    children: &Children<'_>,
    round: u32,
    start: Option<i64>,
    settings: &Settings,
    recorder: &Recorder,
    lifetime: Duration,
) -> (Option<i64>, Vec<Record>) {
    let Children {
        engine,
        exe,
        dir,
        root,
    } = *children;
    let spawned = recorder.now();
    let mut cmd = Command::new(exe);
    cmd.args([CHILD_ARG, engine.name()])
        .env(DIR, dir)
        .env(ROOT, root)
        .env(ROUND, round.to_string())
        .env(SEED, settings.seed.to_string())
        .env(CLIENTS, settings.clients.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(start) = start {
        cmd.env(START, start.to_string());
    }
    let mut child = cmd.spawn().expect("start the embedded chaos child");
    let stdout = child.stdout.take().expect("the child's stdout");
    let (ready_tx, ready_rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        complete_lines(stdout, |line| {
            if line == READY {
                ready_tx.send(()).ok();
            } else {
                lines.push(line);
            }
        });
        lines
    });
    if ready_rx.recv_timeout(Duration::from_secs(60)).is_err() {
        child.kill().ok();
        panic!("the {} chaos child did not start", engine.name());
    }
    let ready = recorder.now();
    std::thread::sleep(lifetime);
    recorder.fault(format!(
        "{}: kill -9 the writing process, then start another",
        engine.name()
    ));
    child.kill().expect("SIGKILL the child");
    child.wait().expect("reap the child");
    let lines = reader.join().expect("the reader thread");
    let first_start = lines
        .iter()
        .find_map(|line| line.strip_prefix(START_LINE)?.trim().parse::<i64>().ok());
    let records = lines
        .iter()
        .filter_map(|line| line.parse::<Record>().ok())
        .map(|mut record| {
            let base = if record.is_completion() {
                ready
            } else {
                spawned
            };
            let at = record.at_mut();
            *at = at.saturating_add(base);
            record
        })
        .collect();
    (first_start, records)
}

/// The revision the main watch resumes from after `records`: the one after the last it
/// delivered, or its start when it delivered nothing.
fn resume_from(records: &[Record], current: Option<i64>) -> Option<i64> {
    let mut next = current;
    let mut main_segments = std::collections::HashSet::new();
    for record in records {
        match record {
            Record::Open {
                segment,
                main: true,
                start,
                ..
            } => {
                main_segments.insert(*segment);
                next = next.or(Some(*start));
            }
            Record::Batch {
                segment, revision, ..
            } if main_segments.contains(segment) => next = Some(revision + 1),
            _ => {}
        }
    }
    next
}

/// Runs children of `engine` for `settings.duration`, killing each after 1 to 4 s, then
/// checks. `exe` is the chaos binary (started with [`CHILD_ARG`]).
pub async fn run(engine: Engine, settings: &Settings, exe: &Path) -> Report {
    let began = Instant::now();
    let dir = tempfile::Builder::new()
        .prefix(&format!("kv-chaos-{}-", engine.name()))
        .tempdir()
        .expect("temp dir");
    let root = key_root("chaos");
    let recorder = Arc::new(Recorder::new());
    let mut rng = StdRng::seed_from_u64(settings.seed ^ 0x51ed);
    let until = Instant::now() + settings.duration;
    let mut start = None;
    let mut n = 0;
    let children = Children {
        engine,
        exe,
        dir: dir.path(),
        root: &root,
    };
    while Instant::now() < until {
        let lifetime = rng
            .random_range(Duration::from_millis(1000)..Duration::from_millis(4000))
            .min(until.saturating_duration_since(Instant::now()) + Duration::from_millis(200));
        let (first_start, records) =
            block_in_place(|| round(&children, n, start, settings, &recorder, lifetime));
        start = resume_from(&records, start.or(first_start));
        recorder.extend(records);
        n += 1;
    }
    // The parent takes over the database: leases expire, the main watch resumes.
    let store = engine
        .open(dir.path())
        .await
        .expect("the parent opens the store");
    let work = workload(&root, Duration::from_secs(10), Duration::from_millis(2));
    let start = match start {
        Some(start) => start,
        None => {
            retry(Duration::from_secs(10), || store.revision())
                .await
                .unwrap_or(0)
                + 1
        }
    };
    let watchers = Watchers::new(start, u32::MAX / 2);
    let main = tokio::spawn(main_watch(
        Arc::clone(&store),
        Arc::clone(&recorder),
        root.clone(),
        Arc::clone(&watchers),
        Instant::now() + Duration::from_secs(180),
    ));
    let (end, extra) = settle(&store, &work, &watchers, main).await;
    let records = recorder.records();
    save(engine.name(), &records);
    let mut analysis = block_in_place(|| analyse(&records, &work.layout, end, settings.budget));
    analysis.anomalies.extend(extra);
    Report {
        backend: engine.name(),
        analysis,
        wall: began.elapsed(),
        apart: None,
    }
}
