//! The layers of keyplane-core, and what the backends may name of it.
//!
//! keyplane-core is built in layers, each on those below it: the contract (the crate root's
//! own modules, with `raw` for implementors and `retry`), the keyspace DSL, the typed facade
//! over it (`keyspace::typed`), the store layers, the recipes, the mirror, the migrations.
//! A module may use its own layer and those below, never one above. A layer is named by a
//! module path; a module belongs to the layer of the longest path it starts with, so a room
//! inside a layer's module may belong to another layer (the typed store's door to the mirror
//! is the mirror's). A backend implements the contract and needs nothing else:
//! its code names only the root's items, `raw`, `retry` and `tls` (the TLS configuration
//! the network backends share).

use super::source::strip;
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
const BACKENDS: [&str; 4] = ["kv-mem", "kv-sled", "kv-etcd", "kv-redis"];

/// The modules of keyplane-core a backend may name, besides the root's items.
const FOR_IMPLEMENTORS: [&str; 3] = ["raw", "retry", "tls"];

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

/// Every place the modules of the crate in `dir` name a module of keyplane-core a backend
/// should not need, when the crate is a backend (tests left out): `(file, line, module)`.
pub fn backend_breaks<'a>(
    dir: &Path,
    files: impl IntoIterator<Item = &'a Path>,
) -> Result<Vec<(PathBuf, usize, String)>, String> {
    let mut out = Vec::new();
    if !dir
        .file_name()
        .is_some_and(|n| BACKENDS.iter().any(|b| n == *b))
    {
        return Ok(out);
    }
    for file in files {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        for (line, module) in core_modules_named(&strip(&text)) {
            if !FOR_IMPLEMENTORS.contains(&module.as_str()) {
                out.push((file.to_path_buf(), line, module));
            }
        }
    }
    Ok(out)
}

/// The modules of keyplane-core that `code` names (`keyplane_core::m::…`, or `m::…` inside
/// `keyplane_core::{…}`), with their lines.
fn core_modules_named(code: &str) -> Vec<(usize, String)> {
    const CRATE: &str = "keyplane_core::";
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find(CRATE) {
        let at = from + found + CRATE.len();
        from = at;
        let line = code[..at].matches('\n').count() + 1;
        let rest = &code[at..];
        let items: Vec<&str> = match rest.strip_prefix('{') {
            Some(group) => top_level_items(group),
            None => vec![rest],
        };
        for item in items {
            let item = item.trim_start();
            let name: String = item
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let is_module = name.starts_with(|c: char| c.is_ascii_lowercase())
                && item[name.len()..].trim_start().starts_with("::");
            if is_module {
                out.push((line, name));
            }
        }
    }
    out
}

/// The items of a `{…}` group (its text after the `{`), split at its top-level commas.
fn top_level_items(group: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                out.push(&group[start..i]);
                return out;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_named_directly_and_in_groups() {
        let code = "use keyplane_core::{Error, raw::validate_key, keyspace::{Key, Text}};\n\
                    fn f() { keyplane_core::mirror::Mirror::new(); keyplane_core::Store; }\n";
        assert_eq!(
            core_modules_named(code),
            vec![
                (1, "raw".to_string()),
                (1, "keyspace".to_string()),
                (2, "mirror".to_string())
            ]
        );
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
