//! Project commands, run as `cargo xtask <command>`:
//!
//! - `setup`: installs what plain cargo commands and the tests need (`protoc`, `etcd`,
//!   `redis-server`, `chromium`, `chromedriver`), once per machine;
//! - `demo`: the main job on the embedded default store;
//! - `test`: the module graph (`modules --check`), formatting, lints and every test against
//!   real `etcd`, `redis-server` and a headless Chromium, then the crates outside the
//!   workspace (the long runs, `chaos` and `bench`, have commands of their own);
//! - `examples`: the examples of `kv/examples/`, each run as a user runs it (also part of
//!   `test`);
//! - `outside`: the crates of `tests/outside/`, each built as a user's crate outside the
//!   workspace, with only the library (or `kvctl`'s) as a dependency, then run, or tested
//!   when it has tests (also part of `test`);
//! - `bench`: the performance report, every measure against its raw client in one run, printed
//!   as a table and written to `target/bench/report.json` (`--quick`: short samples;
//!   `--only WORD`: some sections); `bench criterion [ARGS]` runs the other benchmarks
//!   (collections, layers, mirror, the Redis reconciler);
//! - `chaos`: concurrent clients on every backend under injected faults (kill -9,
//!   SIGSTOP/SIGCONT, restarts, etcd leader loss, network partitions of etcd and of Redis
//!   under Sentinel), their histories checked for linearizability and the watch
//!   properties, and for lost writes; closes with
//!   `chaos: N operations, M faults, K anomalies` and fails on any anomaly;
//! - `names`: every public item of the `keyplane` facade on one path, from its documentation
//!   (also part of `test`); `test` also checks that `keyplane`'s default dependency graph
//!   has no crate with a RustSec advisory (`advisories.rs`);
//! - `modules`: each crate's import circles between modules, its files over 500 lines of
//!   code, keyplane-core's layers and the backends' dependencies (the contract alone) (`--check`: fail on any).
//!
//! Each command first makes sure what it needs is there. The programs come from the
//! distribution's packages (`protobuf-compiler`, `etcd-server`, `redis-server`, `chromium`,
//! `chromium-driver`), installed with apt-get when running as root on Debian or Ubuntu;
//! otherwise the exact command to run is printed. Where no `protoc` can be installed, the one of the `protoc-bin-vendored` crate is
//! linked into `$CARGO_HOME/bin` when that is on `PATH`, and failing that is handed to the
//! commands xtask runs itself (as `PROTOC`).

mod advisories;
mod install;
mod modules;
mod names;
mod outside;
mod package;
mod step;
mod testrun;

use step::run;

use std::process::{Command, ExitCode};

const USAGE: &str = "usage: cargo xtask <setup|demo|test|bench|chaos> [args...]

  setup        install protoc, etcd, redis-server, chromium and chromedriver, so that plain
               cargo commands work
  demo         run the demo on the embedded default store
  test         modules --check, cargo fmt --check, clippy -D warnings, cargo doc, names, the
               default graph's advisories, every test against real servers and a headless Chromium, and the crates outside the
               workspace (chaos and bench are commands of their own)
  examples     run the examples of kv/examples/ (part of test)
  outside      build the crates of tests/outside/, each a user's crate outside the
               workspace, and run them (or their tests) (part of test)
  bench [--quick] [--only WORD]
               the performance report against real servers: a table, and
               target/bench/report.json (--quick: short samples, under ten minutes)
  bench criterion [ARGS]
               the other benchmarks: collections, layers, mirror, the Redis reconciler
               (ARGS go to `cargo bench`)
  chaos [--minutes N] [--backend all|memory|redb|sled|etcd|redis|sentinel] [--seed N]
               random concurrent operations under injected faults and network partitions on
               every backend, checked for linearizability, the watch properties and lost
               writes (default: 2 minutes in all)
  package      package every library crate and check each from its package alone (CI runs
               it on a clean checkout: cargo package refuses uncommitted changes)
  names        check that the keyplane facade has each public item on one path (part of test)
  modules [--check]
               each crate's import circles between modules, its files over 500 lines of code,
               keyplane-core's layers and the backends' dependencies (the contract alone)
               (--check: fail when there are any)";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let command = args.next();
    let rest: Vec<String> = args.collect();
    let result = match command.as_deref() {
        Some("setup") => setup(),
        Some("demo") => demo(&rest),
        Some("test") => test(&rest),
        Some("bench") => bench(&rest),
        Some("outside") => install::protoc().and_then(|protoc| outside::run_all(|| cargo(&protoc))),
        Some("examples") => install::protoc().and_then(|protoc| examples(&protoc)),
        Some("package") => {
            install::protoc().and_then(|protoc| package::run(|| cargo(&protoc), workspace_root()))
        }
        Some("chaos") => chaos(&rest),
        Some("names") => install::protoc()
            .and_then(|protoc| names::run(cargo(&protoc), &workspace_root().join("target"))),
        Some("modules") => modules::run(workspace_root(), rest.iter().any(|a| a == "--check")),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            Ok(())
        }
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// A `cargo` command, with `PROTOC` set for `etcd-client`'s build script when no `protoc` is
/// on `PATH`.
fn cargo(protoc: &Option<String>) -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    if let Some(protoc) = protoc {
        cmd.env("PROTOC", protoc);
    }
    cmd
}

