//! Running the workspace's tests: every test target is built by one `cargo test --no-run`,
//! then the test binaries run several at a time, each as `cargo test` runs it (from its
//! package's directory, with cargo's package variables), and the doc tests, the examples and
//! the outside crates beside them.
//!
//! Most of a binary's time is spent waiting: for a server to start, for Sentinel to fail
//! over, for a watch's event. One binary at a time left the two cores idle for two thirds of
//! the run. Each binary keeps its own servers (the harness starts them per process, on free
//! ports), so binaries running side by side share nothing but the machine; the few whose
//! tests race a server's own timers (see [`ALONE`]) run afterwards, one at a time.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How many test binaries run at once, unless `XTASK_TEST_JOBS` says otherwise.
const JOBS: usize = 3;

/// The binaries that take longest, started first so that none of them ends the run alone
/// (measured on a 2-core machine; any binary not listed starts after these, in cargo's order).
const SLOW_FIRST: [&str; 12] = [
    "derive_compile_fail",
    "redis_limits",
    "redb_conformance",
    "etcd_conformance",
    "layered_conformance",
    "redis_sentinel",
    "redis_cluster",
    "limits",
    "partitions",
    "keyplane_core",
    "redis_conformance",
    "sled_conformance",
];

/// The binaries whose tests time failovers and partitions against Sentinel's and etcd's own
/// timers (a master down after a second, a leader's election): they run after the others,
/// one at a time, on an otherwise idle machine, as they always ran before.
const ALONE: [&str; 6] = [
    "partitions",
    "redis_sentinel",
    "redis_sentinel_ipv6",
    "redis_sentinel_lookup",
    "sentinel_conformance",
    "chaos_checks",
];

/// One test binary to run.
struct Binary {
    /// The target's name (`blips`, or the crate's name for its unit tests).
    name: String,
    executable: PathBuf,
    /// The directory of the package's manifest, where cargo runs its tests.
    package_dir: PathBuf,
    manifest: PathBuf,
    package: String,
    version: String,
}

/// What one job of the run did.
struct Done {
    label: String,
    elapsed: Duration,
    /// Its exit status and its output (stdout and stderr interleaved, as a terminal shows
    /// them).
    result: std::io::Result<(ExitStatus, String)>,
}

/// Builds every test target, then runs the binaries and the doc tests, `XTASK_TEST_JOBS`
/// (default 3) at a time, with `env` set for each. Every failure's output is printed in
/// full; the run fails when any job failed.
///
/// Each job's output goes to a file of `logs` rather than a pipe: a program a test leaves
/// running would hold a pipe open, and the job would never be seen to end.
/// `examples` are the examples the test build must have made; each runs as a job. `more` are
/// further jobs, started right after the doc tests (they mostly compile while the binaries
/// mostly wait).
pub(crate) fn run(
    cargo: impl Fn() -> Command,
    env: &[(&str, &str)],
    logs: &Path,
    examples: &[&str],
    more: Vec<(String, Command)>,
) -> Result<(), String> {
    eprintln!("xtask: cargo test --no-run");
    let started = Instant::now();
    let built = cargo()
        .args([
            "test",
            "--workspace",
            "--no-run",
            "--message-format=json-render-diagnostics",
        ])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cargo test --no-run: cannot start: {e}"))?;
    if !built.status.success() {
        return Err(format!("cargo test --no-run failed ({})", built.status));
    }
    let messages = String::from_utf8_lossy(&built.stdout);
    let mut binaries = binaries(&messages)?;
    let built_examples = built_examples(&messages);
    binaries.sort_by_key(|b| {
        SLOW_FIRST
            .iter()
            .position(|s| *s == b.name)
            .unwrap_or(SLOW_FIRST.len())
    });
    let queue_more = more.len();
    let jobs = std::env::var("XTASK_TEST_JOBS")
        .ok()
        .and_then(|j| j.parse().ok())
        .filter(|&j: &usize| j > 0)
        .unwrap_or(JOBS);
    eprintln!(
        "xtask: {} test binaries, the doc tests and {} more jobs, {jobs} at a time",
        binaries.len(),
        queue_more
    );
    let mut queue: VecDeque<(String, Command)> = VecDeque::new();
    let mut alone: VecDeque<(String, Command)> = VecDeque::new();
    for b in &binaries {
        let mut cmd = Command::new(&b.executable);
        cmd.current_dir(&b.package_dir)
            .env("CARGO_MANIFEST_DIR", &b.package_dir)
            .env("CARGO_MANIFEST_PATH", &b.manifest)
            .env("CARGO_PKG_NAME", &b.package)
            .env("CARGO_PKG_VERSION", &b.version)
            .envs(env.iter().copied());
        if let Ok(cargo) = std::env::var("CARGO") {
            cmd.env("CARGO", cargo);
        }
        let job = (format!("{} ({})", b.name, b.package), cmd);
        if ALONE.contains(&b.name.as_str()) {
            alone.push_back(job);
        } else {
            queue.push_back(job);
        }
    }
    // The examples as the test build made them, each run as a job of its own.
    for &name in examples {
        let (dir, exe) = built_examples
            .iter()
            .find(|(example, ..)| example == name)
            .map(|(_, dir, exe)| (dir, exe))
            .ok_or_else(|| {
                format!("cargo test --no-run built no example {name} (its required features?)")
            })?;
        let mut cmd = Command::new(exe);
        cmd.current_dir(dir);
        queue.push_back((format!("example {name}"), cmd));
    }
    let mut doc = cargo();
    doc.args(["test", "--workspace", "--doc"])
        .envs(env.iter().copied());
    // The other jobs compile as they go: they start with the slow binaries.
    for job in more.into_iter().rev() {
        queue.push_front(job);
    }
    queue.push_front(("doc tests".to_string(), doc));
    let total = queue.len() + alone.len();
    std::fs::create_dir_all(logs).map_err(|e| format!("cannot create {}: {e}", logs.display()))?;
    let alone_start = queue.len();
    let mut failed = run_queue(queue, jobs, 0, total, logs);
    failed.extend(run_queue(alone, 1, alone_start, total, logs));
    eprintln!(
        "xtask: {total} test jobs in {:.0} s, {} failed",
        started.elapsed().as_secs_f64(),
        failed.len()
    );
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("tests failed: {}", failed.join(", ")))
    }
}

