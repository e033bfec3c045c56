//! `cargo xtask package`: every library crate packages, and each builds from its package
//! alone.
//!
//! `cargo package --no-verify` writes the packages. Each is unpacked into
//! `target/package-check/`, which becomes a workspace of its own: the workspace's lock file, and
//! its members taking one another from there rather than from crates.io, as a registry would
//! serve them. Then `cargo check -p NAME` runs for each package in turn, with only that
//! package's features, in the workspace's target directory.
//!
//! `cargo package` alone verifies with a full build of each package. A check finds what such a
//! build finds in a library's package: a file left out of the package, a feature or a
//! dependency that only another member of the workspace switches on. It does so without code
//! generation, and it shares the dependencies' checks that clippy made.

use std::path::Path;
use std::process::Command;

/// Where the packages are unpacked, under the target directory.
const CHECK_DIR: &str = "package-check";

/// Packages every member but xtask, then checks each package from its unpacked copy.
pub(crate) fn run(cargo: impl Fn() -> Command, root: &Path) -> Result<(), String> {
    eprintln!("xtask: cargo package --no-verify");
    let packaged = cargo()
        .current_dir(root)
        .args([
            "package",
            "--workspace",
            "--exclude",
            "xtask",
            "--no-verify",
        ])
        .output()
        .map_err(|e| format!("cargo package: cannot start: {e}"))?;
    let log = String::from_utf8_lossy(&packaged.stderr);
    eprint!("{log}");
    if !packaged.status.success() {
        return Err(format!("cargo package failed ({})", packaged.status));
    }
    let packages = packaged_names(&log);
    if packages.is_empty() {
        return Err("cargo package named no package".into());
    }
    let target = root.join("target");
    let dir = target.join(CHECK_DIR);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .map_err(|e| format!("cannot clear {}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for (name, version) in &packages {
        let file = target
            .join("package")
            .join(format!("{name}-{version}.crate"));
        // `-m`: the files get the time of unpacking, newer than any earlier check of the same
        // version, so cargo checks them again.
        crate::step::run(
            &format!("unpack {name} {version}"),
            Command::new("tar")
                .arg("-xmzf")
                .arg(&file)
                .arg("-C")
                .arg(&dir),
        )?;
    }
    std::fs::write(dir.join("Cargo.toml"), manifest(&packages))
        .map_err(|e| format!("cannot write the packages' workspace: {e}"))?;
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock"))
        .map_err(|e| format!("cannot copy Cargo.lock: {e}"))?;
    for (name, _) in &packages {
        crate::step::run(
            &format!("cargo check of package {name}"),
            cargo()
                .current_dir(&dir)
                .args(["check", "--quiet", "-p", name, "--target-dir"])
                .arg(&target),
        )?;
    }
    Ok(())
}

/// The names and versions in cargo's `Packaging NAME vVERSION (PATH)` lines.
fn packaged_names(log: &str) -> Vec<(String, String)> {
    log.lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix("Packaging ")?;
            let mut words = rest.split_whitespace();
            let name = words.next()?;
            let version = words.next()?.strip_prefix('v')?;
            Some((name.to_string(), version.to_string()))
        })
        .collect()
}

/// The manifest of the unpacked packages' workspace: each a member, and each what its
/// siblings get for their dependency on it.
fn manifest(packages: &[(String, String)]) -> String {
    let mut members = String::new();
    let mut patches = String::new();
    for (name, version) in packages {
        members.push_str(&format!("    \"{name}-{version}\",\n"));
        patches.push_str(&format!("{name} = {{ path = \"{name}-{version}\" }}\n"));
    }
    format!(
        "# Written by `cargo xtask package`: the packages, unpacked.\n[workspace]\n\
         resolver = \"3\"\nmembers = [\n{members}]\n\n[patch.crates-io]\n{patches}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_packaged_names_are_read_from_cargos_lines() {
        let log = "   Packaging keyplane-core v0.1.0 (/w/kv-core)\n    Updating crates.io index\n\
                   Packaged 40 files, 300.0KiB (80.0KiB compressed)\n\
                   Packaging keyplane v0.2.3 (/w/kv)\n";
        assert_eq!(
            packaged_names(log),
            [
                ("keyplane-core".to_string(), "0.1.0".to_string()),
                ("keyplane".to_string(), "0.2.3".to_string())
            ]
        );
    }

    #[test]
    fn each_package_is_a_member_and_a_patch() {
        let text = manifest(&[("keyplane-core".into(), "0.1.0".into())]);
        assert!(text.contains("members = [\n    \"keyplane-core-0.1.0\",\n]"));
        assert!(
            text.contains("[patch.crates-io]\nkeyplane-core = { path = \"keyplane-core-0.1.0\" }")
        );
    }
}
