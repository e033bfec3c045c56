//! `kvctl lease grant|keep-alive|revoke|ttl|list`: the store's leases, as `etcdctl lease`
//! shows them. A lease's ID is printed in hex, as etcdctl prints it, and read back in hex
//! (`put --lease ID`, `lease ttl ID`).

use super::Ctx;
use crate::error::{CliError, CliResult};
use crate::output::{Format, outln, print_json};
use keyplane::{ErrorKind, LeaseId, Store};
use serde_json::json;
use std::time::Duration;

/// The lease subcommands.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum Action {
    /// Grant a lease of TTL (30s, 1m, 500ms; a bare number is seconds) and print its ID.
    Grant {
        /// The lease's time to live.
        ttl: String,
    },
    /// Renew a lease to its granted TTL, one line per renewal, until Ctrl-C or until the
    /// lease is revoked or expires.
    KeepAlive {
        /// The lease's ID (hex, as `lease grant` prints it).
        id: String,
        /// Renew once and exit.
        #[arg(long)]
        once: bool,
    },
    /// Revoke a lease: every key attached to it is deleted.
    Revoke {
        /// The lease's ID (hex).
        id: String,
    },
    /// Print a lease's granted and remaining TTL (`--keys`: the keys attached to it).
    Ttl {
        /// The lease's ID (hex).
        id: String,
        /// List the keys attached to the lease.
        #[arg(long)]
        keys: bool,
    },
    /// List the live leases' IDs, as `etcdctl lease list` does (`lease ttl` tells one's
    /// TTL and keys).
    List,
}

/// Reads a lease ID argument (parsed here, not by clap, so that a bad one is refused in
/// one line like every other bad input).
///
/// # Errors
/// Exit code 2 for anything but a hex ID.
pub(crate) fn read_id(text: &str) -> CliResult<LeaseId> {
    parse_id(text).map_err(CliError::invalid)
}

/// Parses a lease ID as etcdctl prints it: hex, with or without `0x`.
fn parse_id(text: &str) -> Result<LeaseId, String> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    if digits.is_empty() || digits.len() > 16 {
        return Err(format!(
            "{text:?} is not a lease ID (hex, as `kvctl lease grant` prints it)"
        ));
    }
    u64::from_str_radix(digits, 16)
        // The two's complement of a negative ID prints as 16 hex digits: read it back.
        .map(|n| LeaseId(n as i64))
        .map_err(|_| format!("{text:?} is not a lease ID (hex, as `kvctl lease grant` prints it)"))
}

/// A TTL as etcdctl prints one: whole seconds, else milliseconds.
pub(crate) fn ttl_text(ttl: Duration) -> String {
    if ttl.subsec_millis() == 0 {
        format!("{}s", ttl.as_secs())
    } else {
        format!("{}ms", ttl.as_millis())
    }
}

/// A TTL in JSON: seconds, fractional below a second's granularity.
fn ttl_json(ttl: Duration) -> serde_json::Value {
    if ttl.subsec_millis() == 0 {
        json!(ttl.as_secs())
    } else {
        json!(ttl.as_secs_f64())
    }
}

/// The error of a lease the store does not know.
fn gone(id: LeaseId) -> CliError {
    CliError::not_found(format!("lease {id} not found (expired or revoked)"))
}

/// Maps a store error, naming the lease when it is the lease that is missing.
fn lease_error(id: LeaseId, e: keyplane::Error) -> CliError {
    if e.kind() == ErrorKind::LeaseNotFound {
        gone(id)
    } else {
        e.into()
    }
}

pub(crate) async fn run(ctx: &Ctx, action: Action) -> CliResult<()> {
    // Every argument is checked before the store is opened.
    let id = match &action {
        Action::KeepAlive { id, .. } | Action::Revoke { id } | Action::Ttl { id, .. } => {
            read_id(id)?
        }
        Action::Grant { .. } | Action::List => LeaseId(0),
    };
    let ttl = match &action {
        Action::Grant { ttl } => super::guard::parse_duration(ttl)
            .map_err(|e| CliError::invalid(format!("lease grant: {e}")))?,
        _ => Duration::ZERO,
    };
    let store = ctx.store().await?;
    match action {
        Action::Grant { .. } => grant(ctx, &*store, ttl).await,
        Action::KeepAlive { once, .. } => keep_alive(ctx, &*store, id, once).await,
        Action::Revoke { .. } => {
            store
                .lease_revoke(id)
                .await
                .map_err(|e| lease_error(id, e))?;
            match ctx.format {
                Format::Json => print_json(&json!({ "id": id.to_string(), "revoked": true })),
                Format::Table => outln!("lease {id} revoked"),
            }
            Ok(())
        }
        Action::Ttl { keys, .. } => time_to_live(ctx, &*store, id, keys).await,
        Action::List => list(ctx, &*store).await,
    }
}

