//! `kvctl ls [ADDRESS]`: the keys of a directory (a typed address's directory, or a raw
//! prefix), with their types.

use super::{Ctx, scan};
use crate::address::Address;
use crate::error::CliResult;
use crate::output::{Format, entry_json, print_json, typed};

pub(crate) async fn run(ctx: &Ctx, words: &[String], values: bool) -> CliResult<()> {
    let prefix = if words.is_empty() {
        String::new()
    } else {
        Address::parse(words)?.prefix()?
    };
    let store = ctx.store().await?;
    let entries = scan(store.as_ref(), &prefix, !values).await?;
    match ctx.format {
        Format::Json => print_json(&serde_json::Value::Array(
            entries.iter().map(|e| entry_json(e, values)).collect(),
        )),
        Format::Table => {
            for entry in &entries {
                let key = String::from_utf8_lossy(&entry.key);
                let kind = typed(&key).map(|(a, _)| a).unwrap_or_else(|| "-".into());
                crate::output::outln!("{key:<60} {kind:<28} rev {}", entry.mod_revision);
                if values {
                    for line in crate::output::value_text(&entry.value).lines() {
                        crate::output::outln!("    {line}");
                    }
                }
            }
        }
    }
    Ok(())
}
