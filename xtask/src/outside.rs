//! `cargo xtask outside`: the crates of `tests/outside/`, each built as a user's crate is: its
//! own manifest with path dependencies, its own resolution, no workspace membership. A crate
//! with a `tests/` folder is tested (`cargo test`: its integration tests drive what it builds,
//! such as a binary); any other is run (`cargo run`: its `main` is the check).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The folder of the outside crates, relative to the workspace root.
const OUTSIDE: &str = "tests/outside";

/// Builds and tests or runs every crate under `tests/outside/`. Each starts from the
/// workspace's `Cargo.lock` (cargo keeps the versions the workspace is tested with and drops the
/// rest). They build into the workspace's target directory with its profiles (which
/// `.cargo/config.toml` sets for every build in the repository), so the dependencies they
/// resolve as the workspace does are the workspace's own builds, and only what resolves
/// differently (the library's crates with other features) is built again.
pub(crate) fn run_all(cargo: impl Fn() -> Command) -> Result<(), String> {
    let root = workspace_root();
    let crates = crates(&root.join(OUTSIDE))?;
    if crates.is_empty() {
        return Err(format!("no crate found under {OUTSIDE}"));
    }
    let target = root.join("target");
    for dir in crates {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock"))
            .map_err(|e| format!("outside crate {name}: cannot copy Cargo.lock: {e}"))?;
        crate::step::run(
            &format!("cargo fmt --check of outside crate {name}"),
            cargo()
                .args(["fmt", "--check", "--manifest-path"])
                .arg(dir.join("Cargo.toml")),
        )?;
        let how = if dir.join("tests").is_dir() {
            "test"
        } else {
            "run"
        };
        crate::step::run(
            &format!("outside crate {name} (cargo {how})"),
            cargo()
                .args([how, "--quiet", "--manifest-path"])
                .arg(dir.join("Cargo.toml"))
                .arg("--target-dir")
                .arg(&target),
        )?;
    }
    Ok(())
}

/// The workspace root: the parent of xtask's own manifest directory.
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// The folders under `dir` that hold a `Cargo.toml`, sorted.
fn crates(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut crates: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.join("Cargo.toml").is_file())
        .collect();
    crates.sort();
    Ok(crates)
}
