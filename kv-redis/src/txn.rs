//! Writes: transactions, encoded into the arguments of one Lua script run (see
//! `scripts/txn.lua`), and the single-key `put` and `delete` with their own cheaper paths,
//! dedicated scripts that share the transaction script's helpers.

use crate::core::commit::Writer;
use crate::core::decode::{array, byte_list, bytes, corrupted, int, opt_bytes, opt_entry};
use crate::core::{Core, prefix_lex_bounds, value_digest};
use keyplane_contract::{
    CollectionKind, CollectionOp, CollectionResult, Compare, CompareOp, CompareTarget,
    Continuation, DeleteResult, Entry, OpResult, PutOptions, PutResult, Result, Txn, TxnOp,
    TxnResponse,
};
use redis::{Cmd, Value};

/// A transaction (checked by the contract's front) as one script run.
pub(crate) async fn txn(core: &Core, txn: Txn) -> Result<TxnResponse> {
    // A prefix delete finds keys through the store's indexes: first every string and
    // collection that other programs wrote under the prefix joins them.
    for op in txn.success.iter().chain(&txn.failure) {
        if let TxnOp::DeletePrefix { prefix } = op {
            crate::reconcile::adopt_prefix(core, prefix).await?;
        }
    }
    let mut args = Cmd::new();
    let max = core.config.max_prefix_delete_keys;
    let writer = match (&txn.compares[..], &txn.success[..], &txn.failure[..]) {
        // A lone rotation (the balancer's pick) has a script of its own.
        ([], [TxnOp::Collection(CollectionOp::ListRotate { key })], []) => {
            args.arg(key.as_slice());
            Writer::Rotate
        }
        // And so does a lone rotation that reads the moved item's map.
        (
            [],
            [
                TxnOp::Collection(CollectionOp::ListRotateGet {
                    key,
                    map_prefix,
                    map_suffix,
                    field,
                }),
            ],
            [],
        ) => {
            args.arg(key.as_slice())
                .arg(field.as_slice())
                .arg(map_prefix.as_slice())
                .arg(map_suffix.as_slice());
            Writer::Rotate
        }
        _ => {
            encode(&txn, max, &mut args);
            Writer::Txn
        }
    };
    let reply = core.commit(writer, args, weight(&txn, max), "txn").await?;
    let mut parts = array(reply)?.into_iter();
    let (Some(succeeded), Some(revision), Some(results)) =
        (parts.next(), parts.next(), parts.next())
    else {
        return Err(corrupted("a transaction reply has three parts"));
    };
    let succeeded = int(succeeded)? == 1;
    let branch = if succeeded {
        &txn.success
    } else {
        &txn.failure
    };
    let results = array(results)?;
    if results.len() != branch.len() {
        return Err(corrupted("a transaction reply has one result per op"));
    }
    Ok(TxnResponse {
        succeeded,
        revision: int(revision)?,
        results: branch
            .iter()
            .zip(results)
            .map(|(op, value)| decode_result(op, value))
            .collect::<Result<_>>()?,
    })
}

/// One put through `scripts/put.lua`: the same checks, revision, metadata, index, lease and
/// log entry as a one-op transaction. `key` and `value` were checked by the contract's
/// front.
pub(crate) async fn put(
    core: &Core,
    key: &[u8],
    value: &[u8],
    opts: PutOptions,
) -> Result<PutResult> {
    let lease = opts.lease.map_or(0, |l| l.0).to_string();
    let want_prev: &[u8] = if opts.prev { b"1" } else { b"0" };
    let digest = value_digest(value);
    let mut args = Cmd::new();
    args.arg(key)
        .arg(value)
        .arg(lease.as_bytes())
        .arg(want_prev)
        .arg(&digest[..]);
    let reply = core.commit(Writer::Put, args, 1, "put").await?;
    let (revision, prev) = revision_and_prev(key, reply)?;
    Ok(PutResult { revision, prev })
}

/// One delete through `scripts/delete.lua`; returns the previous entry of the plain key.
/// `key` was checked by the contract's front.
pub(crate) async fn delete(core: &Core, key: &[u8]) -> Result<DeleteResult> {
    let mut args = Cmd::new();
    args.arg(key);
    let reply = core.commit(Writer::Delete, args, 1, "delete").await?;
    let (revision, prev) = revision_and_prev(key, reply)?;
    Ok(DeleteResult { revision, prev })
}

