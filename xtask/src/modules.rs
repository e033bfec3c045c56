//! `cargo xtask modules`: the module graph of every crate of the workspace, from its source.
//!
//! A module depends on another when its code names an item of the other: a `use` of it, or a
//! path through it (`crate::a::b::f()`, `super::X`, `child::Y`). A re-export (`pub use`,
//! `pub(crate) use`) is no dependency of its own: paths are resolved through it, so naming
//! `crate::Error` is a dependency on the module that defines `Error`, not on the crate root
//! that re-exports it.
//! Comments, strings and `#[cfg(test)]` modules are left out: tests may reach anywhere.
//!
//! The command prints each crate's import circles (the modules of each strongly connected
//! component of the graph, with one edge of each dependency and the line naming it) and its
//! files of more than 500 lines of code (lines that are neither blank nor comments nor in
//! tests). It also checks keyplane-core's layers (a module uses only its own layer and
//! those below) and that each backend's library depends on keyplane-contract and on no other
//! crate of the workspace (see `modules/layers.rs`), that no backend re-checks a request the
//! contract's front checked (`modules/front.rs`), and it reports a hand-written backoff loop,
//! a `sleep` on a policy's `.delay(..)` outside the policy (see `modules/backoff.rs`). With
//! `--check` it fails when it finds any of these.

mod backoff;
mod front;
mod layers;
mod source;

use source::{Module, parse, strip};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Lines of code above which a file is reported.
const MAX_CODE_LINES: usize = 500;

/// A crate: its name and its modules by path (`[]` is the root).
struct Crate {
    name: String,
    modules: BTreeMap<Vec<String>, Module>,
}

/// What the command found.
pub struct Findings {
    pub circles: usize,
    pub large_files: usize,
    pub layer_breaks: usize,
    pub backoff_loops: usize,
}

pub fn run(root: &Path, check: bool) -> Result<(), String> {
    let mut findings = Findings {
        circles: 0,
        large_files: 0,
        layer_breaks: 0,
        backoff_loops: 0,
    };
    for dir in crate_dirs(root)? {
        let krate = load(&dir)?;
        let core = dir.file_name().is_some_and(|n| n == layers::CORE);
        report(root, &krate, core, &mut findings);
        for (file, line, name) in layers::backend_breaks(&dir)? {
            findings.layer_breaks += 1;
            let file = file.strip_prefix(root).unwrap_or(&file);
            println!(
                "{}:{line}: a backend depends on {name}: its library depends on \
                 keyplane-contract alone",
                file.display()
            );
        }
        if layers::is_backend(&dir) {
            for (file, line, call) in front::backend_rechecks(&dir.join("src"))? {
                findings.layer_breaks += 1;
                let file = file.strip_prefix(root).unwrap_or(&file);
                println!(
                    "{}:{line}: a backend calls `{call}`: the contract's front checked the \
                     request already (keyplane_contract::driver)",
                    file.display()
                );
            }
        }
    }
    for (file, line) in backoff::loops(root)? {
        findings.backoff_loops += 1;
        let file = file.strip_prefix(root).unwrap_or(&file);
        println!(
            "{}:{line}: a hand-written backoff loop sleeps on a policy's delay: retry through \
             keyplane_contract::retry::Attempts (or retry/retry_if)",
            file.display()
        );
    }
    println!(
        "modules: {} import circles, {} files over {MAX_CODE_LINES} lines of code, {} layer \
         breaks, {} hand-written backoff loops",
        findings.circles, findings.large_files, findings.layer_breaks, findings.backoff_loops
    );
    if check
        && (findings.circles > 0
            || findings.large_files > 0
            || findings.layer_breaks > 0
            || findings.backoff_loops > 0)
    {
        return Err("modules: circles, large files, layer breaks or backoff loops found".into());
    }
    Ok(())
}

