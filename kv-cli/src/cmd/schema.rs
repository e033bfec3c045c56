//! `kvctl schema [NAME] [--all]`: the catalog (`--all`: with the old layouts, read-only), or
//! one schema as a tree of templates with their segment rules and value types.

use super::Ctx;
use crate::catalog::{self, short_type};
use crate::error::{CliError, CliResult};
use crate::output::{Format, print_json};
use serde_json::json;

pub(crate) fn run(ctx: &Ctx, name: Option<&str>, all: bool) -> CliResult<()> {
    match name {
        None => list(ctx.format, all),
        Some(name) => {
            let schema = keyplane_schemas::find(name).ok_or_else(|| {
                let names: Vec<&str> = keyplane_schemas::every().iter().map(|s| s.name).collect();
                CliError::invalid(format!(
                    "unknown schema {name:?} (schemas: {})",
                    names.join(", ")
                ))
            })?;
            show(ctx.format, schema)
        }
    }
}

/// The current layouts; with `with_legacy`, then the old ones they replace (read-only) and
/// the deployment variants (Redis Cluster).
fn list(format: Format, with_legacy: bool) -> CliResult<()> {
    let all = if with_legacy {
        keyplane_schemas::every()
    } else {
        keyplane_schemas::all()
    };
    match format {
        Format::Json => print_json(&json!(
            all.iter()
                .map(|s| json!({
                    "name": s.name,
                    "store": s.store,
                    "summary": s.summary,
                    "templates": s.templates().len(),
                    "read_only": s.read_only,
                }))
                .collect::<Vec<_>>()
        )),
        Format::Table => {
            crate::output::outln!(
                "{:<13} {:<6} {:>9}  SUMMARY",
                "SCHEMA",
                "STORE",
                "TEMPLATES"
            );
            for s in all {
                crate::output::outln!(
                    "{:<13} {:<6} {:>9}  {}",
                    s.name,
                    s.store,
                    s.templates().len(),
                    s.summary
                );
            }
        }
    }
    Ok(())
}

fn show(format: Format, schema: keyplane_schemas::Schema) -> CliResult<()> {
    let entries = catalog::entries(schema);
    if format == Format::Json {
        print_json(&schema_json(schema));
        return Ok(());
    }
    crate::output::outln!("{} ({}): {}", schema.name, schema.store, schema.summary);
    crate::output::outln!();
    let keys: Vec<(String, String)> = entries
        .iter()
        .map(|e| {
            let note = format!("{:<34} {}", e.address(), value_type(e));
            (e.info.template.source().to_owned(), note)
        })
        .collect();
    crate::output::out!("{}", crate::tree::render(&keys));
    crate::output::outln!();
    crate::output::outln!("Segments:");
    let mut seen = std::collections::BTreeSet::new();
    for entry in &entries {
        for field in &entry.info.fields {
            let line = format!(
                "  {{{}}}  {}: {}{}",
                field.name,
                short_type(field.type_name),
                field.rule,
                if field.ordered {
                    " (sorts by value)"
                } else {
                    ""
                }
            );
            if seen.insert(line.clone()) {
                crate::output::outln!("{line}");
            }
        }
    }
    Ok(())
}

/// A schema as `schema NAME -o json` prints it: name, store, summary, and each template
/// with its address, key and value types, and fields.
pub(crate) fn schema_json(schema: keyplane_schemas::Schema) -> serde_json::Value {
    let entries = catalog::entries(schema);
    json!({
        "name": schema.name,
        "store": schema.store,
        "summary": schema.summary,
        "read_only": schema.read_only,
        "templates": entries.iter().map(|e| json!({
            "address": e.address(),
            "template": e.info.template.source(),
            "key_type": short_type(e.info.type_name),
            "value_type": value_type(e),
            "encrypted": e.info.encrypted,
            "fields": e.info.fields.iter().map(|f| json!({
                "name": f.name,
                "type": short_type(f.type_name),
                "rule": f.rule,
                "ordered": f.ordered,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// The value type as stored: the codec, or `SET of`/`HASH of`/`LIST of` its member codec for
/// a collection key.
fn value_type(entry: &catalog::Entry) -> String {
    let codec = short_type(entry.info.value_type);
    match entry.info.kind {
        Some(keyplane_core::CollectionKind::Set) => format!("SET of {codec}"),
        Some(keyplane_core::CollectionKind::Map) => format!("HASH of {codec}"),
        Some(keyplane_core::CollectionKind::List) => format!("LIST of {codec}"),
        None => codec,
    }
}
