//! `kvctl ls [ADDRESS] [--rev N] [--keys-only] [--limit N] [--count]`: the keys of a directory
//! (as they were at revision N when asked) (a typed address's directory, or a raw prefix),
//! with their types: plain values and the sets, maps and lists stored there; only the keys,
//! the first N, or how many, as etcdctl's `get --prefix --keys-only`, `--limit` and
//! `--count-only` give them.

use super::Ctx;
use crate::address::Address;
use crate::error::{CliError, CliResult};
use crate::output::{Format, entry_json, print_json, typed};
use keyplane::{CollectionEntry, CollectionKind, Entry, RangeOptions, Store};
use serde_json::{Value, json};

/// What `ls` prints of the listing: every row, only the keys, the first N, or the count.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct Shape {
    /// Print only the keys, one per line (as `etcdctl get --prefix --keys-only`).
    #[arg(long, conflicts_with = "values")]
    pub(crate) keys_only: bool,
    /// Print only the first N keys, in key order.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) limit: Option<i64>,
    /// Print only how many keys there are (as `etcdctl get --prefix --count-only`).
    #[arg(long, conflicts_with_all = ["values", "keys_only", "limit"])]
    pub(crate) count: bool,
}

pub(crate) async fn run(
    ctx: &Ctx,
    words: &[String],
    values: bool,
    revision: Option<i64>,
    shape: &Shape,
) -> CliResult<()> {
    super::check_revision(revision)?;
    let limit = match shape.limit {
        Some(n) if n < 1 => {
            return Err(CliError::invalid(format!(
                "--limit {n}: list at least 1 key"
            )));
        }
        Some(n) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
        None => None,
    };
    let prefix = if words.is_empty() {
        Vec::new()
    } else {
        Address::parse(words)?.prefix_bytes()?
    };
    // A prefix that is not text is listed as the store holds it, without reconciling it.
    let store = match std::str::from_utf8(&prefix) {
        Ok(text) => ctx.store_for_listing(text).await?,
        Err(_) => ctx.store().await?,
    };
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
    if shape.count {
        match ctx.format {
            Format::Json => print_json(&json!({ "count": rows.len() })),
            Format::Table => crate::output::outln!("{}", rows.len()),
        }
        return Ok(());
    }
    let more = limit.is_some_and(|n| rows.len() > n);
    if let Some(n) = limit {
        rows.truncate(n);
    }
    if shape.keys_only {
        keys_only(ctx.format, &rows);
        return more_notice(more);
    }
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
                        let key = crate::keys::text(&entry.key);
                        let kind = typed(&key).map(|(a, _)| a).unwrap_or_else(|| "-".into());
                        crate::output::outln!("{key:<60} {kind:<28} rev {}", entry.mod_revision);
                        if values {
                            for line in crate::output::value_text(&entry.value).lines() {
                                crate::output::outln!("    {line}");
                            }
                        }
                    }
                    Row::Collection(c) => {
                        let key = crate::keys::text(&c.key);
                        let kind = typed(&key).map(|(a, _)| a).unwrap_or_else(|| "-".into());
                        let (name, unit) = kind_words(c.kind);
                        crate::output::outln!("{key:<60} {kind:<28} {name} ({} {unit})", c.size);
                    }
                }
            }
        }
    }
    more_notice(more)
}

/// Says on stderr that `--limit` left keys out, as etcdctl's `more` does: stdout holds only
/// what was asked for.
fn more_notice(more: bool) -> CliResult<()> {
    if more {
        eprintln!("kvctl: more keys match (--limit)");
    }
    Ok(())
}

/// The keys alone: one per line, or a JSON array of keys with their typed addresses.
fn keys_only(format: Format, rows: &[(Vec<u8>, Row<'_>)]) {
    match format {
        Format::Json => print_json(&Value::Array(
            rows.iter()
                .map(|(key, _)| {
                    let key = crate::keys::text(key);
                    let mut object = json!({ "key": key });
                    crate::output::add_typed_address(&mut object, &key);
                    object
                })
                .collect(),
        )),
        Format::Table => {
            for (key, _) in rows {
                crate::output::outln!("{}", crate::keys::text(key));
            }
        }
    }
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
    let key = crate::keys::text(&c.key);
    let (name, _) = kind_words(c.kind);
    let mut object = json!({ "key": key, "kind": name.to_lowercase(), "size": c.size });
    crate::output::add_typed_address(&mut object, &key);
    object
}

/// Every plain entry and collection under `prefix`, page by page, every page at one revision
/// (`revision`, else the first page's): a snapshot, whatever is written meanwhile.
async fn listing(
    store: &dyn Store,
    prefix: &[u8],
    keys_only: bool,
    revision: Option<i64>,
) -> CliResult<(Vec<Entry>, Vec<CollectionEntry>)> {
    const PAGE: usize = 1000;
    let bar = crate::output::progress("keys");
    let mut opts = RangeOptions::prefix(prefix).limit(PAGE).with_collections();
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
