//! The layers of keyplane-core, and what the backends may depend on.
//!
//! keyplane-core is built in layers, each on those below it: the contract (re-exported from
//! keyplane-contract at the crate root), the keyspace DSL, the typed facade over it
//! (`keyspace::typed`), the store layers, the recipes, the mirror, the migrations. A module
//! may use its own layer and those below, never one above. A layer is named by a module
//! path; a module belongs to the layer of the longest path it starts with, so a room inside a
//! layer's module may belong to another layer (the typed store's door to the mirror is the
//! mirror's). A backend implements the contract and needs nothing else: its library depends
//! on keyplane-contract and on no other crate of the workspace, so the compiler refuses a
//! backend's use of anything above the contract.

use std::path::{Path, PathBuf};

/// The directory of the crate whose layers are checked.
pub const CORE: &str = "kv-core";

/// keyplane-core's layers above the contract, lowest first, by module path. A module not
/// under any of them is part of the contract (layer 0).
const CORE_LAYERS: [(&str, usize); 8] = [
    ("keyspace", 1),
    ("derive_support", 1),
    ("keyspace::typed", 2),
    ("layer", 3),
    ("recipes", 4),
    ("mirror", 5),
    // `TypedStore::mirror`: kept with the typed store's other methods, it opens a mirror.
    ("keyspace::typed::mirror", 5),
    ("migrate", 6),
];

/// The crates that implement the contract.
const BACKENDS: [&str; 5] = ["kv-mem", "kv-sled", "kv-redb", "kv-etcd", "kv-redis"];

/// The one crate of the workspace a backend's library depends on.
const CONTRACT: &str = "keyplane-contract";

/// The entry of `CORE_LAYERS` a module belongs to: the longest path its own path starts with.
fn layer_entry(path: &[String]) -> Option<&'static (&'static str, usize)> {
    CORE_LAYERS
        .iter()
        .filter(|(name, _)| {
            let parts: Vec<&str> = name.split("::").collect();
            parts.len() <= path.len() && parts.iter().zip(path).all(|(a, b)| *a == b)
        })
        .max_by_key(|(name, _)| name.len())
}

/// The layer of a module of keyplane-core, by its path.
pub fn layer_of(path: &[String]) -> usize {
    layer_entry(path).map_or(0, |(_, layer)| *layer)
}

/// The name of a layer, for messages.
pub fn layer_name(path: &[String]) -> String {
    match layer_entry(path) {
        None => "the contract".into(),
        Some((name, _)) => (*name).into(),
    }
}

/// Whether the crate in `dir` is a backend.
pub fn is_backend(dir: &Path) -> bool {
    dir.file_name()
        .is_some_and(|n| BACKENDS.iter().any(|b| n == *b))
}

/// The workspace crates that a backend's library depends on besides keyplane-contract, when
/// the crate in `dir` is a backend: `(manifest, line, crate)`.
pub fn backend_breaks(dir: &Path) -> Result<Vec<(PathBuf, usize, String)>, String> {
    if !is_backend(dir) {
        return Ok(Vec::new());
    }
    let manifest = dir.join("Cargo.toml");
    let text =
        std::fs::read_to_string(&manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    Ok(workspace_dependencies(&text)
        .into_iter()
        .filter(|(_, name)| name != CONTRACT)
        .map(|(line, name)| (manifest.clone(), line, name))
        .collect())
}

/// The crates of the workspace (`keyplane-*`) that a manifest's `[dependencies]` (and its
/// target-specific dependencies) name, with their lines; dev- and build-dependencies aside.
fn workspace_dependencies(manifest: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_dependencies = false;
    for (index, line) in manifest.lines().enumerate() {
        let line = line.trim();
        if line.starts_with('[') {
            let section = line.trim_matches(['[', ']']);
            in_dependencies = section == "dependencies" || section.ends_with(".dependencies");
            continue;
        }
        if !in_dependencies {
            continue;
        }
        let name: String = line
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        if name.starts_with("keyplane") {
            out.push((index + 1, name));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backend_depends_on_the_contract_alone() {
        let manifest = "[package]\nname = \"keyplane-mem\"\n\n[dependencies]\n\
                        keyplane-contract.workspace = true\nkeyplane-core = { path = \"x\" }\n\
                        serde = \"1\"\n\n[target.'cfg(unix)'.dependencies]\nkeyplane-schemas = \"1\"\n\n\
                        [dev-dependencies]\nkeyplane-core.workspace = true\n";
        let named: Vec<String> = workspace_dependencies(manifest)
            .into_iter()
            .map(|(_, name)| name)
            .filter(|name| name != CONTRACT)
            .collect();
        assert_eq!(named, ["keyplane-core", "keyplane-schemas"]);
    }

    #[test]
    fn layers_by_top_module() {
        let path = |p: &str| p.split("::").map(String::from).collect::<Vec<_>>();
        assert_eq!(layer_of(&path("store")), 0);
        assert_eq!(layer_of(&path("raw::emulation")), 0);
        assert_eq!(layer_of(&path("keyspace::key")), 1);
        assert_eq!(layer_of(&path("keyspace::segment::text")), 1);
        assert!(layer_of(&path("keyspace::typed::txn")) > layer_of(&path("keyspace::key")));
        assert!(layer_of(&path("keyspace::typed::txn")) < layer_of(&path("mirror::builder")));
        assert_eq!(
            layer_of(&path("keyspace::typed::mirror")),
            layer_of(&path("mirror::builder"))
        );
        assert_eq!(
            layer_name(&path("keyspace::typed::watch")),
            "keyspace::typed"
        );
        assert_eq!(layer_name(&path("keyspace_x")), "the contract");
        assert_eq!(layer_of(&path("mirror::task")), 5);
        assert!(layer_of(&path("migrate::apply")) > layer_of(&path("recipes::lock")));
    }
}
