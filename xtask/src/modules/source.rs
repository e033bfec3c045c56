//! Reading one module's source: comments, literals and tests left out; the modules it
//! declares, the names it defines, its re-exports and the paths its code names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One module: its file, the names it defines, its re-exports and the paths its code names.
#[derive(Default)]
pub struct Module {
    pub file: PathBuf,
    pub children: BTreeSet<String>,
    pub defines: BTreeSet<String>,
    /// `pub use a::b::C as D;`: D → the absolute path of C.
    pub aliases: BTreeMap<String, Vec<String>>,
    /// `pub use a::b::*;`: the absolute paths of the modules whose items it re-exports.
    pub globs: Vec<Vec<String>>,
    /// Every path the code names, made absolute, with its line.
    pub paths: Vec<(Vec<String>, usize)>,
    pub code_lines: usize,
}

/// The text with comments, string and character literals blanked out (line breaks kept),
/// and `#[cfg(test)]` items removed.
pub fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if b[i] == b'\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
        } else if c == b'r' && matches!(b.get(i + 1), Some(b'"' | b'#')) && !ident_before(b, i) {
            let mut hashes = 0;
            let mut j = i + 1;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push('r');
                i += 1;
                continue;
            }
            j += 1;
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            while j < b.len() && !b[j..].starts_with(&close) {
                if b[j] == b'\n' {
                    out.push('\n');
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j + close.len();
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                if b.get(i) == Some(&b'\n') {
                    out.push('\n');
                }
                i += 1;
            }
            out.push_str("\"\"");
            i += 1;
        } else if c == b'\'' {
            // A character literal ('x', '\n', '\u{..}'), not a lifetime.
            let end = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..]
                    .iter()
                    .position(|&x| x == b'\'')
                    .map(|p| i + 2 + p)
            } else if b.get(i + 2) == Some(&b'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    out.push_str("' '");
                    i = end + 1;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            out.push(c as char);
            i += 1;
        }
    }
    remove_test_items(&out)
}

