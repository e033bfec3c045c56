//! Hand-written backoff loops: a `sleep(...)` (tokio's or the standard library's) whose
//! argument calls `.delay(...)` of a backoff policy. Every retry goes through the contract's
//! `Attempts` (or `retry`), which counts the attempts, gives up and starts afresh the same
//! way everywhere; only the policy itself (`kv-contract/src/retry.rs`) computes delays to
//! sleep on. A pause that is not a backoff (`sleep(POLL)`) is no finding.

use super::source::strip;
use std::path::{Path, PathBuf};

/// The one file that may sleep on a policy's delay.
const POLICY: &str = "kv-contract/src/retry.rs";

/// The hand-written backoff loops of the workspace's Rust files: `(file, line)`.
pub fn loops(root: &Path) -> Result<Vec<(PathBuf, usize)>, String> {
    let mut out = Vec::new();
    for file in rust_files(root)? {
        if file
            .strip_prefix(root)
            .is_ok_and(|f| f == Path::new(POLICY))
        {
            continue;
        }
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        out.extend(
            sleeps_on_delay(&text)
                .into_iter()
                .map(|line| (file.clone(), line)),
        );
    }
    Ok(out)
}

/// Every `.rs` file under `root`, build output and hidden directories aside.
fn rust_files(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if path.is_dir() {
                if !name.starts_with('.') && name != "target" {
                    stack.push(path);
                }
            } else if name.ends_with(".rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The lines of `text` (comments and strings aside, tests included) where a `sleep(` call
/// starts whose argument calls `.delay(`.
fn sleeps_on_delay(text: &str) -> Vec<usize> {
    let code = strip_keeping_tests(text);
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find("sleep(") {
        let at = from + found;
        from = at + "sleep(".len();
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
            continue;
        }
        // The argument: up to the parenthesis that closes the call.
        let mut depth = 1;
        let mut end = from;
        while end < b.len() && depth > 0 {
            match b[end] {
                b'(' => depth += 1,
                b')' => depth -= 1,
                _ => {}
            }
            end += 1;
        }
        let argument: String = code[from..end]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        if argument.contains(".delay(") {
            out.push(code[..at].matches('\n').count() + 1);
        }
    }
    out
}

/// `text` without comments and strings, its lines kept. The module graph leaves tests out;
/// a backoff loop is one in a test too, so the test items are put back by stripping a copy
/// in which no item is marked as a test.
fn strip_keeping_tests(text: &str) -> String {
    strip(&text.replace("#[cfg(test)]", "#[cfg(all())]"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleep_on_a_policy_delay_is_a_finding_and_a_plain_sleep_is_not() {
        let text = "async fn f(policy: &Backoff) {\n\
                    \x20   tokio::time::sleep(POLL).await;\n\
                    \x20   tokio::time::sleep(policy.delay(attempt)).await;\n\
                    \x20   std::thread::sleep(\n        LOCK_POLL.delay(n),\n    );\n\
                    \x20   // tokio::time::sleep(policy.delay(1)) in a comment\n\
                    \x20   let _ = \"sleep(policy.delay(1))\";\n\
                    \x20   tokio::time::sleep(attempts.next_delay().unwrap_or(POLL)).await;\n\
                    \x20   tokio::time::sleep_until(deadline(policy.delay(1))).await;\n\
                    }\n";
        assert_eq!(sleeps_on_delay(text), [3, 4]);
    }

    #[test]
    fn the_policy_alone_may_sleep_on_its_delays() {
        let dir = std::env::temp_dir().join(format!("xtask-backoff-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in [
            (POLICY, "fn f() { std::thread::sleep(self.delay(0)); }\n"),
            (
                "kv-x/src/lib.rs",
                "#[cfg(test)]\nmod tests {\n    fn t() { std::thread::sleep(P.delay(0)); }\n}\n",
            ),
            ("kv-y/src/lib.rs", "fn f() { std::thread::sleep(POLL); }\n"),
        ] {
            let file = dir.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
        let found = loops(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(found, [(dir.join("kv-x/src/lib.rs"), 3)]);
    }
}
