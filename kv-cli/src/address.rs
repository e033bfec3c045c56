//! Addresses on the command line: a raw key (`jxt/tenants/1/meta`), or a typed address, a
//! template by `schema.name` followed by `field=value` pairs (`tenant.meta id=1`).
//!
//! A typed field value is taken as its segment encoding when the segment accepts it, and
//! otherwise percent-escaped (so `name=默认租户` works for escaped text segments); anything
//! else is refused with the segment's rule. A typed address names a full key when every
//! field is given; as a directory (`ls`, `watch`, `rm --prefix`) it stops before the first
//! missing field, or after the last field when all are given: `tenant.meta id=1` is the
//! directory `jxt/tenants/1/`, which holds tenant 1 and never tenant 10.

use crate::catalog::{self, Entry};
use crate::error::{CliError, CliResult};
use keyplane_core::keyspace::{Part, escape_into};
use std::collections::BTreeMap;

/// A parsed address.
pub(crate) enum Address {
    /// A raw key or prefix, used as given.
    Raw(String),
    /// A template and some of its fields.
    Typed {
        entry: Entry,
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
            !n.is_empty() && keyplane_schemas::find(s).is_some() && !n.contains(['/', ':'])
        });
        let Some((schema, name)) = typed else {
            if !rest.is_empty() {
                return Err(CliError::invalid(format!(
                    "unexpected arguments after raw key {first:?}: {}",
                    rest.join(" ")
                )));
            }
            return Ok(Address::Raw(first.clone()));
        };
        let entry = catalog::lookup(schema, name).ok_or_else(|| {
            let names: Vec<String> = keyplane_schemas::find(schema)
                .map(catalog::entries)
                .unwrap_or_default()
                .into_iter()
                .map(|e| e.name)
                .collect();
            CliError::invalid(format!(
                "unknown template {first:?}; {schema} has: {}",
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
                return Err(CliError::invalid(format!(
                    "{} has no field {field:?} (fields: {})",
                    entry.address(),
                    known.join(", ")
                )));
            }
            if fields.insert(field.to_owned(), value.to_owned()).is_some() {
                return Err(CliError::invalid(format!("field {field:?} given twice")));
            }
        }
        Ok(Address::Typed { entry, fields })
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
    if (info.can_produce)(value, sep) {
        return Ok(value.to_owned());
    }
    let mut escaped = String::new();
    escape_into(value, sep, &mut escaped);
    if escaped != value && (info.can_produce)(&escaped, sep) {
        return Ok(escaped);
    }
    Err(CliError::invalid(format!(
        "invalid segment {name}={value:?} for {}: expected {}",
        entry.address(),
        info.rule
    )))
}
