//! `kvctl ls [ADDRESS] [--rev N]`: the keys of a directory (as they were at revision N when
//! asked) (a typed address's directory, or a raw
//! prefix), with their types: plain values and the sets, maps and lists stored there.

use super::Ctx;
use crate::address::Address;
use crate::error::CliResult;
use crate::output::{Format, entry_json, print_json, typed};
use keyplane_core::{CollectionEntry, CollectionKind, Entry, RangeOptions, Store};
use serde_json::{Value, json};

pub(crate) async fn run(
    ctx: &Ctx,
    words: &[String],
    values: bool,
    revision: Option<i64>,
) -> CliResult<()> {
    super::check_revision(revision)?;
    let prefix = if words.is_empty() {
        String::new()
    } else {
        Address::parse(words)?.prefix()?
    };
    let store = ctx.store_for_listing(&prefix).await?;
    let (entries, collections) = listing(store.as_ref(), &prefix, !values, revision).await?;
    let mut rows: Vec<(Vec<u8>, Row<'_>)> = entries
        .iter()
        .map(|e| (e.key.clone(), Row::Plain(e)))
        .chain(
            collections
                .iter()
                .map(|c| (c.key.clone(), Row::Collection(c))),
        )
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    match ctx.format {
        Format::Json => print_json(&Value::Array(
            rows.iter()
                .map(|(_, row)| match row {
                    Row::Plain(e) => entry_json(e, values),
                    Row::Collection(c) => collection_json(c),
                })
                .collect(),
        )),
        Format::Table => {
            for (_, row) in &rows {
                match row {
                    Row::Plain(entry) => {
                        let key = String::from_utf8_lossy(&entry.key);
                        let kind = typed(&key).map(|(a, _)| a).unwrap_or_else(|| "-".into());
                        crate::output::outln!("{key:<60} {kind:<28} rev {}", entry.mod_revision);
                        if values {
                            for line in crate::output::value_text(&entry.value).lines() {
                                crate::output::outln!("    {line}");
                            }
                        }
                    }
                    Row::Collection(c) => {
                        let key = String::from_utf8_lossy(&c.key);
                        let kind = typed(&key).map(|(a, _)| a).unwrap_or_else(|| "-".into());
                        let (name, unit) = kind_words(c.kind);
                        crate::output::outln!("{key:<60} {kind:<28} {name} ({} {unit})", c.size);
                    }
                }
            }
        }
    }
    Ok(())
}

enum Row<'a> {
    Plain(&'a Entry),
    Collection(&'a CollectionEntry),
}

/// The Redis name of a kind and what its size counts.
fn kind_words(kind: CollectionKind) -> (&'static str, &'static str) {
    match kind {
        CollectionKind::Set => ("SET", "members"),
        CollectionKind::Map => ("HASH", "fields"),
        CollectionKind::List => ("LIST", "items"),
    }
}

fn collection_json(c: &CollectionEntry) -> Value {
    let key = String::from_utf8_lossy(&c.key).into_owned();
    let (name, _) = kind_words(c.kind);
    let mut object = json!({ "key": key, "kind": name.to_lowercase(), "size": c.size });
    crate::output::add_typed_address(&mut object, &key);
    object
}

/// Every plain entry and collection under `prefix`, page by page, every page at one revision
/// (`revision`, else the first page's): a snapshot, whatever is written meanwhile.
async fn listing(
    store: &dyn Store,
    prefix: &str,
    keys_only: bool,
    revision: Option<i64>,
) -> CliResult<(Vec<Entry>, Vec<CollectionEntry>)> {
    const PAGE: usize = 1000;
    let bar = crate::output::progress("keys");
    let mut opts = RangeOptions::prefix(prefix.as_bytes())
        .limit(PAGE)
        .with_collections();
    if keys_only {
        opts = opts.keys_only();
    }
    if let Some(revision) = revision {
        opts = opts.at_revision(revision);
    }
    let (mut entries, mut collections) = (Vec::new(), Vec::new());
    loop {
        let page = store.range(opts.clone()).await?;
        bar.inc((page.entries.len() + page.collections.len()) as u64);
        entries.extend(page.entries);
        collections.extend(page.collections);
        match page.next {
            Some(next) => opts = opts.at_revision(page.revision).after(next),
            None => break,
        }
    }
    bar.finish_and_clear();
    Ok((entries, collections))
}
