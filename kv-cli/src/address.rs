//! Addresses on the command line: a raw key (`jxt/tenants/1/meta`), or a typed address, a
//! template by `schema.name` followed by `field=value` pairs (`tenant.meta id=1`).
//!
//! A typed field value is taken as its segment encoding when the segment accepts it, and
//! otherwise percent-escaped (so `name=默认租户` works for escaped text segments) or, for a
//! zero-padded segment, padded (`sku=42` is `000042`); anything else is refused with the
//! segment's rule. A typed address names a full key when every
//! field is given; as a directory (`ls`, `watch`, `rm --prefix`) it stops before the first
//! missing field, or after the last field when all are given: `tenant.meta id=1` is the
//! directory `jxt/tenants/1/`, which holds tenant 1 and never tenant 10.

use crate::catalog::{self, Entry};
use crate::error::{CliError, CliResult};
use keyplane::keyspace::{Part, SegmentSpec, escape_into};
use std::collections::BTreeMap;

/// A parsed address.
pub(crate) enum Address {
    /// A raw key or prefix, used as given.
    Raw(String),
    /// A template and some of its fields.
    Typed {
        entry: Box<Entry>,
        fields: BTreeMap<String, String>,
    },
}

impl Address {
    /// Parses the address words: one raw key, or `schema.name` and `field=value` pairs.
    ///
    /// # Errors
    /// Exit code 2 for an unknown template or field, or a malformed pair.
    pub(crate) fn parse(words: &[String]) -> CliResult<Self> {
        let Some((first, rest)) = words.split_first() else {
            return Err(CliError::invalid(
                "missing key: give a raw key or `schema.template field=value...`",
            ));
        };
        let typed = first.split_once('.').filter(|(s, n)| {
            !n.is_empty() && crate::catalog::find(s).is_some() && !n.contains(['/', ':'])
        });
        let Some((schema, name)) = typed else {
            if !rest.is_empty() {
                // `field=value` pairs after it: meant as a typed address, with a typo?
                let hint = first
                    .split_once('.')
                    .filter(|(_, n)| !n.is_empty() && !n.contains(['/', ':']))
                    .and_then(|(s, _)| {
                        let names: Vec<&str> =
                            crate::catalog::every().iter().map(|s| s.name).collect();
                        closest(s, names.iter().copied())
                            .map(|c| format!("; no schema is named {s:?}: did you mean {c:?}?"))
                    })
                    .unwrap_or_default();
                return Err(CliError::invalid(format!(
                    "unexpected arguments after raw key {first:?}: {}{hint}",
                    rest.join(" ")
                )));
            }
            return Ok(Address::Raw(first.clone()));
        };
        let entry = catalog::lookup(schema, name).ok_or_else(|| {
            let names: Vec<String> = crate::catalog::find(schema)
                .map(catalog::entries)
                .unwrap_or_default()
                .into_iter()
                .map(|e| e.name)
                .collect();
            let hint = closest(name, names.iter().map(String::as_str))
                .map(|c| format!("did you mean {schema}.{c}? "))
                .unwrap_or_default();
            CliError::invalid(format!(
                "unknown template {first:?}; {hint}{schema} has: {}",
                names.join(", ")
            ))
        })?;
        let mut fields = BTreeMap::new();
        for pair in rest {
            let (field, value) = pair
                .split_once('=')
                .ok_or_else(|| CliError::invalid(format!("expected field=value, got {pair:?}")))?;
            if entry.info.field(field).is_none() {
                let known: Vec<&str> = entry.info.fields.iter().map(|f| f.name).collect();
                let hint = closest(field, known.iter().copied())
                    .map(|c| format!("; did you mean {c}={value}?"))
                    .unwrap_or_default();
                return Err(CliError::invalid(format!(
                    "{} has no field {field:?} (fields: {}){hint}",
                    entry.address(),
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                )));
            }
            if fields.insert(field.to_owned(), value.to_owned()).is_some() {
                return Err(CliError::invalid(format!("field {field:?} given twice")));
            }
        }
        Ok(Address::Typed {
            entry: Box::new(entry),
            fields,
        })
    }

    /// The full key the address names.
    ///
    /// # Errors
    /// Exit code 2 for a missing field, a value its segment refuses, or an empty raw key.
    pub(crate) fn key(&self) -> CliResult<String> {
        match self {
            Address::Raw(raw) if raw.is_empty() => Err(CliError::invalid("empty key")),
            Address::Raw(raw) => Ok(raw.clone()),
            Address::Typed { entry, fields } => {
                let rendered = render(entry, fields)?;
                if let Some(field) = rendered.missing {
                    let known: Vec<&str> = entry.info.fields.iter().map(|f| f.name).collect();
                    return Err(CliError::invalid(format!(
                        "{} needs field {field:?} (fields: {})",
                        entry.address(),
                        known.join(", ")
                    )));
                }
                // The schema's own parser has the last word on canonical form.
                entry
                    .schema
                    .parse(&rendered.text)
                    .map_err(|e| CliError::invalid(e.to_string()))?;
                Ok(rendered.text)
            }
        }
    }