/// A `{ revision, { value, meta } or false }` reply.
fn revision_and_prev(key: &[u8], reply: Value) -> Result<(i64, Option<Entry>)> {
    let mut parts = array(reply)?.into_iter();
    let (Some(revision), Some(prev)) = (parts.next(), parts.next()) else {
        return Err(corrupted(
            "a write reply has a revision and a previous entry",
        ));
    };
    Ok((int(revision)?, opt_entry(key, prev)?))
}

/// A transaction's work, which bounds the group commit's batches (see `core::commit`): a key
/// per compare and op, and for its prefix deletes the most keys they may remove together,
/// `max_prefix_delete_keys` (how many they remove is known only when the transaction runs),
/// so that a transaction with a prefix delete never shares a call with work beyond it.
fn weight(txn: &Txn, max_prefix_delete_keys: u64) -> u64 {
    let ops = txn.compares.len() + txn.success.len() + txn.failure.len();
    let prefix_deletes = txn
        .success
        .iter()
        .chain(&txn.failure)
        .any(|op| matches!(op, TxnOp::DeletePrefix { .. }));
    let ops = u64::try_from(ops).unwrap_or(u64::MAX);
    ops.saturating_add(if prefix_deletes {
        max_prefix_delete_keys
    } else {
        0
    })
}

/// Adds the script's arguments after the shared ones to `call`: the most keys the prefix
/// deletes may remove together, the compares, then both branches.
pub(crate) fn encode(txn: &Txn, max_prefix_delete_keys: u64, call: &mut Cmd) {
    call.arg(max_prefix_delete_keys).arg(txn.compares.len());
    for compare in &txn.compares {
        encode_compare(compare, call);
    }
    for branch in [&txn.success, &txn.failure] {
        call.arg(branch.len());
        for op in branch {
            encode_op(op, call);
        }
    }
}

/// Five words per compare: key, target, op, operand, and the member or field of a
/// collection compare (empty otherwise). A collection target names the Redis type it
/// reads: `M`/`S` (member count, size) followed by `s`, `h` or `l`.
fn encode_compare(compare: &Compare, call: &mut Cmd) {
    let tag = |kind: &CollectionKind| match kind {
        CollectionKind::Set => 's',
        CollectionKind::Map => 'h',
        CollectionKind::List => 'l',
    };
    let number = |n: &i64| n.to_string().into_bytes();
    let (target, operand, member) = match &compare.target {
        CompareTarget::Version(v) => ("v".to_owned(), number(v), Vec::new()),
        CompareTarget::CreateRevision(r) => ("c".to_owned(), number(r), Vec::new()),
        CompareTarget::ModRevision(r) => ("m".to_owned(), number(r), Vec::new()),
        CompareTarget::Lease(l) => ("l".to_owned(), number(l), Vec::new()),
        CompareTarget::Value(v) => ("V".to_owned(), v.clone(), Vec::new()),
        CompareTarget::Member {
            kind,
            member,
            count,
        } => (format!("M{}", tag(kind)), number(count), member.clone()),
        CompareTarget::Field { field, value } => ("F".to_owned(), value.clone(), field.clone()),
        CompareTarget::Size { kind, size } => (format!("S{}", tag(kind)), number(size), Vec::new()),
    };
    let op = match compare.op {
        CompareOp::Equal => "=",
        CompareOp::NotEqual => "!",
        CompareOp::Greater => ">",
        CompareOp::Less => "<",
    };
    call.arg(&compare.key)
        .arg(target)
        .arg(op)
        .arg(operand)
        .arg(member);
}

