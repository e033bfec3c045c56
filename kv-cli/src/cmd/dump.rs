//! `kvctl export [PREFIX]`, `kvctl import FILE` and `kvctl copy --from URL --to URL
//! [PREFIX]`: a store's keys as JSON lines, one object per key, and back.
//!
//! A line holds the key (`key`, or `key_base64` when it is not UTF-8), its typed address
//! when a schema parses it (`type`, `fields`: informational, ignored on import), its `kind`
//! (`value`, `set`, `map` or `list`) and its contents: `value` (text, or `value_base64` for
//! bytes that are not UTF-8), `members` of a set, `entries` of a map (`[field, value]`
//! pairs), `items` of a list; each member, field or item is a string, or `{"base64": ...}`.
//! With `--leases`, a leased key carries `lease_ttl` (seconds left), and import attaches it
//! to a new lease of that TTL.
//!
//! Import reads the whole dump before writing: a line that does not parse writes nothing.
//! Without `--overwrite` it refuses, writing nothing, when any key of the dump exists; it
//! writes in batched transactions whose compares require each key still absent.

use super::Ctx;
use crate::error::{CliError, CliResult, code};
use crate::output::{Format, outln, print_json};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use keyplane::CollectionValue;
use keyplane::migrate::{Item, Value};
use keyplane::{Compare, KeyRange, LeaseId, RangeOptions, Store, Txn, TxnOp};
use serde_json::{Value as Json, json};
use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::time::Duration;

/// One key of a dump: the key and its contents, a migration's [`Item`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    item: Item,
    /// Seconds left on the key's lease, when asked for.
    lease_ttl: Option<u64>,
}

/// The `kind` of a dump line.
fn kind_name(value: &Value) -> &'static str {
    match value {
        Value::Plain(_) => "value",
        Value::Collection(CollectionValue::Set(_)) => "set",
        Value::Collection(CollectionValue::Map(_)) => "map",
        Value::Collection(CollectionValue::List(_)) => "list",
    }
}

/// Bytes as a JSON string, or `{"base64": ...}` when they are not UTF-8.
fn bytes_json(bytes: &[u8]) -> Json {
    match std::str::from_utf8(bytes) {
        Ok(text) => Json::String(text.to_owned()),
        Err(_) => json!({ "base64": B64.encode(bytes) }),
    }
}

fn bytes_of(value: &Json, what: &str) -> Result<Vec<u8>, String> {
    match value {
        Json::String(text) => Ok(text.as_bytes().to_vec()),
        Json::Object(o) => match o.get("base64").and_then(Json::as_str) {
            Some(b) => B64
                .decode(b)
                .map_err(|e| format!("{what}: invalid base64: {e}")),
            None => Err(format!("{what}: expected a string or {{\"base64\": ...}}")),
        },
        _ => Err(format!("{what}: expected a string or {{\"base64\": ...}}")),
    }
}

impl Record {
    /// The record as one JSON line's object.
    pub(crate) fn to_json(&self) -> Json {
        let mut object = serde_json::Map::new();
        match std::str::from_utf8(&self.item.key) {
            Ok(key) => {
                object.insert("key".into(), Json::String(key.to_owned()));
                let mut typed = json!({});
                crate::output::add_typed_address(&mut typed, key);
                if let Json::Object(typed) = typed {
                    object.extend(typed);
                }
            }
            Err(_) => {
                object.insert(
                    "key_base64".into(),
                    Json::String(B64.encode(&self.item.key)),
                );
            }
        }
        object.insert(
            "kind".into(),
            Json::String(kind_name(&self.item.value).into()),
        );
        match &self.item.value {
            Value::Plain(v) => match std::str::from_utf8(v) {
                Ok(text) => {
                    object.insert("value".into(), Json::String(text.to_owned()));
                }
                Err(_) => {
                    object.insert("value_base64".into(), Json::String(B64.encode(v)));
                }
            },
            Value::Collection(CollectionValue::Set(members)) => {
                object.insert(
                    "members".into(),
                    members.iter().map(|m| bytes_json(m)).collect(),
                );
            }
            Value::Collection(CollectionValue::Map(entries)) => {
                object.insert(
                    "entries".into(),
                    entries
                        .iter()
                        .map(|(f, v)| json!([bytes_json(f), bytes_json(v)]))
                        .collect(),
                );
            }
            Value::Collection(CollectionValue::List(items)) => {
                object.insert(
                    "items".into(),
                    items.iter().map(|i| bytes_json(i)).collect(),
                );
            }
        }
        if let Some(ttl) = self.lease_ttl {
            object.insert("lease_ttl".into(), json!(ttl));
        }
        Json::Object(object)
    }

