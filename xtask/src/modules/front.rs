//! The contract's front checks every request once, before a backend sees it
//! (`keyplane_contract::driver`): a backend that validates a key, a prefix, a value, a
//! transaction or a watch start again does work the front did, and a reader of it wonders
//! whether the front can be trusted. Such a call in a backend's library is a finding.
//!
//! A backend's configuration is checked where it is parsed (`config.rs`, `config/`), not by
//! the front, so those files are left out.

use super::source::strip;
use std::path::{Path, PathBuf};

/// The calls that re-check what the front checked.
const RECHECKS: [&str; 5] = [
    "validate_key(",
    "validate_prefix(",
    "validate_value(",
    "check_starts(",
    ".validate(&",
];

/// The calls in the backend library under `src` that re-check a request:
/// `(file, line, call)`.
pub fn backend_rechecks(src: &Path) -> Result<Vec<(PathBuf, usize, &'static str)>, String> {
    let mut out = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| e.to_string())?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name == "config" || name == "config.rs" {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else if name.ends_with(".rs") {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                for (line, call) in rechecks(&text) {
                    out.push((path.clone(), line, call));
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The re-checking calls of one file's code (comments, strings and tests left out), with
/// their lines.
fn rechecks(text: &str) -> Vec<(usize, &'static str)> {
    let code = strip(text);
    let mut out = Vec::new();
    for (index, line) in code.lines().enumerate() {
        for call in RECHECKS {
            if line.contains(call) {
                out.push((index + 1, call));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backend_re_checking_a_request_is_found() {
        let planted = "pub fn get(key: &[u8]) -> Result<()> {\n    \
                       keyplane_contract::raw::validate_key(key)?;\n    Ok(())\n}\n\
                       fn txn(t: Txn, caps: &Capabilities) { t.validate(&caps); }\n";
        assert_eq!(
            rechecks(planted),
            [(2, "validate_key("), (5, ".validate(&")]
        );
    }

    #[test]
    fn comments_strings_and_tests_are_not_calls() {
        let clean = "// validate_key(key) is the front's\nfn f() { let s = \"check_starts(\"; }\n\
                     #[cfg(test)]\nmod tests {\n    fn t() { validate_key(b\"k\").unwrap(); }\n}\n";
        assert_eq!(rechecks(clean), []);
    }
}
