//! `kvctl watch ADDRESS [--rev N] [--exact] [--prev-kv] [--no-follow]`: live events under a directory (of
//! one exact key with `--exact`), each key read through the catalog, until Ctrl-C; with
//! `--rev`, the history from revision N first; with `--prev-kv`, each event's previous value.
//! On a Redis server it also follows what other programs write under the directory (see
//! [`follow_redis`]), unless `--no-follow` asks for the writes made through keyplane alone.

use super::Ctx;
use crate::address::Address;
use crate::error::{CliError, CliResult, code};
use crate::output::{Format, typed, value_json};
use futures::StreamExt;
use keyplane::redis::RedisStore;
use keyplane::{CollectionChange, Event, WatchOptions};
use serde_json::json;
use std::time::Duration;

/// How often `kvctl watch` on Redis scans the watched prefix in full for other programs'
/// writes: the whole delay where the server sends no keyspace notifications, the safety net
/// where it does. Each pass `SCAN`s the database and checks every key the store tracks
/// under the prefix, so a shorter period would load a large database for little gain in
/// a terminal.
pub(crate) const FOLLOW_SCAN: Duration = Duration::from_secs(2);

/// What a watch covers beside its address and start.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Scope {
    /// Only the address's own key (`--exact`), not the directory under it.
    pub(crate) exact: bool,
    /// Show each event's previous value (`--prev-kv`).
    pub(crate) prev_kv: bool,
    /// On Redis, do not follow other programs' writes (`--no-follow`): no second store,
    /// no reconciler, no `CONFIG SET`.
    pub(crate) no_follow: bool,
}

pub(crate) async fn run(
    ctx: &Ctx,
    words: &[String],
    from: Option<i64>,
    scope: Scope,
) -> CliResult<()> {
    let address = Address::parse(words)?;
    // The directory the watch follows foreign writes under; the key itself with --exact.
    let (prefix, base) = if scope.exact {
        let key = address.key_bytes()?;
        let opts = WatchOptions::key(&key);
        (key, opts)
    } else {
        let prefix = address.prefix_bytes()?;
        let opts = WatchOptions::prefix(&prefix);
        (prefix, opts)
    };
    let mut base = base.with_collections();
    if scope.prev_kv {
        base = base.with_prev();
    }
    if matches!(from, Some(n) if n < 1) {
        return Err(CliError::invalid("--rev must be at least 1"));
    }
    if crate::store::is_embedded(&ctx.url) {
        return follow_embedded(ctx, &base, from, scope).await;
    }
    let (store, redis) = crate::store::open_any(&ctx.url).await?;
    let mut opts = base;
    if let Some(revision) = from {
        opts = opts.from_revision(revision);
    }
    let mut stream = store.watch(opts).await?;
    // Started once the watch has its start, so that nothing it brings in is missed; it
    // follows for as long as it is held.
    let _follower = match redis {
        // A reconciler's root is text: a binary prefix is watched without following.
        Some(redis) if !scope.no_follow => match std::str::from_utf8(&prefix) {
            Ok(prefix) => follow_redis(&redis, prefix).await?,
            Err(_) => None,
        },
        _ => None,
    };
    let mut interrupted = crate::interrupt::Interrupt::install()?;
    loop {
        // Biased: an interrupt ends the watch before the next event is printed.
        tokio::select! {
            biased;
            () = interrupted.recv() => return Ok(()),
            next = stream.next() => match next {
                Some(Ok(batch)) => {
                    for event in &batch.events {
                        let group = batch.group.as_deref();
                        print_event(ctx.format, batch.revision, group, event, scope);
                    }
                }
                Some(Err(e)) => return Err(e.into()),
                None => return Err(CliError::new(code::UNREACHABLE, "the watch ended")),
            },
        }
    }
}

