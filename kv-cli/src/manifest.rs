//! Schema manifests: a schema as a JSON document, for people without a Rust build.
//! `kvctl schema NAME -o json` prints one; `kvctl --schema FILE` loads one. The format is
//! described in `docs/manifest.md`; its version is [`FORMAT`].
//!
//! A loaded schema checks keys by the segment rules its fields name
//! ([`SegmentSpec`](keyplane::keyspace::SegmentSpec)), and values by their format and,
//! for JSON values, their JSON Schema. What only Rust code knows is not in a manifest: a
//! value that must repeat its key's fields (`#[kv(agrees = ..)]`), a hand-written segment
//! type's rule (`"kind": "custom"` accepts any non-empty segment).

use crate::catalog::{Entry, Listed, short_type};
use crate::error::{CliError, CliResult};
use keyplane::CollectionKind;
use keyplane::keyspace::{
    FieldInfo, Schema, SegmentSpec, Separator, Template, TemplateInfo, TemplateKind, ValueFormat,
    ValueInfo,
};
use keyplane::{Error, ErrorKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// The manifest format this `kvctl` writes and reads.
pub(crate) const FORMAT: &str = "keyplane-schema/1";

/// A schema.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    /// [`FORMAT`].
    format: String,
    name: String,
    #[serde(default)]
    store: String,
    #[serde(default)]
    summary: String,
    #[serde(default)]
    read_only: bool,
    templates: Vec<TemplateDoc>,
}

/// One template.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TemplateDoc {
    /// The short name: `SCHEMA.NAME` is its typed address.
    name: String,
    template: String,
    /// `/` or `:`; inferred from the template when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    separator: Option<char>,
    /// The variable or literal segment wrapped in a Redis Cluster hash tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hash_tag: Option<String>,
    /// An old layout's template: read and migrated, never written.
    #[serde(default, skip_serializing_if = "is_false")]
    read_only: bool,
    /// `set`, `hash` or `list` for a collection; left out for a plain value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<KindDoc>,
    /// Whether values are sealed (`Encrypted`): `kvctl` shows them with a keyring only.
    #[serde(default)]
    encrypted: bool,
    /// Templates whose keys may nest under this template's keys.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    directory_of: Vec<String>,
    fields: Vec<FieldDoc>,
    #[serde(default)]
    value: ValueDoc,
    /// Informational (`SCHEMA.NAME`, the key and value types): written, ignored when read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    address: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key_type: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value_type: Option<Value>,
}

#[derive(Serialize, Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum KindDoc {
    Set,
    Hash,
    List,
}

/// One variable of a template.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FieldDoc {
    name: String,
    /// The rule, as data.
    segment: SegmentSpec,
    /// Informational (the Rust type, the rule in words, whether it sorts by value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    r#type: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rule: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ordered: Option<Value>,
}

/// A template's value (a collection's members).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ValueDoc {
    format: ValueFormat,
    /// The JSON Schema of a JSON value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    schema: Option<Value>,
    /// Informational: the codec's Rust type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    r#type: Option<Value>,
}

impl Default for ValueDoc {
    fn default() -> Self {
        ValueDoc {
            format: ValueFormat::Bytes,
            schema: None,
            r#type: None,
        }
    }
}

fn is_false(b: &bool) -> bool {
    !b
}

/// The manifest of `schema`, as `kvctl schema NAME -o json` prints it.
pub(crate) fn write(schema: Schema, entries: &[Entry]) -> Value {
    let templates = entries
        .iter()
        .map(|e| {
            let t = e.info.template;
            let hash_tag = t.hash_tag().and_then(|i| {
                let segment = &t.segments()[i];
                segment.var().or(segment.literal()).map(str::to_owned)
            });
            TemplateDoc {
                name: e.name.clone(),
                template: t.source().to_owned(),
                separator: Some(t.separator().as_char()),
                hash_tag,
                read_only: t.is_read_only(),
                kind: e.info.kind.map(|k| match k {
                    CollectionKind::Set => KindDoc::Set,
                    CollectionKind::Map => KindDoc::Hash,
                    CollectionKind::List => KindDoc::List,
                }),
                encrypted: e.info.encrypted,
                directory_of: e
                    .info
                    .directory_of
                    .iter()
                    .map(|d| (*d).to_owned())
                    .collect(),
                fields: e
                    .info
                    .fields
                    .iter()
                    .map(|f| FieldDoc {
                        name: f.name.to_owned(),
                        segment: f.spec.clone(),
                        r#type: Some(Value::from(short_type(f.type_name))),
                        rule: Some(Value::from(f.rule.clone())),
                        ordered: Some(Value::from(f.ordered)),
                    })
                    .collect(),
                value: ValueDoc {
                    format: e.info.value.format,
                    schema: e.info.value.json_schema.as_deref().cloned(),
                    r#type: Some(Value::from(short_type(e.info.value_type))),
                },
                address: Some(Value::from(e.address())),
                key_type: Some(Value::from(short_type(e.info.type_name))),
                value_type: Some(Value::from(e.value_type())),
            }
        })
        .collect();
    let manifest = Manifest {
        format: FORMAT.to_owned(),
        name: schema.name.to_owned(),
        store: schema.store.to_owned(),
        summary: schema.summary.to_owned(),
        read_only: schema.read_only,
        templates,
    };
    serde_json::to_value(&manifest).unwrap_or(Value::Null)
}

