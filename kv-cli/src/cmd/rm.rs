//! `kvctl rm ADDRESS [--prefix]`: deletes one key, or every key of a directory.

use super::Ctx;
use crate::address::Address;
use crate::error::{CliError, CliResult};
use crate::output::{Format, print_json};
use serde_json::json;

pub(crate) async fn run(ctx: &Ctx, words: &[String], prefix: bool) -> CliResult<()> {
    let address = Address::parse(words)?;
    if prefix {
        let dir = address.prefix()?;
        if dir.is_empty() {
            return Err(CliError::invalid(
                "refusing to delete an empty prefix (the whole store)",
            ));
        }
        let store = ctx.store().await?;
        let deleted = store.delete_prefix(dir.as_bytes()).await?;
        match ctx.format {
            Format::Json => print_json(&json!({ "prefix": dir, "deleted": deleted })),
            Format::Table => crate::output::outln!("deleted {deleted} keys under {dir}"),
        }
        return Ok(());
    }
    let key = address.key()?;
    let store = ctx.store().await?;
    let prev = store.delete(key.as_bytes()).await?;
    if prev.is_none() {
        return Err(CliError::not_found(format!("key {key:?} not found")));
    }
    match ctx.format {
        Format::Json => print_json(&json!({ "key": key, "deleted": 1 })),
        Format::Table => crate::output::outln!("deleted {key}"),
    }
    Ok(())
}
