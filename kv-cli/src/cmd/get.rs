//! `kvctl get ADDRESS`: one key's value (pretty JSON when it is JSON) and metadata.

use super::Ctx;
use crate::address::Address;
use crate::error::{CliError, CliResult};
use crate::output::{Format, entry_json, print_json, typed, value_text};

pub(crate) async fn run(ctx: &Ctx, words: &[String]) -> CliResult<()> {
    let key = Address::parse(words)?.key()?;
    let store = ctx.store().await?;
    let entry = store
        .get(key.as_bytes())
        .await?
        .ok_or_else(|| CliError::not_found(format!("key {key:?} not found")))?;
    match ctx.format {
        Format::Json => print_json(&entry_json(&entry, true)),
        Format::Table => {
            crate::output::outln!("key:      {key}");
            if let Some((address, fields)) = typed(&key) {
                let fields: Vec<String> = fields.iter().map(|(n, v)| format!("{n}={v}")).collect();
                crate::output::outln!("type:     {address} {}", fields.join(" "));
            }
            crate::output::outln!(
                "revision: create {} mod {} version {}",
                entry.create_revision,
                entry.mod_revision,
                entry.version
            );
            if let Some(lease) = entry.lease {
                crate::output::outln!("lease:    {lease}");
            }
            crate::output::outln!("{}", value_text(&entry.value));
        }
    }
    Ok(())
}