fn encode_op(op: &TxnOp, call: &mut Cmd) {
    let mut push = |words: &[&[u8]]| {
        for word in words {
            call.arg(*word);
        }
    };
    match op {
        TxnOp::Get { key } => push(&[b"g", key]),
        TxnOp::Put { key, value, lease } => {
            let lease = lease.map_or(0, |l| l.0).to_string();
            push(&[b"p", key, value, lease.as_bytes(), &value_digest(value)])
        }
        TxnOp::Delete { key } => push(&[b"d", key]),
        TxnOp::DeletePrefix { prefix } => {
            let (min, max) = prefix_lex_bounds(prefix);
            push(&[b"D", &min, &max])
        }
        TxnOp::Collection(c) => match c {
            CollectionOp::SetAdd { key, member } => push(&[b"sa", key, member]),
            CollectionOp::SetRemove { key, member } => push(&[b"sr", key, member]),
            CollectionOp::SetContains { key, member } => push(&[b"sc", key, member]),
            CollectionOp::SetMembers { key } => push(&[b"sm", key]),
            CollectionOp::SetScan { key, after, limit } => {
                // Redis resumes a scan from its own cursor, which the continuation carries.
                let cursor = after.as_ref().map_or(&b"0"[..], Continuation::start_key);
                push(&[b"ss", key, cursor, limit.to_string().as_bytes()])
            }
            CollectionOp::MapPut { key, field, value } => push(&[b"mp", key, field, value]),
            CollectionOp::MapGet { key, field } => push(&[b"mg", key, field]),
            CollectionOp::MapDelete { key, field } => push(&[b"md", key, field]),
            CollectionOp::MapGetAll { key } => push(&[b"ma", key]),
            CollectionOp::ListPush { key, value } => push(&[b"lp", key, value]),
            CollectionOp::ListPushFront { key, value } => push(&[b"lf", key, value]),
            CollectionOp::ListRemove { key, value } => push(&[b"lr", key, value]),
            CollectionOp::ListRange { key, start, stop } => push(&[
                b"lg",
                key,
                start.to_string().as_bytes(),
                stop.to_string().as_bytes(),
            ]),
            CollectionOp::ListRotate { key } => push(&[b"lo", key]),
            CollectionOp::ListRotateGet {
                key,
                map_prefix,
                map_suffix,
                field,
            } => push(&[b"lk", key, field, map_prefix, map_suffix]),
            CollectionOp::ListLen { key } => push(&[b"ll", key]),
        },
    }
}

fn decode_result(op: &TxnOp, value: Value) -> Result<OpResult> {
    Ok(match op {
        TxnOp::Get { key } => OpResult::Get(opt_entry(key, value)?),
        TxnOp::Put { .. } => OpResult::Put,
        TxnOp::Delete { .. } | TxnOp::DeletePrefix { .. } => OpResult::Delete {
            deleted: count(value)?,
        },
        TxnOp::Collection(c) => OpResult::Collection(decode_collection(c, value)?),
    })
}

fn count(value: Value) -> Result<u64> {
    u64::try_from(int(value)?).map_err(|_| corrupted("a negative count"))
}

fn decode_collection(op: &CollectionOp, value: Value) -> Result<CollectionResult> {
    Ok(match op {
        CollectionOp::SetAdd { .. }
        | CollectionOp::SetRemove { .. }
        | CollectionOp::MapPut { .. }
        | CollectionOp::MapDelete { .. } => CollectionResult::Changed(int(value)? > 0),
        CollectionOp::SetContains { .. } => CollectionResult::Contains(int(value)? == 1),
        CollectionOp::SetMembers { .. } => {
            let mut members = byte_list(value)?;
            members.sort();
            CollectionResult::Members(members)
        }
        CollectionOp::SetScan { .. } => {
            let mut parts = array(value)?.into_iter();
            let (Some(cursor), Some(members)) = (parts.next(), parts.next()) else {
                return Err(corrupted("an SSCAN reply has a cursor and members"));
            };
            let cursor = bytes(cursor)?;
            CollectionResult::Page {
                members: byte_list(members)?,
                next: (cursor != b"0").then(|| Continuation::starting_at(cursor)),
            }
        }
        CollectionOp::MapGet { .. } | CollectionOp::ListRotate { .. } => {
            CollectionResult::Value(opt_bytes(value)?)
        }
        CollectionOp::MapGetAll { .. } => {
            let flat = byte_list(value)?;
            let mut fields: Vec<(Vec<u8>, Vec<u8>)> = flat
                .chunks_exact(2)
                .map(|pair| (pair[0].clone(), pair[1].clone()))
                .collect();
            fields.sort();
            CollectionResult::Fields(fields)
        }
        CollectionOp::ListRange { .. } => CollectionResult::Items(byte_list(value)?),
        CollectionOp::ListRotateGet { .. } => {
            let mut parts = array(value)?.into_iter();
            let (Some(item), Some(value)) = (parts.next(), parts.next()) else {
                return Err(corrupted("a rotation's reply has an item and a value"));
            };
            CollectionResult::Rotated {
                item: opt_bytes(item)?,
                value: opt_bytes(value)?,
            }
        }
        CollectionOp::ListPush { .. }
        | CollectionOp::ListPushFront { .. }
        | CollectionOp::ListRemove { .. }
        | CollectionOp::ListLen { .. } => CollectionResult::Count(count(value)?),
    })
}
