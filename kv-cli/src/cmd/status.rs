//! `kvctl compact REV` and `kvctl status`: the store's history, as `etcdctl compact` and
//! `etcdctl endpoint status` handle it, in the terms every backend shares.

use super::Ctx;
use crate::error::{CliError, CliResult};
use crate::output::{Format, outln, print_json};
use keyplane::{ForeignWrites, Member, Retention, ServerStatus, Sharding, Store};
use serde_json::{Value, json};
use std::time::Instant;

/// What compacting means on a backend: etcd discards the old revisions of its keys; Redis
/// redb and sled discard the events of their event log (their keys hold only current values).
fn compaction_meaning(backend: &str) -> &'static str {
    match backend {
        "etcd" => "the server's older revisions are discarded",
        "redis" | "redb" | "sled" | "memory" => {
            "the event log before it is discarded; values are untouched"
        }
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
/// Redis's server, a cluster's seeds or a sentinel set; the path for redb and sled.
fn hosts(url: &str) -> Vec<String> {
    let Some((_, rest)) = url.split_once("://") else {
        return Vec::new();
    };
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    if crate::store::is_embedded(url) || url.starts_with("mem://") {
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

/// One member as the table shows it: name, role, ID and client URLs.
fn member_line(member: &Member) -> String {
    let mut line = format!("{} ({})", member.name, member.role);
    if let Some(id) = &member.id {
        line.push_str(&format!(" id {id}"));
    }
    if member.client_urls != [member.name.clone()] && !member.client_urls.is_empty() {
        line.push_str(&format!(" {}", member.client_urls.join(",")));
    }
    line
}

/// A size in bytes as etcdctl prints one (`20 kB`, `1.2 MB`: powers of 1000).
fn size_text(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut size = bytes as f64;
    let mut unit = 0;
    while size >= 1000.0 && unit + 1 < UNITS.len() {
        size /= 1000.0;
        unit += 1;
    }
    if unit == 0 || size >= 10.0 {
        format!("{size:.0} {}", UNITS[unit])
    } else {
        format!("{size:.1} {}", UNITS[unit])
    }
}

/// The server's part of `status` in JSON: version, members (each with `leader`), database
/// size and Raft term; or, when the server would not say (a user not allowed to ask), the
/// error in `server_error`.
fn server_json(server: &Result<ServerStatus, keyplane::Error>) -> Value {
    match server {
        Ok(status) => {
            let members: Vec<Value> = status
                .members
                .iter()
                .map(|m| {
                    json!({
                        "name": m.name,
                        "id": m.id,
                        "role": m.role,
                        "leader": m.is_leader(),
                        "client_urls": m.client_urls,
                    })
                })
                .collect();
            json!({
                "version": status.version,
                "members": members,
                "db_size": status.db_size,
                "raft_term": status.raft_term,
            })
        }
        Err(e) => json!({ "version": null, "members": [], "server_error": e.to_string() }),
    }
}

/// Prints the server's part of `status` as table lines.
fn server_table(server: &Result<ServerStatus, keyplane::Error>) {
    let status = match server {
        Ok(status) => status,
        Err(e) => {
            outln!("version:   unknown (the server would not say: {e})");
            return;
        }
    };
    match &status.version {
        Some(version) => outln!("version:   {version}"),
        None => outln!("version:   none (an embedded store has no server)"),
    }
    if let Some(size) = status.db_size {
        outln!("db size:   {}", size_text(size));
    }
    if let Some(term) = status.raft_term {
        outln!("raft term: {term}");
    }
    if !status.members.is_empty() {
        outln!("members:");
        for member in &status.members {
            outln!("  {}", member_line(member));
        }
    }
}

/// `kvctl status`: backend, hosts, server version and members, current revision, retained
/// history and the round-trip time of one read.
///
/// # Errors
/// Exit code 3 when the store cannot be reached; store errors. A server that will not give
/// its status (a Redis user without `INFO`) is shown as such, not an error.
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
    let server = match store.server_status().await {
        Err(e) if e.kind() == keyplane::ErrorKind::Unavailable => return Err(e.into()),
        server => server,
    };
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
            if let (Some(doc), Value::Object(server)) = (doc.as_object_mut(), server_json(&server))
            {
                doc.extend(server);
            }
            print_json(&doc);
        }
        Format::Table => {
            outln!("store:     {}", shown(&ctx.url));
            outln!("backend:   {}", caps.backend);
            outln!("{:<10} {}", format!("{role}:"), hosts.join(", "));
            server_table(&server);
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

    #[test]
    fn sizes_print_as_etcdctl_prints_them() {
        assert_eq!(size_text(20_480), "20 kB");
        assert_eq!(size_text(1_234_567), "1.2 MB");
        assert_eq!(size_text(512), "512 B");
    }
}
