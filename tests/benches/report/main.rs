//! The performance report: every measure of the library against its raw client (or against
//! its own baseline) in one run, printed as a table and written to
//! `target/bench/report.json` (and `report.md`). A full run (neither `--quick` nor `--only`)
//! also keeps its JSON as `tests/benches/report/latest.json` and rewrites the README's
//! performance block from it ([`readme`]).
//!
//! `cargo xtask bench` runs it in full; `cargo xtask bench --quick` with short samples (every
//! measure, under ten minutes on a 2-core machine). `--only WORD` runs the sections whose
//! name contains WORD (`keyspace`, `redis`, `etcd`, `cluster`, `group commit`, `sled`, `redb`,
//! `memory`, `mirror`, `scale`, `busy`).
//!
//! The JSON is `{"quick", "elapsed_seconds", "cpus", "measures": [{"name", "ours", "raw",
//! "unit", "ratio", "target", "goal", "met", "rounds", "spread", "undecided", "note"}]}`:
//! `ratio` is the median of the rounds' ratios (ours over raw, the two sides of a round
//! taken back to back), or `ours / raw` for a figure taken once (`rounds` 0); `spread` is the
//! rounds' lowest and highest ratio; `goal` says whether the ratio must be `at_most` or
//! `at_least` the `target`, or `within` it: `ours` itself at most the `target`, in `unit`
//! (`none`: no target, `met` true); `met` is a boolean; `undecided` says why the run cannot
//! judge the row (fewer than five rounds, or the middle half of the rounds on both sides of
//! the target), or is null. Every run ends with the list of rows it cannot judge.

mod busy;
mod cluster;
mod concurrency;
mod floor;
mod group_commit;
#[path = "../common/items.rs"]
mod items;
mod keyspace;
mod measure;
mod memory;
mod mirror;
mod readme;
mod redb_scale;
mod redb_writes;
mod scale;
mod single;
mod sled_scale;
mod sled_writes;

use measure::{Budget, Report};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};
use std::alloc::System;
use std::time::Instant;

/// The system allocator, counting what is allocated: the memory measures read it.
#[global_allocator]
static ALLOCATOR: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Bytes allocated and not yet freed by this process. The counts of bytes allocated and freed
/// already take in what a reallocation grows or shrinks by (`bytes_reallocated` is the same
/// change again, kept apart: adding it would count each reallocation twice).
pub fn live_bytes() -> isize {
    let stats = ALLOCATOR.stats();
    stats.bytes_allocated as isize - stats.bytes_deallocated as isize
}

type Section = (&'static str, fn(Budget, &mut Report));

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let only: Vec<&str> = args
        .windows(2)
        .filter(|w| w[0] == "--only")
        .map(|w| w[1].as_str())
        .collect();
    let budget = Budget::new(quick);
    let sections: [Section; 13] = [
        ("keyspace", keyspace::run),
        ("redis single", single::redis),
        ("etcd single", single::etcd),
        ("redis concurrency", concurrency::redis),
        ("redis group commit", group_commit::run),
        ("etcd concurrency", concurrency::etcd),
        ("redis cluster", cluster::run),
        ("sled", sled_writes::run),
        ("redb", redb_writes::run),
        ("memory", memory::run),
        ("mirror lookups", mirror::run),
        ("scale", scale::run),
        ("busy reads", busy::run),
    ];
    let started = Instant::now();
    let mut report = Report::default();
    for (name, section) in sections {
        if !only.is_empty() && !only.iter().any(|o| name.contains(o)) {
            continue;
        }
        println!("== {name} ({:.0} s)", started.elapsed().as_secs_f64());
        section(budget, &mut report);
    }
    let elapsed = started.elapsed();
    let json = report.json(quick, elapsed);
    let measures = json["measures"].as_array().map_or(&[][..], Vec::as_slice);
    let table = readme::table(measures);
    println!("\n{table}");
    let missed = report.measures.iter().filter(|m| !m.met()).count();
    let undecided: Vec<(&str, String)> = report
        .measures
        .iter()
        .filter_map(|m| Some((m.name.as_str(), m.undecided()?)))
        .collect();
    if !undecided.is_empty() {
        println!("This run cannot judge these rows against their targets:");
        for (name, why) in &undecided {
            println!("  {name}: {why}");
        }
    }
    println!(
        "{} measures, {} targets missed, {} undecided, {:.0} s{}",
        report.measures.len(),
        missed,
        undecided.len(),
        elapsed.as_secs_f64(),
        if quick { " (quick)" } else { "" }
    );
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join("bench");
    std::fs::create_dir_all(&dir).expect("create target/bench");
    let text = serde_json::to_string_pretty(&json).expect("json") + "\n";
    std::fs::write(dir.join("report.json"), &text).expect("write report.json");
    std::fs::write(dir.join("report.md"), table).expect("write report.md");
    println!("written: {}", dir.join("report.json").display());
    if !quick && only.is_empty() {
        publish(&json, &text);
    }
}

/// Keeps a full run's JSON beside the report's sources and rewrites the README's block from it.
fn publish(json: &serde_json::Value, text: &str) {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let latest = manifest.join("benches/report/latest.json");
    std::fs::write(&latest, text).expect("write latest.json");
    let path = manifest.join("../README.md");
    let before = std::fs::read_to_string(&path).expect("read README.md");
    let block = readme::block(json);
    if readme::current(&before).is_ok_and(|current| current == block) {
        println!("the README's report is already this run's");
        return;
    }
    match readme::replace(&before, &block) {
        Ok(after) => {
            std::fs::write(&path, after).expect("write README.md");
            println!("written: {} and the README's report", latest.display());
        }
        Err(e) => eprintln!("README.md not rewritten: {e}"),
    }
}