    /// The full key's bytes: a raw key with its escapes undone ([`crate::keys`]), so that a
    /// printed binary key names itself.
    ///
    /// # Errors
    /// Exit code 2 as [`key`](Self::key), or for a malformed escape.
    pub(crate) fn key_bytes(&self) -> CliResult<Vec<u8>> {
        match self {
            Address::Raw(raw) => match crate::keys::unescape(raw).map_err(CliError::invalid)? {
                bytes if bytes.is_empty() => Err(CliError::invalid("empty key")),
                bytes => Ok(bytes),
            },
            Address::Typed { .. } => self.key().map(String::into_bytes),
        }
    }

    /// The directory's bytes: a raw prefix with its escapes undone ([`crate::keys`]).
    ///
    /// # Errors
    /// Exit code 2 as [`prefix`](Self::prefix), or for a malformed escape.
    pub(crate) fn prefix_bytes(&self) -> CliResult<Vec<u8>> {
        match self {
            Address::Raw(raw) => crate::keys::unescape(raw).map_err(CliError::invalid),
            Address::Typed { .. } => self.prefix().map(String::into_bytes),
        }
    }

    /// The directory the address names (see the module docs); a raw address as given.
    ///
    /// # Errors
    /// Exit code 2 for a value its segment refuses.
    pub(crate) fn prefix(&self) -> CliResult<String> {
        match self {
            Address::Raw(raw) => Ok(raw.clone()),
            Address::Typed { entry, fields } => {
                let rendered = render(entry, fields)?;
                Ok(match rendered.missing {
                    Some(_) => rendered.text,
                    None => rendered.text[..rendered.dir_end].to_owned(),
                })
            }
        }
    }
}

/// A template written with some fields.
struct Rendered {
    /// The full key, or the text before the segment of the first missing field.
    text: String,
    /// The first missing field.
    missing: Option<String>,
    /// With no field missing: where the key's directory ends (after the separator that
    /// follows the last variable segment, or after the last separator).
    dir_end: usize,
}

fn render(entry: &Entry, fields: &BTreeMap<String, String>) -> CliResult<Rendered> {
    let template = entry.info.template;
    let sep = template.separator();
    let segments = template.segments();
    let last_var = segments.iter().rposition(|s| s.has_var());
    let mut out = String::new();
    let mut last_sep_end = 0;
    let mut var_dir_end = None;
    if template.leading_separator() {
        out.push(sep.as_char());
        last_sep_end = out.len();
    }
    for (index, segment) in segments.iter().enumerate() {
        let mut text = String::new();
        for part in segment.parts() {
            match part {
                Part::Literal(literal) => text.push_str(literal),
                Part::Var(name) => match fields.get(name) {
                    Some(value) => text.push_str(&encode_field(entry, name, value)?),
                    None => {
                        return Ok(Rendered {
                            dir_end: out.len(),
                            text: out,
                            missing: Some(name.clone()),
                        });
                    }
                },
            }
        }
        if template.hash_tag() == Some(index) {
            text = format!("{{{text}}}");
        }
        out.push_str(&text);
        if index + 1 < segments.len() {
            out.push(sep.as_char());
            last_sep_end = out.len();
            if Some(index) == last_var {
                var_dir_end = Some(out.len());
            }
        }
    }
    Ok(Rendered {
        dir_end: var_dir_end.unwrap_or(last_sep_end),
        text: out,
        missing: None,
    })
}

/// The segment encoding of `value` for field `name`: as given when the segment accepts it,
/// else percent-escaped when that is accepted.
fn encode_field(entry: &Entry, name: &str, value: &str) -> CliResult<String> {
    let info = entry
        .info
        .field(name)
        .ok_or_else(|| CliError::invalid(format!("{} has no field {name:?}", entry.address())))?;
    let sep = entry.info.template.separator();
    if info.can_produce(value, sep) {
        return Ok(value.to_owned());
    }
    let mut escaped = String::new();
    escape_into(value, sep, &mut escaped);
    if escaped != value && info.can_produce(&escaped, sep) {
        return Ok(escaped);
    }
    // A zero-padded segment is given as the number: `sku=42` is `000042`.
    if let SegmentSpec::Padded { width, .. } = info.spec
        && !value.is_empty()
        && value.len() < width
        && value.bytes().all(|b| b.is_ascii_digit())
    {
        let padded = format!("{value:0>width$}");
        if info.can_produce(&padded, sep) {
            return Ok(padded);
        }
    }
    Err(CliError::invalid(format!(
        "invalid segment {name}={value:?} for {}: expected {}",
        entry.address(),
        info.rule
    )))
}

/// The candidate closest to `word` by edit distance, when it is close enough to be a typo
/// (at most a third of the word's length, and at least one edit away).
pub(crate) fn closest<'a>(
    word: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .map(|c| (distance(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// The Levenshtein distance between `a` and `b`, in characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = if ca == *cb {
                previous
            } else {
                1 + previous.min(row[j]).min(current)
            };
            previous = current;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod typo_tests {
    use super::closest;

    #[test]
    fn typos_find_their_word() {
        let names = ["meta", "database-config", "ftp-config"];
        assert_eq!(closest("mata", names.into_iter()), Some("meta"));
        assert_eq!(
            closest("database-cofig", names.into_iter()),
            Some("database-config")
        );
        assert_eq!(closest("zzzzzz", names.into_iter()), None);
        assert_eq!(
            closest("tenat", ["tenant", "nxc"].into_iter()),
            Some("tenant")
        );
    }
}
