//! Key trees: raw keys drawn as a directory tree, each key annotated with its typed name,
//! the way the tenant document draws its layout.

use std::cmp::Ordering;
use std::collections::BTreeMap;

/// A path segment, ordered by number when both are decimal (`2` before `10`), else by bytes.
#[derive(PartialEq, Eq)]
struct Name(String);

impl Ord for Name {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self.0.parse::<u64>(), other.0.parse::<u64>()) {
            (Ok(a), Ok(b)) => a.cmp(&b).then_with(|| self.0.cmp(&other.0)),
            _ => self.0.cmp(&other.0),
        }
    }
}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[derive(Default)]
struct Node {
    children: BTreeMap<Name, Node>,
    /// Set where a key ends: the annotation printed beside it. A node may be a key and a
    /// directory at once (`key:1` and `key:1:groups`).
    leaf: Option<String>,
    /// The separator its children hang from.
    sep: char,
}

/// Draws `keys` (with their annotations) as a tree. A key is split on `:` when it has no
/// `/` and contains `:`, else on `/`; a leading separator stays on the first segment.
pub(crate) fn render(keys: &[(String, String)]) -> String {
    let mut root = Node::default();
    for (key, note) in keys {
        let sep = if !key.contains('/') && key.contains(':') {
            ':'
        } else {
            '/'
        };
        let (lead, body) = match key.strip_prefix(sep) {
            Some(rest) => (sep.to_string(), rest),
            None => (String::new(), key.as_str()),
        };
        let mut node = &mut root;
        for (i, piece) in body.split(sep).enumerate() {
            let name = if i == 0 {
                format!("{lead}{piece}")
            } else {
                piece.to_owned()
            };
            node.sep = sep;
            node = node.children.entry(Name(name)).or_default();
        }
        node.leaf = Some(note.clone());
    }
    let width = width(&root, 0);
    let mut out = String::new();
    draw(&root, "", width, &mut out);
    out
}

fn label(name: &str, node: &Node) -> String {
    if node.children.is_empty() {
        name.to_owned()
    } else {
        format!("{name}{}", node.sep)
    }
}

/// The widest `indent + label` of the tree, to align the annotations.
fn width(node: &Node, depth: usize) -> usize {
    node.children
        .iter()
        .map(|(name, child)| {
            (depth * 4 + label(&name.0, child).chars().count()).max(width(child, depth + 1))
        })
        .max()
        .unwrap_or(0)
}

fn draw(node: &Node, indent: &str, width: usize, out: &mut String) {
    let count = node.children.len();
    for (i, (name, child)) in node.children.iter().enumerate() {
        let (branch, next) = if i + 1 == count {
            ("└── ", "    ")
        } else {
            ("├── ", "│   ")
        };
        let line = format!("{indent}{branch}{}", label(&name.0, child));
        match &child.leaf {
            Some(note) if !note.is_empty() => {
                let pad = (width + 6).saturating_sub(line.chars().count()).max(2);
                out.push_str(&format!("{line}{}{note}\n", " ".repeat(pad)));
            }
            _ => out.push_str(&format!("{line}\n")),
        }
        draw(child, &format!("{indent}{next}"), width, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, n)| (k.to_string(), n.to_string()))
            .collect()
    }

    #[test]
    fn draws_nested_directories_once() {
        let tree = render(&keys(&[
            ("jxt/tenants/1/meta", "tenant.meta"),
            ("jxt/tenants/1/storage", "tenant.storage-config"),
            ("/Cronix/lock/x", "cronix.lock"),
        ]));
        assert_eq!(tree.matches("tenants/").count(), 1, "{tree}");
        assert!(tree.contains("/Cronix/"), "{tree}");
        assert!(
            tree.lines()
                .any(|l| l.contains("meta") && l.ends_with("tenant.meta")),
            "{tree}"
        );
    }

    #[test]
    fn a_key_that_is_also_a_directory_is_drawn_once_in_numeric_order() {
        let tree = render(&keys(&[
            ("key:10", "ten"),
            ("key:2", "two"),
            ("key:2:groups", "groups of two"),
        ]));
        let lines: Vec<&str> = tree.lines().collect();
        let two = lines
            .iter()
            .position(|l| l.contains("2:") && l.ends_with("two"))
            .expect("2 as key and dir");
        let ten = lines
            .iter()
            .position(|l| l.contains("10") && l.ends_with("ten"))
            .expect("10");
        assert!(two < ten, "{tree}");
        assert!(lines[two + 1].contains("groups"), "{tree}");
    }
}
