//! `kvctl put ADDRESS VALUE`: writes one key after checking the key against its template's
//! segment rules and the value against its value type. Nothing is written when either fails.

use super::Ctx;
use crate::address::Address;
use crate::error::{CliError, CliResult};
use crate::output::{Format, print_json};
use keyplane_core::PutOptions;
use serde_json::json;
use std::io::Read;

pub(crate) async fn run(ctx: &Ctx, words: &[String], raw: bool) -> CliResult<()> {
    let Some((value, address)) = words.split_last() else {
        return Err(CliError::invalid("put needs a key and a value"));
    };
    let key = Address::parse(address)?.key()?;
    let value = if value == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| CliError::invalid(format!("cannot read the value from stdin: {e}")))?;
        buf
    } else {
        value.as_bytes().to_vec()
    };
    let checked = if raw {
        None
    } else {
        let parsed = keyplane_schemas::parse_any(&key).map_err(|_| {
            CliError::invalid(format!(
                "key {key:?} belongs to no schema (see `kvctl parse`); use --raw to write it anyway"
            ))
        })?;
        if let Some(schema) = keyplane_schemas::find(parsed.schema).filter(|s| s.read_only) {
            return Err(CliError::invalid(format!(
                "key {key:?} belongs to {}, an old layout that is read-only (template {}): \
                 `kvctl migrate plan {}` moves it to the new layout; use --raw to write it anyway",
                schema.name, parsed.template, schema.name
            )));
        }
        crate::values::check(parsed.template, &key, &value).map_err(|e| {
            let expected = crate::catalog::entry_of(&parsed)
                .map(|entry| crate::catalog::short_type(entry.info.value_type))
                .unwrap_or_default();
            let detail = std::error::Error::source(&e)
                .map(|s| format!(" ({s})"))
                .unwrap_or_default();
            CliError::invalid(format!(
                "invalid value for {key}: expected {expected}: {}{detail}",
                e.message()
            ))
        })?;
        Some(parsed.template)
    };
    let store = ctx.store().await?;
    let result = store
        .put(key.as_bytes(), &value, PutOptions::default())
        .await?;
    match ctx.format {
        Format::Json => {
            print_json(&json!({ "key": key, "revision": result.revision, "template": checked }))
        }
        Format::Table => crate::output::outln!("OK {key} (revision {})", result.revision),
    }
    Ok(())
}
