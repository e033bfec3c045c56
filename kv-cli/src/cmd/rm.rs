//! `kvctl rm ADDRESS [--prefix | --if-mod-revision N]`: deletes one key (a plain value or a
//! set, map or list), only at mod revision N when asked, or every key of a directory.

use super::Ctx;
use crate::address::Address;
use crate::error::{CliError, CliResult};
use crate::output::{Format, print_json};
use serde_json::json;

pub(crate) async fn run(
    ctx: &Ctx,
    words: &[String],
    prefix: bool,
    if_mod_revision: Option<i64>,
) -> CliResult<()> {
    let address = Address::parse(words)?;
    let guard = super::guard::Guard::of(false, if_mod_revision)?;
    if prefix && guard != super::guard::Guard::None {
        return Err(CliError::invalid(
            "--if-mod-revision guards one key; a directory has no mod revision of its own",
        ));
    }
    if prefix {
        let dir = address.prefix_bytes()?;
        if dir.is_empty() {
            return Err(CliError::invalid(
                "refusing to delete an empty prefix (the whole store)",
            ));
        }
        let store = ctx.store().await?;
        let done = store.delete_prefix(&dir).await?;
        let dir = crate::keys::text(&dir);
        let deleted = done.deleted;
        match ctx.format {
            Format::Json => {
                print_json(&json!({ "prefix": dir, "deleted": deleted, "revision": done.revision }))
            }
            Format::Table => crate::output::outln!("deleted {deleted} keys under {dir}"),
        }
        return Ok(());
    }
    let key = address.key_bytes()?;
    let shown = crate::keys::text(&key);
    if guard != super::guard::Guard::None
        && let Ok(text) = std::str::from_utf8(&key)
        && let Ok(parsed) = crate::catalog::parse_any(text)
        && let Some(kind) = crate::values::collection_kind(&parsed)
    {
        return Err(CliError::invalid(format!(
            "\"{shown}\" holds a {kind:?}, which has no mod revision to compare: --if-mod-revision guards plain values"
        )));
    }
    let store = ctx.store().await?;
    // A transaction's delete counts what it removed: the plain key, or the set, map or list
    // at the key (which `Store::delete`, returning the previous plain entry, does not say).
    if !super::guard::delete(&*store, &key, guard).await? {
        return Err(CliError::not_found(format!("key \"{shown}\" not found")));
    }
    match ctx.format {
        Format::Json => print_json(&json!({ "key": shown, "deleted": 1 })),
        Format::Table => crate::output::outln!("deleted {shown}"),
    }
    Ok(())
}
