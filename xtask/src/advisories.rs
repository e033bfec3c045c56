//! The default dependency graph of `keyplane` carries no crate with a RustSec advisory: a team
//! that adds `keyplane` with its defaults and runs `cargo deny` or `cargo audit` gets no report
//! against it.
//!
//! The check reads the resolved graph (`cargo tree`, no build, no network) and refuses the
//! crates the RustSec database lists that the workspace has carried or could pull in, sled
//! 0.34's among them; the `sled` feature, not a default, still brings those.

use std::process::Command;

/// Crates with a RustSec advisory (most "unmaintained"), with the advisory's id.
const ADVISED: [(&str, &str); 8] = [
    ("fxhash", "RUSTSEC-2025-0057"),
    ("instant", "RUSTSEC-2024-0384"),
    ("atty", "RUSTSEC-2024-0375"),
    ("paste", "RUSTSEC-2024-0436"),
    ("proc-macro-error", "RUSTSEC-2024-0370"),
    ("derivative", "RUSTSEC-2024-0388"),
    ("ansi_term", "RUSTSEC-2021-0139"),
    ("yaml-rust", "RUSTSEC-2024-0320"),
];

/// Fails when `keyplane`'s default features resolve to a crate of [`ADVISED`].
pub(crate) fn run(mut cargo: Command) -> Result<(), String> {
    let out = cargo
        .args([
            "tree",
            "-p",
            "keyplane",
            "-e",
            "normal,build",
            "--prefix",
            "none",
        ])
        .args(["--format", "{p}"])
        .output()
        .map_err(|e| format!("advisories: cannot run cargo tree: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "advisories: cargo tree failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let graph = String::from_utf8_lossy(&out.stdout);
    let found = advised(&graph);
    if found.is_empty() {
        println!(
            "advisories: keyplane's default graph has none of the {} advised crates",
            ADVISED.len()
        );
        return Ok(());
    }
    Err(format!(
        "advisories: keyplane's default features pull in {}",
        found.join(", ")
    ))
}

/// The advised crates among the lines (`name vX.Y.Z ...`) of a `cargo tree` listing.
fn advised(graph: &str) -> Vec<String> {
    let mut found: Vec<String> = graph
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter_map(|name| ADVISED.iter().find(|(crate_name, _)| *crate_name == name))
        .map(|(name, id)| format!("{name} ({id})"))
        .collect();
    found.sort();
    found.dedup();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_advised_crate_is_named_once() {
        let graph = "keyplane v0.1.0 (/w/kv)\nsled v0.34.7\nfxhash v0.2.1\nfxhash v0.2.1\n\
                     instant v0.1.13\nredb v4.6.0\n";
        assert_eq!(
            advised(graph),
            ["fxhash (RUSTSEC-2025-0057)", "instant (RUSTSEC-2024-0384)"]
        );
        assert!(advised("keyplane v0.1.0\nredb v4.6.0\nfxhashmap v1\n").is_empty());
    }
}