/// Installs what plain cargo commands (`protoc`) and the tests (`etcd`, `redis-server`,
/// `chromium`, `chromedriver`) need, and says where each is.
fn setup() -> Result<(), String> {
    let protoc = install::protoc();
    let servers = install::ensure(&install::SERVERS);
    let browser = install::ensure(&install::BROWSER);
    let mut tools = vec![install::PROTOC];
    tools.extend(install::SERVERS);
    tools.extend(install::BROWSER);
    install::report(&tools);
    servers?;
    browser?;
    if protoc?.is_some() {
        return Err("no protoc on PATH for plain cargo commands (see above)".into());
    }
    eprintln!("xtask: ready: cargo build, cargo test -p CRATE and cargo clippy work as they are");
    Ok(())
}

fn demo(args: &[String]) -> Result<(), String> {
    let protoc = install::protoc()?;
    run(
        "demo",
        cargo(&protoc)
            .args([
                "run",
                "--quiet",
                "-p",
                "keyplane-cli",
                "--bin",
                "kvctl",
                "--",
                "demo",
            ])
            .args(args),
    )
}

/// The workspace's root directory: the parent of this crate's.
fn workspace_root() -> &'static std::path::Path {
    let xtask = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask.parent().unwrap_or(xtask)
}

fn test(args: &[String]) -> Result<(), String> {
    // The module graph first: it needs no build, and a circle or a layer break fails fast.
    modules::run(workspace_root(), true)?;
    let protoc = install::protoc()?;
    install::ensure(&install::SERVERS)?;
    install::ensure(&install::BROWSER)?;
    run(
        "cargo fmt --check",
        cargo(&protoc).args(["fmt", "--all", "--check"]),
    )?;
    run(
        "cargo clippy",
        cargo(&protoc).args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    run(
        "cargo doc",
        cargo(&protoc)
            .args(["doc", "--workspace", "--no-deps", "--quiet"])
            .env("RUSTDOCFLAGS", "-D warnings"),
    )?;
    names::run(cargo(&protoc), &workspace_root().join("target"))?;
    advisories::run(cargo(&protoc))?;
    if args.is_empty() {
        // The examples run from the test build (which makes them with the workspace's
        // features), and are checked as a user builds them: keyplane's default features, and
        // `proptest` for the one that needs it. That check and the outside crates mostly
        // compile: they run as two more jobs beside the test binaries, which mostly wait.
        let me =
            std::env::current_exe().map_err(|e| format!("cannot find xtask's own binary: {e}"))?;
        let mut examples_alone = cargo(&protoc);
        examples_alone.args([
            "check",
            "--quiet",
            "-p",
            "keyplane",
            "--examples",
            "--features",
            "proptest",
        ]);
        let mut outside = Command::new(&me);
        outside.arg("outside");
        let names: Vec<&str> = EXAMPLES.iter().map(|(name, _)| *name).collect();
        testrun::run(
            || cargo(&protoc),
            &[("KV_REQUIRE_SERVERS", "1")],
            &workspace_root().join("target/xtask-tests"),
            &names,
            vec![
                (
                    "the examples with keyplane's own features".to_string(),
                    examples_alone,
                ),
                ("outside crates".to_string(), outside),
            ],
        )
    } else {
        // A selection of tests (a filter, harness options): cargo runs it as given.
        run(
            "cargo test",
            cargo(&protoc)
                .args(["test", "--workspace"])
                .args(args)
                .env("KV_REQUIRE_SERVERS", "1"),
        )?;
        examples(&protoc)?;
        outside::run_all(|| cargo(&protoc))
    }
}

/// Runs every example of `kv/examples/`, as a user runs it (`-p keyplane`, the features it
/// names).
fn examples(protoc: &Option<String>) -> Result<(), String> {
    for (example, features) in EXAMPLES {
        run(
            &format!("example {example}"),
            cargo(protoc)
                .args(["run", "--quiet", "-p", "keyplane", "--example", example])
                .args(features.map(|f| ["--features", f]).into_iter().flatten()),
        )?;
    }
    Ok(())
}

/// The examples of `kv/examples/`, each with the feature it needs.
const EXAMPLES: [(&str, Option<&str>); 5] = [
    ("quickstart", None),
    ("own_schema", None),
    ("fuzz_schema", Some("proptest")),
    ("every_backend", None),
    ("watch_resume", None),
];

fn chaos(args: &[String]) -> Result<(), String> {
    let protoc = install::protoc()?;
    install::ensure(&install::SERVERS)?;
    run_chaos(&protoc, args)
}

/// The chaos binary of `keyplane-tests` (a debug build: the test build already has its
/// dependencies), with servers required.
fn run_chaos(protoc: &Option<String>, args: &[String]) -> Result<(), String> {
    run(
        "chaos",
        cargo(protoc)
            .args([
                "run",
                "--quiet",
                "-p",
                "keyplane-tests",
                "--bin",
                "chaos",
                "--",
            ])
            .args(args)
            .env("KV_REQUIRE_SERVERS", "1"),
    )
}

fn bench(args: &[String]) -> Result<(), String> {
    let protoc = install::protoc()?;
    install::ensure(&install::SERVERS)?;
    let mut command = cargo(&protoc);
    command.args(["bench", "-p", "keyplane-tests"]);
    match args.split_first() {
        Some((first, rest)) if first == "criterion" => {
            // All of them, unless the arguments name some.
            if !rest.iter().any(|a| a == "--bench") {
                for bench in CRITERION_BENCHES {
                    command.args(["--bench", bench]);
                }
            }
            command.args(rest);
        }
        _ => {
            command.args(["--bench", "report", "--"]).args(args);
        }
    }
    run("cargo bench", command.env("KV_REQUIRE_SERVERS", "1"))
}

/// The other benchmarks of `keyplane-tests`, beside the report: collections, layers, the
/// mirror and the Redis reconciler.
const CRITERION_BENCHES: [&str; 4] = ["collections", "layers", "mirror", "redis_reconcile"];
