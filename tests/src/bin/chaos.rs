//! `cargo xtask chaos [--minutes N] [--backend all|memory|redb|sled|etcd|redis|sentinel] [--seed N]`:
//! concurrent clients run random operations on each backend while faults are injected; the
//! histories are checked for linearizability per key and for the six watch properties (see
//! `keyplane_tests::chaos`). Prints one line per backend, every anomaly, and closes with
//! `chaos: N operations, M faults, K anomalies`; exits with 1 on any anomaly.

use keyplane_tests::chaos::embedded;
use keyplane_tests::chaos::run::{self, Report, Settings};
use keyplane_tests::chaos::sentinel;
use keyplane_tests::embedded::Engine;
use std::process::ExitCode;
use std::time::Duration;

const USAGE: &str = "usage: chaos [--minutes N] \
                     [--backend all|memory|redb|sled|etcd|redis|sentinel[,...]] [--seed N] [--clients N]";
const BACKENDS: [&str; 6] = ["memory", "redb", "sled", "etcd", "redis", "sentinel"];
/// The part of each backend's share of the time taken by start-up, lease expiry and checks.
const OVERHEAD: Duration = Duration::from_secs(4);

struct Args {
    minutes: f64,
    backends: Vec<String>,
    seed: u64,
    clients: u32,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        minutes: 2.0,
        backends: BACKENDS.iter().map(|b| b.to_string()).collect(),
        seed: rand::random(),
        clients: 6,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--minutes" => {
                args.minutes = value()?.parse().map_err(|e| format!("--minutes: {e}"))?;
                if !args.minutes.is_finite() || args.minutes <= 0.0 {
                    return Err("--minutes must be positive".into());
                }
            }
            "--backend" => {
                let v = value()?;
                args.backends = if v == "all" {
                    BACKENDS.iter().map(|b| b.to_string()).collect()
                } else {
                    v.split(',').map(String::from).collect()
                };
                if let Some(bad) = args
                    .backends
                    .iter()
                    .find(|b| !BACKENDS.contains(&b.as_str()))
                {
                    return Err(format!("unknown backend {bad}\n{USAGE}"));
                }
            }
            "--seed" => args.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--clients" => {
                args.clients = value()?.parse().map_err(|e| format!("--clients: {e}"))?
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    Ok(args)
}

fn print(report: &Report) {
    println!("{}", report.line());
    println!("{}", report.faults_line());
    for anomaly in &report.analysis.anomalies {
        println!("  ANOMALY {anomaly}");
    }
    for inconclusive in &report.analysis.inconclusive {
        println!("  INCONCLUSIVE {inconclusive}");
    }
    if let (Some(line), Some(apart)) = (report.apart_line(), &report.apart) {
        println!("{line}");
        // The first few of each, as examples: they are what the README's Sentinel section
        // describes, not anomalies.
        for lost in apart.lost_unwaited.iter().take(3) {
            println!("  apart: lost, not waited for: {lost}");
        }
        for finding in apart.findings.iter().take(3) {
            println!("  apart: {finding}");
        }
    }
}

fn main() -> ExitCode {
    let mut argv = std::env::args().skip(1);
    if argv.next().as_deref() == Some(embedded::CHILD_ARG) {
        match argv.next().as_deref().and_then(Engine::from_name) {
            Some(engine) => embedded::child(engine),
            None => {
                eprintln!("{}: redb or sled", embedded::CHILD_ARG);
                return ExitCode::from(2);
            }
        }
    }
    let args = match parse() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let share = Duration::from_secs_f64(args.minutes * 60.0 / args.backends.len() as f64);
    let settings = Settings {
        duration: share.saturating_sub(OVERHEAD).max(Duration::from_secs(5)),
        clients: args.clients,
        seed: args.seed,
        budget: 20_000_000,
    };
    println!(
        "chaos: {} for {:.0} s each, {} clients, seed {} (--seed {} repeats the clients' and \
         the faults' choices; timing still varies)",
        args.backends.join(", "),
        settings.duration.as_secs_f64(),
        settings.clients,
        settings.seed,
        settings.seed
    );
    let exe = std::env::current_exe().expect("the chaos binary's path");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("a runtime");
    let reports: Vec<Report> = runtime.block_on(async {
        let mut reports = Vec::new();
        for backend in &args.backends {
            let report = match backend.as_str() {
                "memory" => Some(run::memory(&settings).await),
                "redb" => Some(embedded::run(Engine::Redb, &settings, &exe).await),
                "sled" => Some(embedded::run(Engine::Sled, &settings, &exe).await),
                "etcd" => run::etcd(&settings).await,
                "sentinel" => sentinel::sentinel(&settings).await,
                _ => run::redis(&settings).await,
            };
            match report {
                Some(report) => {
                    print(&report);
                    reports.push(report);
                }
                None => println!("chaos: {backend}: SKIPPED (server not installed)"),
            }
        }
        reports
    });
    let operations: usize = reports.iter().map(|r| r.analysis.operations).sum();
    let faults: usize = reports.iter().map(|r| r.analysis.faults).sum();
    let anomalies: usize = reports.iter().map(|r| r.analysis.anomalies.len()).sum();
    println!("chaos: {operations} operations, {faults} faults, {anomalies} anomalies");
    if anomalies > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
