//! `kvctl txn [-f FILE]`: one transaction, as `etcdctl txn` reads and prints it. The text
//! ([`super::txn_parse`]) comes from stdin (with etcdctl's prompts on stderr when stdin is a
//! terminal) or from a file; it is checked whole before anything is sent: a malformed line,
//! or a put whose key a schema knows with a value the schema refuses, writes nothing.

use super::Ctx;
use super::txn_parse::{Line, Parsed, Request};
use crate::error::{CliError, CliResult};
use crate::output::{Format, entry_json, outln, print_json};
use keyplane::{Entry, OpResult, RangeOptions, Store, Txn, TxnOp};
use serde_json::{Value, json};
use std::io::{BufRead, IsTerminal};

/// The input format, for `kvctl txn --help`.
pub(crate) const FORMAT: &str = "\
Input (etcdctl's): compares, a blank line, success requests, a blank line, failure requests.
  compares:  value(\"KEY\") = \"V\"   version(\"KEY\") > \"0\"   create(\"KEY\") = \"0\"
             mod(\"KEY\") < \"5\"    lease(\"KEY\") = \"694d...\" (hex ID; \"0\": none)
             operators =, !=, >, <
  requests:  put [--lease=ID] KEY VALUE    del [--prefix] KEY    get [--prefix] KEY
Strings may be double-quoted, with the escapes \\\" \\\\ \\n \\t \\xNN; a key is unescaped
even unquoted (as every raw key argument). A put to a key a schema knows must pass its
value check. `get --prefix` is read at the transaction's revision, so it may not come before
a write under its prefix in its branch. Prints SUCCESS or FAILURE (exit 0 either way), then
each request's result: OK for a put, the count for a del, key and value lines for a get.

Example:
  mod(\"cfg/a\") = \"0\"

  put cfg/a \"first value\"

  get cfg/a";

pub(crate) async fn run(ctx: &Ctx, file: Option<&str>) -> CliResult<()> {
    let parsed = match file {
        Some(path) if path != "-" => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| CliError::invalid(format!("cannot read {path}: {e}")))?;
            super::txn_parse::parse(text.lines().map(|l| Ok(l.to_owned())), false)?
        }
        _ => {
            let stdin = std::io::stdin();
            let prompt = stdin.is_terminal();
            super::txn_parse::parse(stdin.lock().lines(), prompt)?
        }
    };
    check_puts(&parsed)?;
    check_prefix_reads(&parsed.success)?;
    check_prefix_reads(&parsed.failure)?;
    let ops = |branch: &[Line<Request>]| -> Vec<TxnOp> {
        branch
            .iter()
            .filter_map(|(_, r)| match r {
                Request::Op(op) => Some(op.clone()),
                Request::GetPrefix(_) => None,
            })
            .collect()
    };
    let txn = Txn::new()
        .when(parsed.compares.iter().map(|(_, c)| c.clone()))
        .and_then(ops(&parsed.success))
        .or_else(ops(&parsed.failure));
    let store = ctx.store().await?;
    let response = store.txn(txn).await.map_err(|e| {
        if e.kind() == keyplane::ErrorKind::LeaseNotFound {
            CliError::not_found(format!(
                "a put's lease was not found (expired or revoked): nothing written ({e})"
            ))
        } else {
            e.into()
        }
    })?;
    let branch = if response.succeeded {
        &parsed.success
    } else {
        &parsed.failure
    };
    let mut results = response.results.into_iter();
    let mut done = Vec::new();
    for (_, request) in branch {
        done.push(match request {
            Request::Op(op) => Done::Op(op.clone(), results.next()),
            Request::GetPrefix(prefix) => Done::Range(
                prefix.clone(),
                read_prefix(store.as_ref(), prefix, response.revision).await?,
            ),
        });
    }
    match ctx.format {
        Format::Json => print_json(&json!({
            "succeeded": response.succeeded,
            "revision": response.revision,
            "results": done.iter().map(Done::json).collect::<Vec<_>>(),
        })),
        Format::Table => {
            outln!(
                "{}",
                if response.succeeded {
                    "SUCCESS"
                } else {
                    "FAILURE"
                }
            );
            for result in &done {
                outln!();
                result.print();
            }
        }
    }
    Ok(())
}

/// Refuses, before anything is written, a put whose key a schema parses and whose value
/// that schema refuses (as `kvctl put` does); a key of no schema is written as given.
fn check_puts(parsed: &Parsed) -> CliResult<()> {
    for (line, request) in parsed.success.iter().chain(&parsed.failure) {
        if let Request::Op(TxnOp::Put { key, value, .. }) = request
            && let Ok(text) = std::str::from_utf8(key)
            && crate::catalog::parse_any(text).is_ok()
        {
            super::put::check(text, value)
                .map_err(|e| CliError::invalid(format!("line {line}: {}", e.message)))?;
        }
    }
    Ok(())
}

/// Refuses a `get --prefix` followed, in its branch, by a write under its prefix: it is read
/// after the transaction, and would show that write.
fn check_prefix_reads(branch: &[Line<Request>]) -> CliResult<()> {
    for (index, (line, request)) in branch.iter().enumerate() {
        let Request::GetPrefix(prefix) = request else {
            continue;
        };
        let later = branch[index + 1..].iter().find(|(_, r)| match r {
            Request::Op(TxnOp::DeletePrefix { prefix: p }) => {
                p.starts_with(prefix) || prefix.starts_with(p)
            }
            Request::Op(op) => op.is_write() && op.key().starts_with(prefix),
            Request::GetPrefix(_) => false,
        });
        if let Some((write, _)) = later {
            return Err(CliError::invalid(format!(
                "line {line}: `get --prefix` is read at the transaction's end, so it cannot come \
                 before the write under its prefix on line {write}: move it after"
            )));
        }
    }
    Ok(())
}

/// The entries under `prefix` at `revision`, page by page.
async fn read_prefix(store: &dyn Store, prefix: &[u8], revision: i64) -> CliResult<Vec<Entry>> {
    let mut opts = RangeOptions::prefix(prefix).at_revision(revision);
    let mut entries = Vec::new();
    loop {
        let page = store.range(opts.clone()).await?;
        entries.extend(page.entries);
        match page.next {
            Some(next) => opts = opts.after(next),
            None => return Ok(entries),
        }
    }
}

/// A request of the branch that ran, with its result.
enum Done {
    Op(TxnOp, Option<OpResult>),
    Range(Vec<u8>, Vec<Entry>),
}

impl Done {
    /// As `etcdctl txn` prints it: `OK`, the deleted count, or each key and value.
    fn print(&self) {
        match self {
            Done::Op(TxnOp::Put { .. }, _) => outln!("OK"),
            Done::Op(_, Some(OpResult::Delete { deleted })) => outln!("{deleted}"),
            Done::Op(_, Some(OpResult::Get(entry))) => entry.iter().for_each(print_entry),
            Done::Range(_, entries) => entries.iter().for_each(print_entry),
            Done::Op(_, _) => {}
        }
    }

    /// One object per request: `op`, `key`, and what it did.
    fn json(&self) -> Value {
        let key = |k: &[u8]| crate::keys::text(k);
        match self {
            Done::Op(TxnOp::Put { key: k, lease, .. }, _) => json!({
                "op": "put", "key": key(k), "lease": lease.map(|l| l.to_string()),
            }),
            Done::Op(op @ (TxnOp::Delete { .. } | TxnOp::DeletePrefix { .. }), result) => {
                let deleted = match result {
                    Some(OpResult::Delete { deleted }) => *deleted,
                    _ => 0,
                };
                let prefix = matches!(op, TxnOp::DeletePrefix { .. });
                json!({ "op": "del", "key": key(op.key()), "prefix": prefix, "deleted": deleted })
            }
            Done::Op(op, result) => {
                let kvs: Vec<Value> = match result {
                    Some(OpResult::Get(Some(entry))) => vec![entry_json(entry, true)],
                    _ => Vec::new(),
                };
                json!({ "op": "get", "key": key(op.key()), "prefix": false, "kvs": kvs })
            }
            Done::Range(prefix, entries) => json!({
                "op": "get", "key": key(prefix), "prefix": true,
                "kvs": entries.iter().map(|e| entry_json(e, true)).collect::<Vec<_>>(),
            }),
        }
    }
}

/// A key and its value, one line each, as `etcdctl get` prints them: the value as it is when
/// it is text, else escaped (every byte `\xNN` with `--hex`).
fn print_entry(entry: &Entry) {
    outln!("{}", crate::keys::text(&entry.key));
    let value = match std::str::from_utf8(&entry.value) {
        Ok(text) if !crate::keys::hex() => text.to_owned(),
        _ => crate::keys::text(&entry.value),
    };
    outln!("{value}");
}