/// The directories of the workspace's crates (each with a `Cargo.toml` and a `src/lib.rs` or
/// `src/main.rs`), the workspace root's own `src` aside.
fn crate_dirs(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if !path.is_dir() || name.starts_with('.') || name == "target" || name == "outside" {
                continue;
            }
            if path.join("Cargo.toml").is_file()
                && (path.join("src/lib.rs").is_file() || path.join("src/main.rs").is_file())
            {
                out.push(path.clone());
            }
            if name != "src" {
                stack.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn load(dir: &Path) -> Result<Crate, String> {
    let name = dir
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let root_file = ["src/lib.rs", "src/main.rs"]
        .iter()
        .map(|f| dir.join(f))
        .find(|f| f.is_file())
        .ok_or_else(|| format!("{}: no lib.rs or main.rs", dir.display()))?;
    let mut modules = BTreeMap::new();
    let mut queue = vec![(Vec::new(), root_file, true)];
    while let Some((path, file, owns_dir)) = queue.pop() {
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let code = strip(&text);
        let module = parse(&path, &code, &file);
        let base = if owns_dir {
            file.parent().map(Path::to_path_buf).unwrap_or_default()
        } else {
            file.with_extension("")
        };
        for child in &module.children {
            let mut child_path = path.clone();
            child_path.push(child.clone());
            let flat = base.join(format!("{child}.rs"));
            let nested = base.join(child).join("mod.rs");
            if flat.is_file() {
                queue.push((child_path, flat, false));
            } else if nested.is_file() {
                queue.push((child_path, nested, true));
            }
        }
        modules.insert(path, module);
    }
    Ok(Crate { name, modules })
}

/// The module an absolute path's item lives in: the deepest module along the path, then
/// through that module's re-exports.
fn resolve(krate: &Crate, abs: &[String], depth: usize) -> Vec<String> {
    let mut module: Vec<String> = Vec::new();
    let mut k = 0;
    while k < abs.len() {
        let mut next = module.clone();
        next.push(abs[k].clone());
        if krate.modules.contains_key(&next) {
            module = next;
            k += 1;
        } else {
            break;
        }
    }
    if depth > 8 || k == abs.len() {
        return module;
    }
    let Some(m) = krate.modules.get(&module) else {
        return module;
    };
    let name = &abs[k];
    if m.defines.contains(name) {
        return module;
    }
    if let Some(target) = m.aliases.get(name) {
        return resolve(krate, target, depth + 1);
    }
    for glob in &m.globs {
        let mut target = glob.clone();
        target.push(name.clone());
        let found = resolve(krate, &target, depth + 1);
        if krate
            .modules
            .get(&found)
            .is_some_and(|f| f.defines.contains(name) || f.aliases.contains_key(name))
        {
            return found;
        }
    }
    module
}

fn show(path: &[String]) -> String {
    if path.is_empty() {
        "(root)".into()
    } else {
        path.join("::")
    }
}

fn report(root: &Path, krate: &Crate, core: bool, findings: &mut Findings) {
    // Edges, with the first line that makes each.
    let mut edges: BTreeMap<Vec<String>, BTreeMap<Vec<String>, usize>> = BTreeMap::new();
    for (from, m) in &krate.modules {
        for (abs, line) in &m.paths {
            let to = resolve(krate, abs, 0);
            if &to != from {
                edges
                    .entry(from.clone())
                    .or_default()
                    .entry(to)
                    .or_insert(*line);
            }
        }
    }
    if core {
        for (from, tos) in &edges {
            for (to, line) in tos {
                if layers::layer_of(to) > layers::layer_of(from) {
                    findings.layer_breaks += 1;
                    let file = &krate.modules[from].file;
                    println!(
                        "{}: {} ({}) uses {} ({}), a layer above it  ({}:{line})",
                        krate.name,
                        show(from),
                        layers::layer_name(from),
                        show(to),
                        layers::layer_name(to),
                        file.strip_prefix(root).unwrap_or(file).display()
                    );
                }
            }
        }
    }
    for component in components(krate, &edges) {
        findings.circles += 1;
        println!("{}: import circle:", krate.name);
        for from in &component {
            for (to, line) in edges.get(from).into_iter().flatten() {
                if component.contains(to) {
                    let file = krate.modules[from]
                        .file
                        .strip_prefix(root)
                        .unwrap_or(&krate.modules[from].file);
                    println!(
                        "  {} -> {}  ({}:{line})",
                        show(from),
                        show(to),
                        file.display()
                    );
                }
            }
        }
    }
    for m in krate.modules.values() {
        if m.code_lines > MAX_CODE_LINES {
            findings.large_files += 1;
            let file = m.file.strip_prefix(root).unwrap_or(&m.file);
            println!(
                "{}: {} has {} lines of code",
                krate.name,
                file.display(),
                m.code_lines
            );
        }
    }
}

/// The strongly connected components of more than one module (Tarjan's algorithm).
fn components(
    krate: &Crate,
    edges: &BTreeMap<Vec<String>, BTreeMap<Vec<String>, usize>>,
) -> Vec<BTreeSet<Vec<String>>> {
    struct State<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeMap<Vec<String>, usize>>,
        index: BTreeMap<Vec<String>, usize>,
        low: BTreeMap<Vec<String>, usize>,
        stack: Vec<Vec<String>>,
        on_stack: BTreeSet<Vec<String>>,
        next: usize,
        out: Vec<BTreeSet<Vec<String>>>,
    }
    fn visit(s: &mut State<'_>, v: &Vec<String>) {
        s.index.insert(v.clone(), s.next);
        s.low.insert(v.clone(), s.next);
        s.next += 1;
        s.stack.push(v.clone());
        s.on_stack.insert(v.clone());
        let targets: Vec<Vec<String>> = s
            .edges
            .get(v)
            .map(|t| t.keys().cloned().collect())
            .unwrap_or_default();
        for w in targets {
            if !s.index.contains_key(&w) {
                visit(s, &w);
                let low = s.low[v].min(s.low[&w]);
                s.low.insert(v.clone(), low);
            } else if s.on_stack.contains(&w) {
                let low = s.low[v].min(s.index[&w]);
                s.low.insert(v.clone(), low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = BTreeSet::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(&w);
                let done = &w == v;
                component.insert(w);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in krate.modules.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A crate of `files` (path under `src/`, text) in a directory of its own.
    fn krate(name: &str, files: &[(&str, &str)]) -> Crate {
        let dir = std::env::temp_dir().join(format!("xtask-modules-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in files {
            let file = dir.join("src").join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
        let krate = load(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        krate
    }

    fn circles(krate: &Crate) -> Vec<Vec<String>> {
        let mut edges: BTreeMap<Vec<String>, BTreeMap<Vec<String>, usize>> = BTreeMap::new();
        for (from, m) in &krate.modules {
            for (abs, line) in &m.paths {
                let to = resolve(krate, abs, 0);
                if &to != from {
                    edges.entry(from.clone()).or_default().insert(to, *line);
                }
            }
        }
        components(krate, &edges)
            .into_iter()
            .map(|c| c.into_iter().map(|p| show(&p)).collect())
            .collect()
    }

    #[test]
    fn two_modules_naming_each_others_items_are_a_circle() {
        let k = krate(
            "circle",
            &[
                ("lib.rs", "mod a;\nmod b;\n"),
                ("a.rs", "use crate::b::B;\npub struct A(B);\n"),
                (
                    "b.rs",
                    "pub struct B;\npub fn f() -> crate::a::A { todo() }\n",
                ),
            ],
        );
        assert_eq!(circles(&k), vec![vec!["a".to_string(), "b".to_string()]]);
    }

    #[test]
    fn re_exports_comments_strings_and_tests_make_no_dependency() {
        let k = krate(
            "reexport",
            &[
                // The root re-exports `B`; `b` names it through the root: a dependency of `b`
                // on nothing but itself, and none of the root on `b`.
                ("lib.rs", "mod a;\nmod b;\npub use b::B;\npub use a::*;\n"),
                (
                    "a.rs",
                    "// crate::b::B in a comment\nconst S: &str = \"crate::b::B\";\n\
                     pub struct A;\n#[cfg(test)]\nmod tests { use crate::b::B; }\n",
                ),
                (
                    "b.rs",
                    "pub struct B;\nfn g() -> crate::A { crate::a::A }\nfn h(_: crate::B) {}\n",
                ),
            ],
        );
        assert!(circles(&k).is_empty());
        let b = &k.modules[&vec!["b".to_string()]];
        let targets: BTreeSet<Vec<String>> =
            b.paths.iter().map(|(abs, _)| resolve(&k, abs, 0)).collect();
        // `crate::A` resolves through the glob re-export to `a`; `crate::B` to `b` itself.
        assert_eq!(
            targets,
            BTreeSet::from([vec!["a".to_string()], vec!["b".to_string()]])
        );
        assert!(k.modules[&vec!["a".to_string()]].paths.is_empty());
    }

    #[test]
    fn a_child_and_a_parent_naming_each_other_are_a_circle() {
        let k = krate(
            "parent",
            &[
                ("lib.rs", "mod p;\n"),
                ("p/mod.rs", "mod c;\npub struct P;\nfn f() { c::g() }\n"),
                ("p/c.rs", "pub fn g() { let _ = super::P; }\n"),
            ],
        );
        assert_eq!(circles(&k), vec![vec!["p".to_string(), "p::c".to_string()]]);
    }
}