/// Runs the queue's commands `jobs` at a time, printing each one's result as it ends (its
/// whole output when it failed); the labels of those that failed. `first` is the number of
/// jobs run before these, for the count printed with each.
fn run_queue(
    queue: VecDeque<(String, Command)>,
    jobs: usize,
    first: usize,
    total: usize,
    logs: &Path,
) -> Vec<String> {
    let queue = Arc::new(Mutex::new(
        queue
            .into_iter()
            .enumerate()
            .map(|(n, job)| (first + n, job))
            .collect::<VecDeque<_>>(),
    ));
    let (tx, rx) = mpsc::channel::<Done>();
    let workers: Vec<_> = (0..jobs)
        .map(|_| {
            let queue = Arc::clone(&queue);
            let tx = tx.clone();
            let logs = logs.to_path_buf();
            std::thread::spawn(move || {
                loop {
                    let next = queue.lock().map(|mut q| q.pop_front());
                    let Ok(Some((n, (label, mut cmd)))) = next else {
                        break;
                    };
                    let started = Instant::now();
                    let result = run_logged(&mut cmd, &logs.join(format!("{n}.log")));
                    let done = Done {
                        label,
                        elapsed: started.elapsed(),
                        result,
                    };
                    if tx.send(done).is_err() {
                        break;
                    }
                }
            })
        })
        .collect();
    drop(tx);
    let mut failed = Vec::new();
    for (n, done) in rx.iter().enumerate().map(|(n, d)| (first + n, d)) {
        let secs = done.elapsed.as_secs_f64();
        match &done.result {
            Ok((status, out)) if status.success() => {
                let passed = match summary(out) {
                    0 => String::new(),
                    n => format!(", {n} passed"),
                };
                eprintln!(
                    "xtask: [{}/{total}] {}: ok{passed} ({secs:.1} s)",
                    n + 1,
                    done.label
                );
            }
            Ok((status, out)) => {
                eprintln!(
                    "xtask: [{}/{total}] {}: FAILED ({status}, {secs:.1} s); its output:\n{out}",
                    n + 1,
                    done.label,
                );
                failed.push(done.label);
            }
            Err(e) => {
                eprintln!(
                    "xtask: [{}/{total}] {}: cannot start: {e}",
                    n + 1,
                    done.label
                );
                failed.push(done.label);
            }
        }
    }
    for w in workers {
        let _ = w.join();
    }
    failed
}

/// Runs `cmd` with its stdout and stderr appended to the file `log`; its status and output.
fn run_logged(cmd: &mut Command, log: &Path) -> std::io::Result<(ExitStatus, String)> {
    let file = std::fs::File::create(log)?;
    let status = cmd
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .status()?;
    let out = std::fs::read(log)?;
    Ok((status, String::from_utf8_lossy(&out).into_owned()))
}

/// The number of tests a test binary's output says passed (the sum of its `test result:`
/// lines, one per binary, or one per crate for the doc tests).
fn summary(stdout: &str) -> usize {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("test result: ok. "))
        .filter_map(|rest| rest.split(' ').next()?.parse::<usize>().ok())
        .sum()
}

/// The test binaries of cargo's JSON messages: the artifacts built with the test profile
/// that have an executable.
fn binaries(messages: &str) -> Result<Vec<Binary>, String> {
    let mut out = Vec::new();
    for line in messages.lines() {
        if !line.contains("\"reason\":\"compiler-artifact\"") || !profile_is_test(line) {
            continue;
        }
        let (Some(exe), Some(manifest), Some(id), Some(name)) = (
            string_field(line, "executable"),
            string_field(line, "manifest_path"),
            string_field(line, "package_id"),
            string_field(line, "name"),
        ) else {
            continue;
        };
        let manifest = PathBuf::from(manifest);
        let package_dir = manifest
            .parent()
            .map(Path::to_path_buf)
            .ok_or_else(|| format!("a manifest path without a directory: {manifest:?}"))?;
        let (package, version) = package_of(&id, &package_dir);
        out.push(Binary {
            name,
            executable: PathBuf::from(exe),
            package_dir,
            manifest,
            package,
            version,
        });
    }
    if out.is_empty() {
        return Err("cargo test --no-run built no test binary".to_string());
    }
    Ok(out)
}