/// Reads the manifest file at `path`.
///
/// # Errors
/// Exit code 2 naming the file and what is wrong in it.
pub(crate) fn load(path: &str) -> CliResult<Listed> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::invalid(format!("schema manifest {path}: cannot read it: {e}")))?;
    parse(&text).map_err(|why| CliError::invalid(format!("schema manifest {path}: {why}")))
}

/// Reads a manifest.
///
/// # Errors
/// What is wrong, in words.
pub(crate) fn parse(text: &str) -> Result<Listed, String> {
    let manifest: Manifest = serde_json::from_str(text).map_err(|e| {
        format!("not a schema manifest ({FORMAT}, as `kvctl schema NAME -o json` prints): {e}")
    })?;
    if manifest.format != FORMAT {
        return Err(format!(
            "format {:?} is not one this kvctl reads ({FORMAT})",
            manifest.format
        ));
    }
    if manifest.name.is_empty() || manifest.name.contains(['.', '/', ':', ' ', '=']) {
        return Err(format!(
            "schema name {:?}: give a non-empty name without `.`, `/`, `:`, `=` or spaces",
            manifest.name
        ));
    }
    let mut names = Vec::with_capacity(manifest.templates.len());
    let mut infos = Vec::with_capacity(manifest.templates.len());
    for doc in manifest.templates {
        if doc.name.is_empty()
            || doc.name.contains(['.', '/', ':', ' ', '='])
            || names.contains(&doc.name)
        {
            return Err(format!(
                "template name {:?}: give each template a distinct, non-empty name without `.`, `/`, `:`, `=` or spaces",
                doc.name
            ));
        }
        let info = template_info(&doc, manifest.read_only)
            .map_err(|why| format!("template {:?} ({}): {why}", doc.name, doc.template))?;
        names.push(doc.name);
        infos.push(info);
    }
    let schema = Schema::from_templates(
        &manifest.name,
        &manifest.store,
        &manifest.summary,
        manifest.read_only,
        infos,
    )
    .map_err(|findings| {
        let lines: Vec<String> = findings.iter().map(|f| format!("  {f}")).collect();
        format!(
            "the schema checker refuses it (a nesting that is meant is declared in the \
             template's `directory_of`):\n{}",
            lines.join("\n")
        )
    })?;
    Ok(Listed::loaded(
        schema,
        !manifest.read_only,
        Arc::from(names),
    ))
}

/// `text` for the life of the process (a loaded schema's names are `'static`, as a derived
/// one's are).
fn leak(text: &str) -> &'static str {
    Box::leak(text.to_owned().into_boxed_str())
}

