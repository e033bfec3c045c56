//! [`Charset`]: a character class such as `[a-zA-Z0-9_]`, for text segments and naming rules.

/// A set of characters written as a regex-like class: `[a-z0-9_-]`, ranges and single
/// characters, `\` escaping the next character, a leading `^` negating. The brackets may be
/// omitted. A `-` first or last is literal.
///
/// ```
/// use keyplane_core::keyspace::Charset;
/// let c = Charset::parse("[a-zA-Z0-9_]").unwrap();
/// assert!(c.contains('Q') && c.contains('_') && !c.contains('-'));
/// assert!(Charset::parse("[z-a]").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charset {
    source: String,
    ascii: u128,
    ranges: Vec<(char, char)>,
    negated: bool,
}

impl Charset {
    /// Parses a character class.
    ///
    /// # Errors
    /// A message for an empty class, a reversed range or a dangling `\`.
    pub fn parse(class: &str) -> Result<Self, String> {
        let inner = class
            .strip_prefix('[')
            .and_then(|c| c.strip_suffix(']'))
            .unwrap_or(class);
        let (negated, inner) = match inner.strip_prefix('^') {
            Some(rest) => (true, rest),
            None => (false, inner),
        };
        let mut tokens: Vec<(char, bool)> = Vec::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                let escaped = chars.next().ok_or("dangling `\\` in character class")?;
                tokens.push((escaped, true));
            } else {
                tokens.push((c, false));
            }
        }
        if tokens.is_empty() {
            return Err("empty character class".into());
        }
        let mut charset = Charset {
            source: class.to_owned(),
            ascii: 0,
            ranges: Vec::new(),
            negated,
        };
        let mut i = 0;
        while i < tokens.len() {
            let start = tokens[i].0;
            if i + 2 < tokens.len() && tokens[i + 1] == ('-', false) {
                let end = tokens[i + 2].0;
                if end < start {
                    return Err(format!("reversed range `{start}-{end}` in character class"));
                }
                charset.add(start, end);
                i += 3;
            } else {
                charset.add(start, start);
                i += 1;
            }
        }
        Ok(charset)
    }

    fn add(&mut self, start: char, end: char) {
        for c in start..=end.min('\u{7f}') {
            self.ascii |= 1u128 << (c as u32);
        }
        if end > '\u{7f}' {
            self.ranges.push((start.max('\u{80}'), end));
        }
    }

    /// Whether `c` is in the set.
    pub fn contains(&self, c: char) -> bool {
        let inside = if c.is_ascii() {
            self.ascii & (1u128 << (c as u32)) != 0
        } else {
            self.ranges.iter().any(|&(a, b)| a <= c && c <= b)
        };
        inside != self.negated
    }

    /// Whether the ASCII byte `b` is in the set (bytes ≥ 0x80 are not ASCII: `false` unless
    /// negated).
    pub fn contains_ascii(&self, b: u8) -> bool {
        if b < 0x80 {
            (self.ascii & (1u128 << b) != 0) != self.negated
        } else {
            self.negated
        }
    }

    /// Some members of the set: every ASCII member, and a few from each non-ASCII range (the
    /// alphabet of generated test values).
    pub fn sample(&self) -> Vec<char> {
        let mut chars: Vec<char> = (0u8..0x80)
            .map(char::from)
            .filter(|&c| self.contains(c))
            .collect();
        let mut extra = vec!['é', 'ÿ', '默', '认', '😀', '\u{10ffff}'];
        for &(a, b) in &self.ranges {
            let mid = char::from_u32((a as u32 + b as u32) / 2).unwrap_or(a);
            extra.extend([a, mid, b]);
        }
        chars.extend(extra.into_iter().filter(|&c| self.contains(c)));
        chars.dedup();
        chars
    }

    /// The class as written.
    pub fn source(&self) -> &str {
        &self.source
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        let c = Charset::parse("[a-z0-9_-]").unwrap();
        assert!(c.contains('a') && c.contains('9') && c.contains('-') && c.contains('_'));
        assert!(!c.contains('A') && !c.contains('/') && !c.contains('é'));
        let n = Charset::parse("[^/]").unwrap();
        assert!(n.contains('a') && n.contains('默') && !n.contains('/'));
        let u = Charset::parse("[\u{4e00}-\u{9fff}a-z]").unwrap();
        assert!(u.contains('默') && u.contains('q') && !u.contains('Q'));
        let e = Charset::parse(r"[\]\\.]").unwrap();
        assert!(e.contains(']') && e.contains('\\') && e.contains('.') && !e.contains('a'));
        assert!(Charset::parse("[]").is_err());
        assert!(Charset::parse("[9-0]").is_err());
        assert!(Charset::parse("a\\").is_err());
    }
}
