//! Key trees: raw keys drawn as a directory tree, each file annotated with its typed name,
//! the way the tenant document draws its layout.

use std::collections::BTreeMap;

#[derive(Default)]
struct Node {
    children: BTreeMap<String, Node>,
    /// Set on the node where a key ends: the annotation printed beside it.
    leaf: Option<String>,
}

/// Draws `keys` (with their annotations) as a tree. A key is split on `:` when it has no
/// `/` and contains `:`, else on `/`; a leading separator becomes the root `/`.
pub(crate) fn render(keys: &[(String, String)]) -> String {
    let mut root = Node::default();
    for (key, note) in keys {
        let sep = if !key.contains('/') && key.contains(':') {
            ':'
        } else {
            '/'
        };
        let mut node = &mut root;
        let mut parts: Vec<String> = Vec::new();
        let body = match key.strip_prefix(sep) {
            Some(rest) => {
                parts.push(sep.to_string());
                rest
            }
            None => key.as_str(),
        };
        let mut pieces: Vec<&str> = body.split(sep).collect();
        let last = pieces.pop().unwrap_or_default();
        match parts.first_mut() {
            Some(first) if !pieces.is_empty() => {
                first.push_str(pieces.remove(0));
                first.push(sep);
            }
            _ => {}
        }
        parts.extend(pieces.iter().map(|p| format!("{p}{sep}")));
        parts.push(last.to_owned());
        for part in parts {
            node = node.children.entry(part).or_default();
        }
        node.leaf = Some(note.clone());
    }
    let width = width(&root, 0);
    let mut out = String::new();
    draw(&root, "", width, &mut out);
    out
}

/// The widest `indent + name` of the tree, to align the annotations.
fn width(node: &Node, depth: usize) -> usize {
    node.children
        .iter()
        .map(|(name, child)| (depth * 4 + name.chars().count()).max(width(child, depth + 1)))
        .max()
        .unwrap_or(0)
}

fn draw(node: &Node, indent: &str, width: usize, out: &mut String) {
    let count = node.children.len();
    for (i, (name, child)) in node.children.iter().enumerate() {
        let last = i + 1 == count;
        let (branch, next) = if last {
            ("└── ", "    ")
        } else {
            ("├── ", "│   ")
        };
        let line = format!("{indent}{branch}{name}");
        match &child.leaf {
            Some(note) if !note.is_empty() => {
                let pad = (width + 6).saturating_sub(line.chars().count());
                out.push_str(&format!("{line}{}{note}\n", " ".repeat(pad.max(2))));
            }
            _ => out.push_str(&format!("{line}\n")),
        }
        draw(child, &format!("{indent}{next}"), width, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_nested_directories_once() {
        let keys = vec![
            ("jxt/tenants/1/meta".to_owned(), "tenant.meta".to_owned()),
            (
                "jxt/tenants/1/storage".to_owned(),
                "tenant.storage-config".to_owned(),
            ),
            ("/Cronix/lock/x".to_owned(), "cronix.lock".to_owned()),
        ];
        let tree = render(&keys);
        assert_eq!(tree.matches("tenants/").count(), 1, "{tree}");
        assert!(tree.contains("/Cronix/"), "{tree}");
        assert!(
            tree.lines()
                .any(|l| l.contains("meta") && l.ends_with("tenant.meta")),
            "{tree}"
        );
    }
}