/// On a single Redis server, a second store with the same configuration whose background
/// reconciler has `prefix` as its one root, so that the watch reports other programs' writes
/// under it (`redis-cli SET`, the seed systems' own services): within milliseconds through
/// keyspace notifications where the server sends them (the store turns them on with
/// `CONFIG SET` where the user may, as `RedisConfig::keyspace_notifications` asks), and
/// within [`FOLLOW_SCAN`] through the periodic scan where it does not. Its first pass brings
/// in what other programs wrote before the watch started, as events of their own. `None` on
/// a Redis Cluster, where the store runs no reconciler.
///
/// # Errors
/// The store's errors connecting again (a prefix under the internal prefix is `Config`).
async fn follow_redis(redis: &RedisStore, prefix: &str) -> CliResult<Option<RedisStore>> {
    if redis.config().is_cluster() {
        return Ok(None);
    }
    let mut config = redis.config().clone();
    config.reconcile_roots = vec![prefix.to_owned()];
    config.reconcile_interval = FOLLOW_SCAN;
    Ok(Some(RedisStore::open(config).await?))
}

/// `watch` on an embedded store (redb, sled), which one process at a time may hold open: each poll opens the
/// store, prints the events published since the last one (read from the store's event log,
/// which persists), and closes it, so that other kvctl processes write in between. A put
/// from another terminal shows within a poll ([`EMBEDDED_POLL`](crate::store::EMBEDDED_POLL)).
async fn follow_embedded(
    ctx: &Ctx,
    base: &WatchOptions,
    from: Option<i64>,
    scope: Scope,
) -> CliResult<()> {
    let mut interrupted = crate::interrupt::Interrupt::install()?;
    let mut next = from;
    loop {
        tokio::select! {
            biased;
            () = interrupted.recv() => return Ok(()),
            polled = poll_embedded(ctx, base, next, scope) => next = Some(polled?),
        }
        tokio::select! {
            biased;
            () = interrupted.recv() => return Ok(()),
            () = tokio::time::sleep(crate::store::EMBEDDED_POLL) => {}
        }
    }
}

/// One poll: opens the store, prints the events `base` covers from revision `next` (from now
/// on when `None`) up to the store's revision, closes it; returns the next revision to read.
async fn poll_embedded(
    ctx: &Ctx,
    base: &WatchOptions,
    next: Option<i64>,
    scope: Scope,
) -> CliResult<i64> {
    let store = ctx.store().await?;
    let start = match next {
        Some(next) => next,
        None => store.revision().await? + 1,
    };
    let opts = base.clone().from_revision(start).with_progress();
    let mut stream = match store.watch(opts).await {
        Ok(stream) => stream,
        Err(e) => match e.kind() {
            keyplane::ErrorKind::Compacted { compact_revision } if next.is_some() => {
                // Only when following: an explicit --rev that is gone is an error.
                eprintln!(
                    "kvctl: the events from revision {start} to {} were compacted; following from {compact_revision}",
                    compact_revision - 1
                );
                return Ok(compact_revision);
            }
            _ => return Err(e.into()),
        },
    };
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        if batch.is_progress() {
            return Ok(batch.revision + 1);
        }
        for event in &batch.events {
            print_event(ctx.format, batch.revision, None, event, scope);
        }
    }
    Err(CliError::new(code::UNREACHABLE, "the watch ended"))
}