fn template_info(doc: &TemplateDoc, schema_read_only: bool) -> Result<TemplateInfo, String> {
    let separator = match doc.separator {
        None => None,
        Some('/') => Some(Separator::Slash),
        Some(':') => Some(Separator::Colon),
        Some(other) => return Err(format!("separator {other:?}: `/` or `:`")),
    };
    let read_only = doc.read_only || schema_read_only;
    if read_only && doc.hash_tag.is_some() {
        return Err("a read-only template has no hash tag".to_owned());
    }
    let source = doc.template.clone();
    let template = match (read_only, separator) {
        (true, separator) => Template::read_only(source, TemplateKind::Key, separator),
        (false, Some(separator)) => Template::with_separator(
            source,
            TemplateKind::Key,
            separator,
            doc.hash_tag.as_deref(),
        ),
        (false, None) => Template::key(source, doc.hash_tag.as_deref()),
    }
    .map_err(|e| e.to_string())?;
    let template: &'static Template = Box::leak(Box::new(template));
    let vars: Vec<&str> = template.vars().collect();
    let mut fields = Vec::with_capacity(doc.fields.len());
    for field in &doc.fields {
        if !vars.contains(&field.name.as_str()) {
            return Err(format!(
                "field {:?} is not a variable of the template",
                field.name
            ));
        }
        if fields.iter().any(|f: &FieldInfo| f.name == field.name) {
            return Err(format!("field {:?} is described twice", field.name));
        }
        field
            .segment
            .validate()
            .map_err(|why| format!("field {:?}: {why}", field.name))?;
        let type_name = match &field.r#type {
            Some(Value::String(name)) => leak(name),
            _ => spec_type_name(&field.segment),
        };
        fields.push(FieldInfo::from_spec(
            leak(&field.name),
            type_name,
            field.segment.clone(),
        ));
    }
    if let Some(missing) = vars.iter().find(|v| !fields.iter().any(|f| f.name == **v)) {
        return Err(format!(
            "variable {{{missing}}} has no field: describe it in `fields` with its `segment` rule"
        ));
    }
    let value = value_info(&doc.value)?;
    let type_name = match &doc.key_type {
        Some(Value::String(name)) => leak(name),
        _ => leak(&doc.name),
    };
    let value_type = match &doc.value.r#type {
        Some(Value::String(name)) => leak(name),
        _ => doc.value.format.as_str(),
    };
    Ok(TemplateInfo {
        type_name,
        template,
        fields,
        value_type,
        encrypted: doc.encrypted,
        value,
        kind: doc.kind.map(|k| match k {
            KindDoc::Set => CollectionKind::Set,
            KindDoc::Hash => CollectionKind::Map,
            KindDoc::List => CollectionKind::List,
        }),
        directory_of: Box::leak(
            doc.directory_of
                .iter()
                .map(|d| leak(d))
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        ),
    })
}

/// The type a field known from its rule alone is shown as (`u64`, `Padded<6, u32>`, `text`).
fn spec_type_name(spec: &SegmentSpec) -> &'static str {
    match spec {
        SegmentSpec::Int { signed, bits } => {
            leak(&format!("{}{bits}", if *signed { 'i' } else { 'u' }))
        }
        SegmentSpec::Padded {
            width,
            signed,
            bits,
        } => leak(&format!(
            "Padded<{width}, {}{bits}>",
            if *signed { 'i' } else { 'u' }
        )),
        SegmentSpec::Uuid => "Uuid",
        SegmentSpec::HostPort => "HostPort",
        SegmentSpec::Ipv4 => "Ipv4Addr",
        SegmentSpec::Text { .. } => "text",
        _ => "custom",
    }
}

/// A value's check: its format, then its JSON Schema when it has one.
fn value_info(doc: &ValueDoc) -> Result<ValueInfo, String> {
    let format = doc.format;
    let Some(schema) = doc.schema.as_ref() else {
        return Ok(ValueInfo::of_format(format));
    };
    if format != ValueFormat::Json {
        return Err(format!(
            "a JSON Schema is given for a value of format {format}: only `json` values have one"
        ));
    }
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the value's JSON Schema is not valid: {e}"))?;
    let validator = Arc::new(validator);
    Ok(ValueInfo::custom(
        format,
        Some(schema.clone()),
        move |_, bytes| {
            let value: Value = serde_json::from_slice(bytes)
                .map_err(|e| Error::new(ErrorKind::Codec, format!("the value is not JSON: {e}")))?;
            let errors: Vec<String> = validator
                .iter_errors(&value)
                .take(3)
                .map(|e| {
                    let at = e.instance_path().to_string();
                    let at = if at.is_empty() { "/".to_owned() } else { at };
                    format!("at {at}: {e}")
                })
                .collect();
            if errors.is_empty() {
                Ok(())
            } else {
                Err(Error::new(
                    ErrorKind::Codec,
                    format!(
                        "the value does not match its JSON Schema: {}",
                        errors.join("; ")
                    ),
                ))
            }
        },
    ))
}

#[cfg(test)]
#[path = "manifest_tests.rs"]
mod tests;