fn ident_before(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// Blanks the items that follow `#[cfg(test)]` (up to their closing brace or semicolon).
fn remove_test_items(code: &str) -> String {
    let mut out = code.to_string();
    while let Some(at) = out.find("#[cfg(test)]") {
        let bytes = out.as_bytes();
        let mut i = at;
        let mut depth = 0;
        let mut end = bytes.len();
        while i < bytes.len() {
            match bytes[i] {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        let blank: String = out[at..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(at..end, &blank);
    }
    out
}

/// The words of an identifier-or-`::`-path starting at byte `i`, and where it ends.
fn path_at(b: &[u8], mut i: usize) -> (Vec<String>, usize) {
    let mut words = Vec::new();
    loop {
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        if i == start {
            break;
        }
        words.push(String::from_utf8_lossy(&b[start..i]).into_owned());
        if b[i..].starts_with(b"::")
            && b.get(i + 2)
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        {
            i += 2;
        } else {
            break;
        }
    }
    (words, i)
}

fn line_of(code: &str, at: usize) -> usize {
    code[..at].bytes().filter(|&c| c == b'\n').count() + 1
}

const KEYWORDS: &[&str] = &[
    "fn", "struct", "enum", "trait", "type", "const", "static", "union",
];

pub fn parse(path: &[String], code: &str, file: &Path) -> Module {
    let mut m = Module {
        file: file.to_path_buf(),
        code_lines: code.lines().filter(|l| !l.trim().is_empty()).count(),
        ..Module::default()
    };
    let b = code.as_bytes();
    // Definitions and child modules.
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_alphabetic() || ident_before(b, i) {
            i += 1;
            continue;
        }
        let (words, end) = path_at(b, i);
        if words.len() == 1 {
            let word = words[0].as_str();
            let mut start = skip_ws(b, end);
            if word == "macro_rules" && b.get(start) == Some(&b'!') {
                start = skip_ws(b, start + 1);
            }
            let (next, after) = path_at(b, start);
            if let Some(name) = next.first() {
                if word == "mod" && next.len() == 1 {
                    let rest = skip_ws(b, after);
                    if b.get(rest) == Some(&b';') {
                        m.children.insert(name.clone());
                    } else {
                        m.defines.insert(name.clone());
                    }
                } else if (KEYWORDS.contains(&word) && next.len() == 1) || word == "macro_rules" {
                    m.defines.insert(name.clone());
                }
            }
        }
        i = end.max(i + 1);
    }
    // `use` declarations, blanked out of `rest` once read.
    let mut rest = code.to_string();
    let mut i = 0;
    while let Some(at) = code[i..].find("use ").map(|p| p + i) {
        i = at + 4;
        if ident_before(b, at) {
            continue;
        }
        let Some(semi) = code[at..].find(';').map(|p| p + at) else {
            break;
        };
        let tree = &code[at + 4..semi];
        let public = code[..at].trim_end().ends_with(')') || code[..at].trim_end().ends_with("pub");
        for (segments, alias, glob) in expand_use(tree) {
            let Some(abs) = absolute(path, &segments, &m.children) else {
                continue;
            };
            // A re-export names an item for others: it makes no dependency of its own.
            if !public {
                m.paths.push((abs, line_of(code, at)));
            } else if glob {
                m.globs.push(abs);
            } else if let Some(last) = alias.or_else(|| abs.last().cloned()) {
                m.aliases.insert(last, abs);
            }
        }
        let blank: String = code[at..=semi]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        rest.replace_range(at..=semi, &blank);
        i = semi;
    }
    // Paths in code: `crate::…`, `super::…`, `self::…`, `child::…`.
    let code = rest.as_str();
    let b = code.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !(b[i].is_ascii_alphabetic() || b[i] == b'_')
            || ident_before(b, i)
            || (i > 1 && &b[i - 2..i] == b"::")
        {
            i += 1;
            continue;
        }
        let (words, end) = path_at(b, i);
        if words.len() > 1 {
            let first = words[0].as_str();
            if (matches!(first, "crate" | "super" | "self") || m.children.contains(first))
                && let Some(abs) = absolute(path, &words, &m.children)
            {
                m.paths.push((abs, line_of(code, i)));
            }
        }
        i = end.max(i + 1);
    }
    m
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The paths of a `use` tree: segments, the `as` name, and whether it ends in `*`.
fn expand_use(tree: &str) -> Vec<(Vec<String>, Option<String>, bool)> {
    fn walk(prefix: &[String], tree: &str, out: &mut Vec<(Vec<String>, Option<String>, bool)>) {
        let tree = tree.trim();
        if let Some(open) = tree.find('{') {
            let head: Vec<String> = tree[..open]
                .split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            let mut p = prefix.to_vec();
            p.extend(head);
            let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
            let mut depth = 0;
            let mut start = 0;
            for (k, ch) in inner.char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        walk(&p, &inner[start..k], out);
                        start = k + 1;
                    }
                    _ => {}
                }
            }
            walk(&p, &inner[start..], out);
            return;
        }
        if tree.is_empty() {
            return;
        }
        let (path, alias) = match tree.split_once(" as ") {
            Some((p, a)) => (p.trim(), Some(a.trim().to_string())),
            None => (tree, None),
        };
        let mut p = prefix.to_vec();
        let mut glob = false;
        for seg in path.split("::").map(str::trim).filter(|s| !s.is_empty()) {
            if seg == "*" {
                glob = true;
            } else if seg != "self" || p.is_empty() {
                p.push(seg.to_string());
            }
        }
        out.push((p, alias, glob));
    }
    let mut out = Vec::new();
    walk(&[], tree, &mut out);
    out
}

/// `segments` made absolute from module `path` (crate-relative, without `crate`), or `None`
/// for a path into another crate.
fn absolute(
    path: &[String],
    segments: &[String],
    children: &BTreeSet<String>,
) -> Option<Vec<String>> {
    let first = segments.first()?.as_str();
    let mut out: Vec<String> = match first {
        "crate" => Vec::new(),
        "self" => path.to_vec(),
        "super" => path[..path.len().saturating_sub(1)].to_vec(),
        name if children.contains(name) => {
            let mut p = path.to_vec();
            p.push(name.to_string());
            p.extend(segments[1..].iter().cloned());
            return Some(p);
        }
        _ => return None,
    };
    let mut rest = &segments[1..];
    while rest.first().is_some_and(|s| s == "super") {
        out.pop();
        rest = &rest[1..];
    }
    out.extend(rest.iter().cloned());
    Some(out)
}