    /// Parses one line's object.
    fn from_json(value: &Json) -> Result<Self, String> {
        let object = value.as_object().ok_or("expected a JSON object")?;
        let key = match (object.get("key"), object.get("key_base64")) {
            (Some(Json::String(key)), None) => key.as_bytes().to_vec(),
            (None, Some(Json::String(b))) => B64
                .decode(b)
                .map_err(|e| format!("key_base64: invalid base64: {e}"))?,
            _ => return Err("expected exactly one of `key` and `key_base64`, a string".into()),
        };
        keyplane::raw::validate_key(&key).map_err(|e| format!("invalid key: {e}"))?;
        let list = |name: &str| -> Result<Vec<Vec<u8>>, String> {
            object
                .get(name)
                .and_then(Json::as_array)
                .ok_or_else(|| format!("a {} needs `{name}`, an array", object["kind"]))?
                .iter()
                .enumerate()
                .map(|(i, v)| bytes_of(v, &format!("{name}[{i}]")))
                .collect()
        };
        let contents = match object.get("kind").and_then(Json::as_str) {
            Some("value") | None => match (object.get("value"), object.get("value_base64")) {
                (Some(Json::String(v)), None) => Value::Plain(v.as_bytes().to_vec()),
                (None, Some(Json::String(b))) => Value::Plain(
                    B64.decode(b)
                        .map_err(|e| format!("value_base64: invalid base64: {e}"))?,
                ),
                _ => {
                    return Err(
                        "a value needs exactly one of `value` and `value_base64`, a string".into(),
                    );
                }
            },
            Some("set") => {
                let members = list("members")?;
                let unique: BTreeSet<&Vec<u8>> = members.iter().collect();
                if unique.len() != members.len() {
                    return Err("a set lists a member twice".into());
                }
                Value::set(members)
            }
            Some("list") => Value::list(list("items")?),
            Some("map") => {
                let entries = object
                    .get("entries")
                    .and_then(Json::as_array)
                    .ok_or("a map needs `entries`, an array of [field, value] pairs")?;
                let mut out = Vec::with_capacity(entries.len());
                let mut seen = BTreeSet::new();
                for (i, pair) in entries.iter().enumerate() {
                    let [field, value] = pair.as_array().map(Vec::as_slice).unwrap_or(&[]) else {
                        return Err(format!("entries[{i}]: expected a [field, value] pair"));
                    };
                    let field = bytes_of(field, &format!("entries[{i}] field"))?;
                    if !seen.insert(field.clone()) {
                        return Err(format!("entries[{i}]: the field appears twice"));
                    }
                    out.push((field, bytes_of(value, &format!("entries[{i}] value"))?));
                }
                Value::map(out)
            }
            Some(other) => {
                return Err(format!("unknown kind {other:?}: value, set, map or list"));
            }
        };
        if contents.kind().is_some() && contents.size() == 0 {
            return Err("an empty collection does not exist in a store: leave it out".into());
        }
        let lease_ttl = match object.get("lease_ttl") {
            None | Some(Json::Null) => None,
            Some(ttl) => match ttl.as_u64() {
                Some(n) if n > 0 => Some(n),
                _ => return Err("lease_ttl: expected a number of seconds above 0".into()),
            },
        };
        Ok(Record {
            item: Item::new(key, contents),
            lease_ttl,
        })
    }
}