/// The examples of cargo's JSON messages (kind `example`, built but not with the test
/// profile) that have an executable: each one's name, its package's directory and the
/// executable.
fn built_examples(messages: &str) -> Vec<(String, PathBuf, PathBuf)> {
    messages
        .lines()
        .filter(|line| {
            line.contains("\"reason\":\"compiler-artifact\"")
                && line.contains("\"kind\":[\"example\"]")
                && !profile_is_test(line)
        })
        .filter_map(|line| {
            let manifest = PathBuf::from(string_field(line, "manifest_path")?);
            Some((
                string_field(line, "name")?,
                manifest.parent()?.to_path_buf(),
                PathBuf::from(string_field(line, "executable")?),
            ))
        })
        .collect()
}

/// Whether the artifact was built with the test profile (`"profile":{...,"test":true}`), as
/// opposed to an example or a binary that `cargo test` builds but does not run.
fn profile_is_test(line: &str) -> bool {
    line.split_once("\"profile\":{")
        .and_then(|(_, rest)| rest.split_once('}'))
        .is_some_and(|(profile, _)| profile.contains("\"test\":true"))
}

/// A string field's value in a JSON line (its first occurrence), with `\\` and `\"`
/// unescaped; `None` when absent or `null`.
fn string_field(line: &str, field: &str) -> Option<String> {
    let start = line.find(&format!("\"{field}\":\""))? + field.len() + 4;
    let mut value = String::new();
    let mut chars = line[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(value),
            '\\' => value.push(chars.next()?),
            c => value.push(c),
        }
    }
    None
}

/// The package's name and version from its id: `path+file:///dir#name@1.0.0`, or
/// `path+file:///dir/name#1.0.0` when the directory has the package's name.
fn package_of(id: &str, dir: &Path) -> (String, String) {
    let fragment = id.rsplit_once('#').map_or(id, |(_, f)| f);
    match fragment.split_once('@') {
        Some((name, version)) => (name.to_string(), version.to_string()),
        None => (
            dir.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            fragment.to_string(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARTIFACT: &str = r#"{"reason":"compiler-artifact","package_id":"path+file:///w/tests#keyplane-tests@0.1.0","manifest_path":"/w/tests/Cargo.toml","target":{"kind":["test"],"crate_types":["bin"],"name":"blips","src_path":"/w/tests/tests/blips.rs","edition":"2024","doc":false,"doctest":false,"test":true},"profile":{"opt_level":"0","debuginfo":1,"debug_assertions":true,"overflow_checks":true,"test":true},"features":[],"filenames":["/w/target/debug/deps/blips-1"],"executable":"/w/target/debug/deps/blips-1","fresh":true}"#;

    #[test]
    fn a_test_artifact_is_a_binary_with_its_package() {
        let b = binaries(ARTIFACT).unwrap();
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].name, "blips");
        assert_eq!(
            b[0].executable,
            PathBuf::from("/w/target/debug/deps/blips-1")
        );
        assert_eq!(b[0].package_dir, PathBuf::from("/w/tests"));
        assert_eq!(
            (b[0].package.as_str(), b[0].version.as_str()),
            ("keyplane-tests", "0.1.0")
        );
    }

    #[test]
    fn an_example_built_by_cargo_test_is_no_test_binary_but_an_example() {
        let example = ARTIFACT
            .replace("\"kind\":[\"test\"]", "\"kind\":[\"example\"]")
            .replace(
                "\"overflow_checks\":true,\"test\":true",
                "\"overflow_checks\":true,\"test\":false",
            )
            .replace(",\"test\":true}", ",\"test\":false}");
        assert!(binaries(&example).is_err());
        assert_eq!(
            built_examples(&example),
            [(
                "blips".to_string(),
                PathBuf::from("/w/tests"),
                PathBuf::from("/w/target/debug/deps/blips-1")
            )]
        );
        assert!(built_examples(ARTIFACT).is_empty());
    }

    #[test]
    fn a_package_named_like_its_directory_has_a_short_id() {
        assert_eq!(
            package_of("path+file:///w/xtask#0.1.0", Path::new("/w/xtask")),
            ("xtask".to_string(), "0.1.0".to_string())
        );
    }

    #[test]
    fn the_passed_counts_of_every_result_line_add_up() {
        let out = "running 2 tests\ntest result: ok. 2 passed; 0 failed\n\
                   test result: ok. 5 passed; 1 ignored\n";
        assert_eq!(summary(out), 7);
    }
}
