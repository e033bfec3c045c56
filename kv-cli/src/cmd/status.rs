//! `kvctl compact REV` and `kvctl status`: the store's history, as `etcdctl compact` and
//! `etcdctl endpoint status` handle it, in the terms every backend shares.

use super::Ctx;
use crate::error::{CliError, CliResult};
use crate::output::{Format, outln, print_json};
use keyplane_core::{ForeignWrites, Retention, Sharding, Store};
use serde_json::{Value, json};
use std::time::Instant;

/// What compacting means on a backend: etcd discards the old revisions of its keys; Redis
/// and sled discard the events of their event log (their keys hold only current values).
fn compaction_meaning(backend: &str) -> &'static str {
    match backend {
        "etcd" => "the server's older revisions are discarded",
        "redis" | "sled" | "memory" => "the event log before it is discarded; values are untouched",
        _ => "the history before it is discarded",
    }
}

/// `kvctl compact REV`: discards the history before revision `revision`; watches and reads
/// at earlier revisions then fail.
///
/// # Errors
/// Exit code 2 for a revision below 1 or beyond the store's (nothing compacted); store
/// errors.
pub(crate) async fn compact(ctx: &Ctx, revision: i64) -> CliResult<()> {
    if revision < 1 {
        return Err(CliError::invalid(format!(
            "compact {revision}: revisions start at 1"
        )));
    }
    let store = ctx.store().await?;
    let backend = store.capabilities().backend;
    store.compact(revision).await?;
    match ctx.format {
        Format::Json => print_json(&json!({
            "compacted": revision,
            "backend": backend,
            "meaning": compaction_meaning(backend),
        })),
        Format::Table => outln!(
            "compacted revision {revision} ({backend}: {})",
            compaction_meaning(backend)
        ),
    }
    Ok(())
}

/// The hosts a store URL names, without credentials or parameters: etcd's endpoints,
/// Redis's server, a cluster's seeds or a sentinel set; the path for sled.
fn hosts(url: &str) -> Vec<String> {
    let Some((_, rest)) = url.split_once("://") else {
        return Vec::new();
    };
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    if url.starts_with("sled://") || url.starts_with("mem://") {
        return vec![rest.to_owned()]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect();
    }
    let authority = rest.split('/').next().unwrap_or_default();
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    authority
        .split(',')
        .filter(|h| !h.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The URL as `status` shows it: a password written in it replaced by `***`.
fn shown(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}{}", &rest[end..])
        }
        None => url.to_owned(),
    }
}

/// What the hosts of a URL are to the store.
fn role_of_hosts(url: &str) -> &'static str {
    let scheme = url.split("://").next().unwrap_or_default();
    match scheme {
        "etcd" => "endpoints",
        s if s.ends_with("+sentinel") => "sentinels",
        s if s.ends_with("+cluster") => "cluster seeds",
        "redis" | "rediss" => "master",
        _ => "path",
    }
}

/// `kvctl status`: backend, hosts, current revision, retained history and the round-trip
/// time of one read.
///
/// # Errors
/// Exit code 3 when the store cannot be reached; store errors.
pub(crate) async fn status(ctx: &Ctx) -> CliResult<()> {
    let store = ctx.store().await?;
    let caps = store.capabilities().clone();
    let revision = match caps.sharding {
        Sharding::Unsharded => Some(store.revision().await?),
        // Each group counts its own revisions: there is no one revision to show.
        Sharding::HashTagGroups => None,
    };
    let started = Instant::now();
    store.get(b"{kvctl}:status").await?;
    let latency = started.elapsed();
    let (retention_text, retention_json) = match caps.history_retention {
        Retention::Revisions(n) => (format!("the last {n} revisions"), json!({ "revisions": n })),
        Retention::UntilCompacted => (
            "until compacted (`kvctl compact`, or the server's own policy)".to_owned(),
            json!("until_compacted"),
        ),
    };
    let foreign = match caps.foreign_writes {
        ForeignWrites::Immediate => "immediately".to_owned(),
        ForeignWrites::Reconciled {
            interval: Some(every),
        } => format!(
            "once reconciled (at the latest every {}ms)",
            every.as_millis()
        ),
        ForeignWrites::Reconciled { interval: None } => "once reconciled".to_owned(),
    };
    let role = role_of_hosts(&ctx.url);
    let hosts = hosts(&ctx.url);
    match ctx.format {
        Format::Json => {
            let mut doc = json!({
                "store": shown(&ctx.url),
                "backend": caps.backend,
                "revision": revision,
                "history_retention": retention_json,
                "persistent": caps.persistent,
                "other_programs_writes_seen": foreign,
                "read_latency_ms": latency.as_secs_f64() * 1000.0,
            });
            doc[role.replace(' ', "_")] = Value::from(hosts);
            print_json(&doc);
        }
        Format::Table => {
            outln!("store:     {}", shown(&ctx.url));
            outln!("backend:   {}", caps.backend);
            outln!("{:<10} {}", format!("{role}:"), hosts.join(", "));
            match revision {
                Some(revision) => outln!("revision:  {revision}"),
                None => outln!("revision:  per hash-tag group (a cluster has no one revision)"),
            }
            outln!("history:   {retention_text}");
            outln!("persistent: {}", caps.persistent);
            outln!("other programs' writes seen: {foreign}");
            outln!("read latency: {:.2}ms", latency.as_secs_f64() * 1000.0);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_without_credentials_or_parameters() {
        assert_eq!(
            hosts("etcd://a:2379,b:2379?namespace=x/"),
            ["a:2379", "b:2379"]
        );
        assert_eq!(hosts("redis://u:p@h:6379/2"), ["h:6379"]);
        assert_eq!(hosts("sled:///tmp/db"), ["/tmp/db"]);
        assert_eq!(shown("redis://u:p@h:6379/2"), "redis://u:***@h:6379/2");
        assert_eq!(shown("etcd://h:2379?ca=/x@y"), "etcd://h:2379?ca=/x@y");
        assert_eq!(role_of_hosts("redis+sentinel://s:26379/m"), "sentinels");
    }
}
