//! `kvctl rm ADDRESS [--prefix]`: deletes one key (a plain value or a set, map or list), or
//! every key of a directory.

use super::Ctx;
use crate::address::Address;
use crate::error::{CliError, CliResult};
use crate::output::{Format, print_json};
use keyplane_core::{OpResult, Txn, TxnOp};
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
        let done = store.delete_prefix(dir.as_bytes()).await?;
        let deleted = done.deleted;
        match ctx.format {
            Format::Json => {
                print_json(&json!({ "prefix": dir, "deleted": deleted, "revision": done.revision }))
            }
            Format::Table => crate::output::outln!("deleted {deleted} keys under {dir}"),
        }
        return Ok(());
    }
    let key = address.key()?;
    let store = ctx.store().await?;
    // A transaction's delete counts what it removed: the plain key, or the set, map or list
    // at the key (which `Store::delete`, returning the previous plain entry, does not say).
    let response = store
        .txn(Txn::new().and_then([TxnOp::delete(key.as_bytes())]))
        .await?;
    let deleted = match response.results.first() {
        Some(OpResult::Delete { deleted }) => *deleted,
        other => {
            return Err(CliError::from(keyplane_core::Error::internal(format!(
                "a delete returned {other:?}"
            ))));
        }
    };
    if deleted == 0 {
        return Err(CliError::not_found(format!("key {key:?} not found")));
    }
    match ctx.format {
        Format::Json => print_json(&json!({ "key": key, "deleted": 1 })),
        Format::Table => crate::output::outln!("deleted {key}"),
    }
    Ok(())
}
