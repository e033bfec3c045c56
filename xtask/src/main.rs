//! Project commands, run as `cargo xtask <command>`:
//!
//! - `demo`: the main job on the embedded default store;
//! - `test`: formatting, lints and every test against real `etcd` and `redis-server`;
//! - `bench`: the criterion benchmarks against real servers.
//!
//! Each command first makes sure what the build and the tests need is there: `protoc` for
//! `etcd-client` (from the `protoc-bin-vendored` crate, passed to cargo as `PROTOC`), and the
//! `etcd` and `redis-server` binaries (installed from the distribution's packages when running
//! as root on Debian or Ubuntu; otherwise the exact command to run is printed).

mod install;

use std::process::{Command, ExitCode};

const USAGE: &str = "usage: cargo xtask <demo|test|bench> [args...]

  demo         run the demo on the embedded default store
  test         cargo fmt --check, clippy -D warnings, cargo doc, and every test against real servers
  bench [ARGS] criterion benchmarks against real servers (ARGS go to `cargo bench`)";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let command = args.next();
    let rest: Vec<String> = args.collect();
    let result = match command.as_deref() {
        Some("demo") => demo(&rest),
        Some("test") => test(&rest),
        Some("bench") => bench(&rest),
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

/// A `cargo` command with `PROTOC` set for `etcd-client`'s build script.
fn cargo(protoc: &str) -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.env("PROTOC", protoc);
    cmd
}

/// Runs a command, turning a failure into a message that names the step.
fn run(step: &str, cmd: &mut Command) -> Result<(), String> {
    eprintln!("xtask: {step}");
    let status = cmd
        .status()
        .map_err(|e| format!("{step}: cannot start: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{step} failed ({status})"))
    }
}

fn demo(args: &[String]) -> Result<(), String> {
    let protoc = install::protoc()?;
    run(
        "demo",
        cargo(&protoc)
            .args([
                "run", "--quiet", "-p", "kv-cli", "--bin", "kvctl", "--", "demo",
            ])
            .args(args),
    )
}

fn test(args: &[String]) -> Result<(), String> {
    let protoc = install::protoc()?;
    install::servers()?;
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
    run(
        "cargo test",
        cargo(&protoc)
            .args(["test", "--workspace"])
            .args(args)
            .env("KV_REQUIRE_SERVERS", "1"),
    )
}

fn bench(args: &[String]) -> Result<(), String> {
    let protoc = install::protoc()?;
    install::servers()?;
    run(
        "cargo bench",
        cargo(&protoc)
            .args(["bench", "-p", "kv-tests"])
            .args(args)
            .env("KV_REQUIRE_SERVERS", "1"),
    )
}
