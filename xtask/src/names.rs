//! `cargo xtask names`: every public item of the `keyplane` facade on one path.
//!
//! The facade mirrors keyplane-core's layout (the contract at the root, each layer in its
//! module) and adds the backends as modules. A name re-exported twice (at the root and in its
//! module, or from a backend crate that re-exports a core item) gives users two spellings of
//! one thing. rustdoc's `all.html` lists every item the facade documents by the path users
//! write, so the facade is documented with every feature and the list checked: one path per
//! item kind and name.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Documents the facade with every feature into `target_dir` and fails when an item is on
/// two paths.
pub(crate) fn run(mut cargo: Command, target_dir: &Path) -> Result<(), String> {
    crate::step::run(
        "cargo doc -p keyplane --all-features",
        cargo
            .args([
                "doc",
                "-p",
                "keyplane",
                "--no-deps",
                "--all-features",
                "--quiet",
            ])
            .arg("--target-dir")
            .arg(target_dir),
    )?;
    let all = target_dir.join("doc/keyplane/all.html");
    let html = std::fs::read_to_string(&all)
        .map_err(|e| format!("names: cannot read {}: {e}", all.display()))?;
    let paths = item_paths(&html);
    if paths.len() < 50 {
        return Err(format!(
            "names: {} lists only {} items: has rustdoc's page changed?",
            all.display(),
            paths.len()
        ));
    }
    let twice = duplicates(&paths);
    if twice.is_empty() {
        println!("names: {} items of keyplane, each on one path", paths.len());
        return Ok(());
    }
    let lines: Vec<String> = twice
        .iter()
        .map(|(item, at)| format!("  {item}: {}", at.join(", ")))
        .collect();
    Err(format!(
        "names: {} items of keyplane are on more than one path:\n{}",
        twice.len(),
        lines.join("\n")
    ))
}

/// The items `all.html` links to, as paths such as `mirror::struct.Mirror`.
fn item_paths(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .filter(|href| href.ends_with(".html") && !href.contains("://") && *href != "all.html")
        .filter(|href| !href.starts_with("..") && !href.ends_with("index.html"))
        .map(|href| href.trim_end_matches(".html").replace('/', "::"))
        .collect()
}

/// Distinct items that share a name on purpose: each embedded backend's own `Durability`
/// (their variants differ), in the backend modules `redb` and `sled`.
const DISTINCT: [(&str, &[&str]); 1] =
    [("enum.Durability", &["redb::Durability", "sled::Durability"])];

/// Items (`kind.Name`: a trait and its derive macro are two) found at more than one path,
/// but for the [`DISTINCT`] ones.
fn duplicates(paths: &[String]) -> Vec<(String, Vec<String>)> {
    let mut by_item: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for path in paths {
        let (module, item) = path.rsplit_once("::").unwrap_or(("", path));
        let module = if module.is_empty() {
            "keyplane"
        } else {
            module
        };
        by_item.entry(item).or_default().push(format!(
            "{module}::{}",
            item.split_once('.').map_or(item, |(_, n)| n)
        ));
    }
    by_item
        .into_iter()
        .map(|(item, mut at)| {
            at.sort();
            at.dedup();
            (item.to_owned(), at)
        })
        .filter(|(_, at)| at.len() > 1)
        .filter(|(item, at)| !DISTINCT.iter().any(|(i, paths)| i == item && at == paths))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r##"<a href="struct.Txn.html">Txn</a><a href="mirror/struct.Mirror.html">
        mirror::Mirror</a><a href="trait.Key.html">Key</a><a href="derive.Key.html">Key</a>
        <a href="#macros">Macros</a><a href="https://example.org/x.html">x</a>"##;

    #[test]
    fn a_trait_and_its_derive_are_two_items() {
        let paths = item_paths(PAGE);
        assert_eq!(
            paths,
            [
                "struct.Txn",
                "mirror::struct.Mirror",
                "trait.Key",
                "derive.Key"
            ]
        );
        assert!(duplicates(&paths).is_empty());
    }

    #[test]
    fn the_backends_own_durabilities_are_two_items_but_a_third_path_is_found() {
        let page =
            r#"<a href="redb/enum.Durability.html">D</a><a href="sled/enum.Durability.html">D</a>"#;
        assert!(duplicates(&item_paths(page)).is_empty());
        let page = format!(r#"{page}<a href="enum.Durability.html">D</a>"#);
        assert_eq!(duplicates(&item_paths(&page)).len(), 1);
    }

    #[test]
    fn an_item_at_the_root_and_in_its_module_is_found() {
        let page = format!(r#"{PAGE}<a href="struct.Mirror.html">Mirror</a>"#);
        let twice = duplicates(&item_paths(&page));
        assert_eq!(
            twice,
            [(
                "struct.Mirror".to_owned(),
                vec!["keyplane::Mirror".to_owned(), "mirror::Mirror".to_owned()]
            )]
        );
    }
}