/// Prints one event at `revision`; on a store sharded into co-location groups, `group` names
/// the group whose revision it is (`{group}@revision` in the table). With `--prev-kv`, a PUT
/// or DELETE also shows the value it replaced or removed (`(prev VALUE)` in the table,
/// `prev_value` and `prev_mod_revision` in JSON, null when the key was absent).
fn print_event(format: Format, revision: i64, group: Option<&[u8]>, event: &Event, scope: Scope) {
    let group = group.map(|g| String::from_utf8_lossy(g).into_owned());
    let key = crate::keys::text(event.key());
    let typed = typed(&key);
    let (kind, value, detail) = match event {
        Event::Put { entry, .. } => ("PUT", Some(entry.value.clone()), None),
        Event::Delete { .. } => ("DELETE", None, None),
        Event::Collection(c) => collection_change(&c.change),
    };
    let value = value.as_ref();
    let prev = match event {
        Event::Put { prev, .. } | Event::Delete { prev, .. } if scope.prev_kv => Some(prev),
        _ => None,
    };
    match format {
        Format::Json => {
            let mut object = event_json(revision, group.as_deref(), event);
            if let Some(prev) = prev {
                object["prev_value"] = json!(prev.as_ref().map(|p| value_json(&p.value)));
                object["prev_mod_revision"] = json!(prev.as_ref().map(|p| p.mod_revision));
            }
            crate::output::outln!("{object}");
        }
        Format::Table => {
            let typed = typed
                .map(|(a, f)| {
                    let f: Vec<String> = f.iter().map(|(n, v)| format!("{n}={v}")).collect();
                    format!("  [{a} {}]", f.join(" "))
                })
                .unwrap_or_default();
            let detail = detail
                .map(|d| format!("  {}", keyplane::raw::escape_bytes(&d)))
                .unwrap_or_default();
            let value = value
                .map(|v| format!("  {}", value_json(v)))
                .unwrap_or_default();
            let prev = match prev {
                Some(Some(prev)) => format!("  (prev {})", value_json(&prev.value)),
                Some(None) => "  (prev none)".to_owned(),
                None => String::new(),
            };
            let value = format!("{detail}{value}{prev}");
            let revision = match &group {
                Some(group) => format!("{{{group}}}@{revision}"),
                None => revision.to_string(),
            };
            crate::output::outln!("{revision:>6} {kind:<6} {key}{typed}{value}");
        }
    }
}

/// One event as `watch -o json` prints it: revision, event name (`PUT`, `DELETE`, `SADD`...),
/// key, typed address and fields, value, member, and the group on a sharded store.
pub(crate) fn event_json(revision: i64, group: Option<&str>, event: &Event) -> serde_json::Value {
    let key = crate::keys::text(event.key());
    let (kind, value, detail) = match event {
        Event::Put { entry, .. } => ("PUT", Some(entry.value.clone()), None),
        Event::Delete { .. } => ("DELETE", None, None),
        Event::Collection(c) => collection_change(&c.change),
    };
    let (address, fields) = typed(&key).unzip();
    let fields = fields.map(|f| {
        f.into_iter()
            .map(|(n, v)| (n.to_owned(), json!(v)))
            .collect::<serde_json::Map<_, _>>()
    });
    let mut object = json!({
        "revision": revision,
        "event": kind,
        "key": key,
        "type": address,
        "fields": fields,
        "value": value.map(|v| value_json(&v)),
        "member": detail.map(|d| value_json(&d)),
    });
    if let Some(group) = group {
        object["group"] = json!(group);
    }
    object
}

/// The Redis-style name of a collection change, the value it sets (map put) and the member,
/// field or item it names.
fn collection_change(
    change: &CollectionChange,
) -> (&'static str, Option<Vec<u8>>, Option<Vec<u8>>) {
    match change {
        CollectionChange::SetAdd { member } => ("SADD", None, Some(member.clone())),
        CollectionChange::SetRemove { member } => ("SREM", None, Some(member.clone())),
        CollectionChange::MapPut { field, value, .. } => {
            ("HSET", Some(value.clone()), Some(field.clone()))
        }
        CollectionChange::MapDelete { field, .. } => ("HDEL", None, Some(field.clone())),
        CollectionChange::ListPush { item } => ("RPUSH", None, Some(item.clone())),
        CollectionChange::ListPushFront { item } => ("LPUSH", None, Some(item.clone())),
        CollectionChange::ListRemove { item, .. } => ("LREM", None, Some(item.clone())),
        CollectionChange::ListRotate { item } => ("LMOVE", None, Some(item.clone())),
        CollectionChange::Deleted => ("DEL", None, None),
    }
}