/// Every key under `prefix` as records: plain values read at one revision, then each
/// collection's contents.
pub(crate) async fn read(store: &dyn Store, prefix: &str, leases: bool) -> CliResult<Vec<Record>> {
    const PAGE: usize = 1000;
    let bar = crate::output::progress("keys exported");
    let mut opts = RangeOptions::prefix(prefix.as_bytes())
        .limit(PAGE)
        .with_collections();
    let mut records = Vec::new();
    let mut ttls: BTreeMap<LeaseId, u64> = BTreeMap::new();
    loop {
        let page = store.range(opts.clone()).await?;
        for entry in page.entries {
            let lease_ttl = match (leases, entry.lease) {
                (true, Some(id)) => match ttls.get(&id) {
                    Some(ttl) => Some(*ttl),
                    None => {
                        // A lease that expired since the read: its key is going too.
                        let ttl = match store.lease_time_to_live(id).await {
                            Ok(info) => info.remaining.as_secs().max(1),
                            Err(e) if e.kind() == keyplane::ErrorKind::LeaseNotFound => {
                                continue;
                            }
                            Err(e) => return Err(e.into()),
                        };
                        ttls.insert(id, ttl);
                        Some(ttl)
                    }
                },
                _ => None,
            };
            bar.inc(1);
            records.push(Record {
                item: Item::plain(entry.key, entry.value),
                lease_ttl,
            });
        }
        for c in page.collections {
            bar.inc(1);
            if let Some(value) = Value::read(store, &c.key, c.kind).await? {
                records.push(Record {
                    item: Item::new(c.key, value),
                    lease_ttl: None,
                });
            }
        }
        match page.next {
            Some(next) => opts = opts.at_revision(page.revision).after(next),
            None => break,
        }
    }
    bar.finish_and_clear();
    records.sort_by(|a, b| a.item.key.cmp(&b.item.key));
    Ok(records)
}

