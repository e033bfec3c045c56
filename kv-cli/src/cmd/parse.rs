//! `kvctl parse RAWKEY`: the schema and template a raw key belongs to, with its decoded
//! fields, or every schema's reason for refusing it.

use super::Ctx;
use crate::catalog;
use crate::error::{CliError, CliResult};
use crate::output::{Format, print_json};
use serde_json::json;

pub(crate) fn run(ctx: &Ctx, raw: &str) -> CliResult<()> {
    match crate::catalog::parse_any(raw) {
        Ok(parsed) => {
            let entry = catalog::entry_of(&parsed);
            let address = entry.as_ref().map(|e| e.address()).unwrap_or_default();
            let value_type = entry
                .as_ref()
                .map(|e| catalog::short_type(e.info.value_type))
                .unwrap_or_default();
            match ctx.format {
                Format::Json => print_json(&json!({
                    "key": raw,
                    "schema": parsed.schema,
                    "template": parsed.template,
                    "address": address,
                    "value_type": value_type,
                    "fields": parsed.fields.iter().map(|(n, v)| (n.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
                })),
                Format::Table => {
                    crate::output::outln!("schema:   {}", parsed.schema);
                    crate::output::outln!("template: {}", parsed.template);
                    crate::output::outln!("address:  {address}");
                    crate::output::outln!("value:    {value_type}");
                    for (name, value) in &parsed.fields {
                        crate::output::outln!("  {name} = {value}");
                    }
                }
            }
            Ok(())
        }
        Err(reasons) => Err(CliError::invalid(format!(
            "key {raw:?} matches no template of the {} schemas (nor of the {} old layouts and variants); {}",
            crate::catalog::all().len(),
            crate::catalog::every().len() - crate::catalog::all().len(),
            closest(&reasons)
        ))),
    }
}

/// Why a key matches no template: the schema whose template matched furthest says the
/// most.
pub(crate) fn closest(reasons: &[(&'static str, keyplane::keyspace::NoMatch)]) -> String {
    let best = reasons
        .iter()
        .filter_map(|(schema, no)| no.closest().map(|c| (schema, c)))
        .max_by_key(|(_, c)| c.position());
    match best {
        Some((schema, c)) => format!(
            "closest is {schema} template `{}`, which stops at segment {}: {}",
            c.template(),
            c.position(),
            c.reason()
        ),
        None => "no schema has templates".to_owned(),
    }
}
