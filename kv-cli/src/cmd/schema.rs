//! `kvctl schema [NAME] [--all]`: the catalog (`--all`: with the old layouts, read-only), or
//! one schema as a tree of templates with their segment rules and value types; with `-o json`,
//! its manifest, which `kvctl --schema FILE` loads.

use super::Ctx;
use crate::catalog::{self, short_type};
use crate::error::{CliError, CliResult};
use crate::output::{Format, print_json};
use serde_json::json;

pub(crate) fn run(ctx: &Ctx, name: Option<&str>, all: bool) -> CliResult<()> {
    match name {
        None => list(ctx.format, all),
        Some(name) => {
            let schema = crate::catalog::find(name).ok_or_else(|| {
                let names: Vec<&str> = crate::catalog::every().iter().map(|s| s.name).collect();
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
        crate::catalog::every()
    } else {
        crate::catalog::all()
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

fn show(format: Format, schema: keyplane::keyspace::Schema) -> CliResult<()> {
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
            let note = format!("{:<34} {}", e.address(), e.value_type());
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
                if field.ordered && !field.rule.contains("sorts by value") {
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

/// A schema as `schema NAME -o json` prints it: its manifest (`keyplane-schema/1`), which
/// `kvctl --schema FILE` loads back.
pub(crate) fn schema_json(schema: keyplane::keyspace::Schema) -> serde_json::Value {
    crate::manifest::write(schema, &catalog::entries(schema))
}