/// Parses a dump, every line; blank lines are skipped.
///
/// # Errors
/// Exit code 2 naming the first line that does not parse, or a key given twice.
pub(crate) fn parse(reader: impl BufRead, source: &str) -> CliResult<Vec<Record>> {
    let mut records = Vec::new();
    let mut seen = BTreeSet::new();
    for (index, line) in reader.lines().enumerate() {
        let n = index + 1;
        let line = line.map_err(|e| CliError::invalid(format!("{source}: line {n}: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let value: Json = serde_json::from_str(&line)
            .map_err(|e| CliError::invalid(format!("{source}: line {n}: not JSON: {e}")))?;
        let record = Record::from_json(&value)
            .map_err(|e| CliError::invalid(format!("{source}: line {n}: {e}")))?;
        if !seen.insert(record.item.key.clone()) {
            return Err(CliError::invalid(format!(
                "{source}: line {n}: key {} appears twice in the dump",
                keyplane::raw::escape_bytes(&record.item.key)
            )));
        }
        records.push(record);
    }
    Ok(records)
}

/// What an import wrote.
#[derive(Debug, Default)]
pub(crate) struct Written {
    pub(crate) keys: usize,
    pub(crate) transactions: usize,
}

/// Writes `records` into `store`: refused (exit 4, nothing written) when a key exists unless
/// `overwrite`; then in batched transactions, each requiring its keys still absent (unless
/// `overwrite`).
pub(crate) async fn write(
    store: &dyn Store,
    records: &[Record],
    overwrite: bool,
) -> CliResult<Written> {
    let limit = store.capabilities().max_txn_ops.clamp(2, 128);
    if !overwrite {
        let existing = existing(store, records, limit).await?;
        if !existing.is_empty() {
            let shown: Vec<String> = existing
                .iter()
                .take(5)
                .map(|k| keyplane::raw::escape_bytes(k))
                .collect();
            return Err(CliError::new(
                code::CONFLICT,
                format!(
                    "{} keys of the dump exist already ({}{}): nothing written; import with --overwrite to replace them",
                    existing.len(),
                    shown.join(", "),
                    if existing.len() > shown.len() {
                        ", ..."
                    } else {
                        ""
                    }
                ),
            ));
        }
    } else {
        // A collection is replaced whole: what the store holds at its key goes first.
        let deletes: Vec<TxnOp> = records
            .iter()
            .filter(|r| r.item.value.kind().is_some())
            .map(|r| TxnOp::delete(&r.item.key))
            .collect();
        for chunk in deletes.chunks(limit) {
            store.txn(Txn::new().and_then(chunk.to_vec())).await?;
        }
    }
    let mut leases: BTreeMap<u64, LeaseId> = BTreeMap::new();
    for ttl in records.iter().filter_map(|r| r.lease_ttl) {
        if let std::collections::btree_map::Entry::Vacant(slot) = leases.entry(ttl) {
            slot.insert(store.lease_grant(Duration::from_secs(ttl)).await?.id);
        }
    }
    let bar = crate::output::steps(records.len() as u64, "keys imported");
    let mut written = Written::default();
    let mut batch = Batch::default();
    for record in records {
        let ops = ops(record, &leases);
        let guard = (!overwrite).then(|| record.item.absent());
        // Ops of one record may span batches (a large collection); its guard goes with
        // its first op.
        let mut guard = guard;
        for op in ops {
            if batch.len() + 1 + usize::from(guard.is_some()) > limit {
                batch.send(store, &mut written).await?;
            }
            if let Some(compare) = guard.take() {
                batch.compares.push(compare);
            }
            batch.ops.push(op);
        }
        written.keys += 1;
        bar.inc(1);
    }
    batch.send(store, &mut written).await?;
    bar.finish_and_clear();
    Ok(written)
}

#[derive(Default)]
struct Batch {
    compares: Vec<Compare>,
    ops: Vec<TxnOp>,
}

impl Batch {
    fn len(&self) -> usize {
        self.compares.len().max(self.ops.len())
    }

    async fn send(&mut self, store: &dyn Store, written: &mut Written) -> CliResult<()> {
        if self.ops.is_empty() {
            return Ok(());
        }
        let txn = Txn::new()
            .when(std::mem::take(&mut self.compares))
            .and_then(std::mem::take(&mut self.ops));
        let response = store.txn(txn).await?;
        if !response.succeeded {
            return Err(CliError::new(
                code::CONFLICT,
                format!(
                    "another writer created keys of the dump during the import: stopped after {} transactions (their keys are written); import the rest with --overwrite, or again after removing them",
                    written.transactions
                ),
            ));
        }
        written.transactions += 1;
        Ok(())
    }
}

/// The writes of one record: its item's, a plain value attached to the lease of its TTL.
fn ops(record: &Record, leases: &BTreeMap<u64, LeaseId>) -> Vec<TxnOp> {
    let lease = record.lease_ttl.and_then(|ttl| leases.get(&ttl)).copied();
    match (&record.item.value, lease) {
        (Value::Plain(value), Some(lease)) => {
            vec![TxnOp::put_with_lease(&record.item.key, value, lease)]
        }
        _ => record.item.write_ops(),
    }
}

/// The keys of `records` that exist in `store` (as a plain value or a collection).
async fn existing(store: &dyn Store, records: &[Record], limit: usize) -> CliResult<Vec<Vec<u8>>> {
    let mut found = Vec::new();
    let bar = crate::output::progress("keys checked");
    for chunk in records.chunks(limit) {
        // One transaction of compares: when all hold, none of the chunk exists.
        let compares: Vec<Compare> = chunk
            .iter()
            .flat_map(|r| {
                let collection = r.item.value.kind().map(|_| r.item.absent());
                collection.into_iter().chain([Compare::absent(&r.item.key)])
            })
            .collect();
        let clear = if compares.len() <= limit {
            store.txn(Txn::new().when(compares)).await?.succeeded
        } else {
            false
        };
        if !clear {
            for record in chunk {
                if exists(store, record).await? {
                    found.push(record.item.key.clone());
                }
            }
        }
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    Ok(found)
}

async fn exists(store: &dyn Store, record: &Record) -> CliResult<bool> {
    let opts = RangeOptions::new(KeyRange::Key(record.item.key.clone()))
        .with_collections()
        .keys_only();
    let page = store.range(opts).await?;
    Ok(!page.entries.is_empty() || !page.collections.is_empty())
}

/// `kvctl export [PREFIX]`: one JSON line per key on stdout.
pub(crate) async fn export(ctx: &Ctx, prefix: Option<&str>, leases: bool) -> CliResult<()> {
    let prefix = prefix.unwrap_or("");
    let store = ctx.store_for_listing(prefix).await?;
    let records = read(&*store, prefix, leases).await?;
    drop(store);
    for record in &records {
        outln!("{}", record.to_json());
    }
    Ok(())
}

/// `kvctl import FILE` (`-` for stdin).
pub(crate) async fn import(ctx: &Ctx, file: &str, overwrite: bool) -> CliResult<()> {
    let records = if file == "-" {
        parse(std::io::stdin().lock(), "stdin")?
    } else {
        let reader = std::fs::File::open(file)
            .map_err(|e| CliError::invalid(format!("cannot read {file}: {e}")))?;
        parse(std::io::BufReader::new(reader), file)?
    };
    let store = ctx.store().await?;
    let written = write(&*store, &records, overwrite).await?;
    report(ctx.format, "imported", &written);
    Ok(())
}

/// `kvctl copy --from URL --to URL [PREFIX]`.
pub(crate) async fn copy(
    ctx: &Ctx,
    from: &str,
    to: &str,
    prefix: Option<&str>,
    overwrite: bool,
    leases: bool,
) -> CliResult<()> {
    if from == to {
        return Err(CliError::invalid(
            "--from and --to are the same store: nothing to copy",
        ));
    }
    let prefix = prefix.unwrap_or("");
    let records = {
        let source = crate::store::open_for_listing(from, prefix).await?;
        read(&*source, prefix, leases).await?
    };
    let target = crate::store::open(to).await?;
    let written = write(&*target, &records, overwrite).await?;
    report(ctx.format, "copied", &written);
    Ok(())
}

fn report(format: Format, verb: &str, written: &Written) {
    match format {
        Format::Json => print_json(&json!({
            "keys": written.keys,
            "transactions": written.transactions,
        })),
        Format::Table => outln!(
            "{verb} {} keys in {} transactions",
            written.keys,
            written.transactions
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(record: Record) {
        let line = record.to_json().to_string();
        let parsed = parse(line.as_bytes(), "test").unwrap();
        assert_eq!(parsed, [record]);
    }

    #[test]
    fn records_round_trip_through_json_lines() {
        round_trip(Record {
            item: Item::new(
                b"jxt/tenants/1/meta".to_vec(),
                Value::Plain(br#"{"id":1}"#.to_vec()),
            ),
            lease_ttl: Some(30),
        });
        round_trip(Record {
            item: Item::new(vec![0xff, b'k'], Value::Plain(vec![0, 159, 146, 150])),
            lease_ttl: None,
        });
        round_trip(Record {
            item: Item::new(b"s".to_vec(), Value::set([b"a".to_vec(), vec![0xc3]])),
            lease_ttl: None,
        });
        round_trip(Record {
            item: Item::new(b"m".to_vec(), Value::map([(b"f".to_vec(), vec![0xfe])])),
            lease_ttl: None,
        });
        round_trip(Record {
            item: Item::new(b"l".to_vec(), Value::list([b"x".to_vec(), b"x".to_vec()])),
            lease_ttl: None,
        });
    }

    #[test]
    fn bad_lines_name_their_line() {
        let dump = "{\"key\":\"a\",\"value\":\"1\"}\n\n{\"key\":\"b\"}\n";
        let err = parse(dump.as_bytes(), "dump").unwrap_err();
        assert!(err.message.contains("line 3"), "{}", err.message);
        for bad in [
            "not json",
            r#"{"key":"a","kind":"set","members":[]}"#,
            r#"{"key":"a","kind":"set","members":["x","x"]}"#,
            r#"{"key":"a","kind":"map","entries":[["f"]]}"#,
            r#"{"key":"a","kind":"tree","value":"1"}"#,
            r#"{"key":"","value":"1"}"#,
            r#"{"key":"a","value":"1","lease_ttl":0}"#,
            r#"{"key_base64":"!!","value":"1"}"#,
        ] {
            assert!(parse(bad.as_bytes(), "dump").is_err(), "{bad}");
        }
        let twice = "{\"key\":\"a\",\"value\":\"1\"}\n{\"key\":\"a\",\"value\":\"2\"}\n";
        assert!(
            parse(twice.as_bytes(), "dump")
                .unwrap_err()
                .message
                .contains("twice")
        );
    }
}