/// Prints the live leases as `etcdctl lease list` does: `found N leases`, then one hex ID a
/// line; in JSON, `{"count": N, "leases": ["<hex ID>", ...]}`.
async fn list(ctx: &Ctx, store: &dyn Store) -> CliResult<()> {
    let ids = store.lease_list().await?;
    match ctx.format {
        Format::Json => print_json(&json!({
            "count": ids.len(),
            "leases": ids.iter().map(LeaseId::to_string).collect::<Vec<_>>(),
        })),
        Format::Table => {
            outln!("found {} leases", ids.len());
            for id in ids {
                outln!("{id}");
            }
        }
    }
    Ok(())
}

async fn grant(ctx: &Ctx, store: &dyn Store, ttl: Duration) -> CliResult<()> {
    let grant = store.lease_grant(ttl).await?;
    match ctx.format {
        Format::Json => print_json(&json!({
            "id": grant.id.to_string(),
            "ttl": ttl_json(grant.ttl),
        })),
        Format::Table => outln!(
            "lease {} granted with TTL({})",
            grant.id,
            ttl_text(grant.ttl)
        ),
    }
    Ok(())
}

/// Renews `id` every third of its TTL, printing each renewal, until Ctrl-C (exit 0) or the
/// lease is gone: exit 1 when it is gone at the first renewal, else a last line and exit 0,
/// as etcdctl does.
async fn keep_alive(ctx: &Ctx, store: &dyn Store, id: LeaseId, once: bool) -> CliResult<()> {
    let mut interrupted = crate::interrupt::Interrupt::install()?;
    let mut first = true;
    loop {
        let ttl = match store.lease_keep_alive(id).await {
            Ok(ttl) => ttl,
            Err(e) if e.kind() == ErrorKind::LeaseNotFound && !first => {
                match ctx.format {
                    Format::Json => println_json(&json!({ "id": id.to_string(), "expired": true })),
                    Format::Table => outln!("lease {id} expired or revoked."),
                }
                return Ok(());
            }
            Err(e) => return Err(lease_error(id, e)),
        };
        first = false;
        match ctx.format {
            Format::Json => println_json(&json!({ "id": id.to_string(), "ttl": ttl_json(ttl) })),
            // etcdctl's form: whole seconds without a unit.
            Format::Table => outln!("lease {id} keepalived with TTL({})", keepalive_ttl(ttl)),
        }
        if once {
            return Ok(());
        }
        let pause = (ttl / 3).max(Duration::from_millis(100));
        tokio::select! {
            biased;
            () = interrupted.recv() => return Ok(()),
            () = tokio::time::sleep(pause) => {}
        }
    }
}

/// One JSON document on one line: a stream of them is read line by line.
fn println_json(value: &serde_json::Value) {
    outln!("{value}");
}

async fn time_to_live(ctx: &Ctx, store: &dyn Store, id: LeaseId, keys: bool) -> CliResult<()> {
    let info = store
        .lease_time_to_live(id)
        .await
        .map_err(|e| lease_error(id, e))?;
    // The server counts in whole seconds where the lease was granted in them (etcd, as
    // etcdctl shows it); the clock between two calls adds milliseconds that mean nothing.
    let remaining = if info.granted_ttl.subsec_millis() == 0 {
        Duration::from_secs((info.remaining.as_millis() as u64).div_ceil(1000))
    } else {
        info.remaining
    };
    let attached: Vec<String> = info.keys.iter().map(|k| crate::keys::text(k)).collect();
    match ctx.format {
        Format::Json => {
            let mut doc = json!({
                "id": id.to_string(),
                "ttl": ttl_json(remaining),
                "granted_ttl": ttl_json(info.granted_ttl),
            });
            if keys {
                doc["keys"] = json!(attached);
            }
            print_json(&doc);
        }
        Format::Table => {
            let mut line = format!(
                "lease {id} granted with TTL({}), remaining({})",
                ttl_text(info.granted_ttl),
                ttl_text(remaining)
            );
            if keys {
                line.push_str(&format!(", attached keys([{}])", attached.join(" ")));
            }
            outln!("{line}");
        }
    }
    Ok(())
}

/// A renewed lease's TTL as `etcdctl lease keep-alive` prints it: whole seconds without a
/// unit (`30`); a TTL with a fraction of a second (Redis and sled keep milliseconds) with its
/// unit, as the other commands print it.
fn keepalive_ttl(ttl: Duration) -> String {
    if ttl.subsec_nanos() == 0 {
        ttl.as_secs().to_string()
    } else {
        ttl_text(ttl)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_read_back_as_printed() {
        for id in [LeaseId(1), LeaseId(0x694d_7e8c_3a0b_9a0d), LeaseId(-5)] {
            assert_eq!(parse_id(&id.to_string()), Ok(id));
        }
        assert_eq!(parse_id("0x1f"), Ok(LeaseId(31)));
        assert!(parse_id("").is_err());
        assert!(parse_id("xyz").is_err());
        assert!(parse_id("-1").is_err());
        assert!(parse_id("11112222333344445").is_err());
    }

    #[test]
    fn ttls_print_as_etcdctl_prints_them() {
        assert_eq!(ttl_text(Duration::from_secs(30)), "30s");
        assert_eq!(ttl_text(Duration::from_millis(1500)), "1500ms");
    }
}
