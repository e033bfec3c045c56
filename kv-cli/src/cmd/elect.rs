//! `kvctl elect NAME VALUE [--ttl 30s]` and `kvctl elect NAME --listen`: leader election, as
//! `etcdctl elect` does. A candidate waits while another leads, then prints the election key
//! and its proposal and leads until Ctrl-C, resigning then. The candidacy is bound to a
//! lease that kvctl keeps alive: if kvctl dies, the leadership goes when the lease expires.
//! `--listen` prints each leader as it changes.

use super::Ctx;
use super::lock::{check_name, read_ttl};
use crate::error::{CliError, CliResult, code};
use crate::output::{Format, outln};
use futures::StreamExt;
use keyplane::recipes::{Election, Leader, LeaseHeld, LeaseKeeper};
use serde_json::json;

pub(crate) async fn run(
    ctx: &Ctx,
    name: &str,
    value: Option<&str>,
    ttl: Option<&str>,
    listen: bool,
) -> CliResult<()> {
    check_name("elect", name)?;
    let value = match (listen, value) {
        (true, _) => None,
        (false, Some(value)) => Some(value),
        (false, None) => {
            return Err(CliError::invalid(
                "elect: a proposal to campaign with, or --listen",
            ));
        }
    };
    let ttl = read_ttl(ttl)?;
    let store = ctx.store().await?;
    let election = Election::new(store.clone(), name)?;
    let Some(value) = value else {
        return observe(ctx.format, &election).await;
    };
    let keeper = LeaseKeeper::grant(store, ttl).await?;
    let mut interrupted = crate::interrupt::Interrupt::install()?;
    let leadership = tokio::select! {
        biased;
        () = interrupted.recv() => {
            // Waiting ends with the lease: the candidate's key goes with it.
            keeper.revoke().await?;
            return Ok(());
        }
        leadership = election.campaign(keeper.id(), value) => leadership?,
    };
    let leader = Leader {
        key: leadership.key().to_vec(),
        value: value.as_bytes().to_vec(),
        revision: leadership.revision(),
        mod_revision: leadership.revision(),
        lease: Some(keeper.id()),
    };
    print_leader(ctx.format, &leader);
    let outcome = tokio::select! {
        biased;
        () = interrupted.recv() => Ok(()),
        lost = keeper.lost() => Err(lost),
        lost = leadership.lost() => Err(lost),
    };
    let lost = |e: keyplane::Error| {
        CliError::new(
            code::CONFLICT,
            format!("election {name:?}: leadership lost: {}", e.message()),
        )
    };
    // Resigned whatever ended it: the key first, then its lease.
    let resigned = leadership.resign().await;
    let revoked = keeper.revoke().await;
    outcome.map_err(lost)?;
    resigned?;
    // A lease that is already gone has nothing left to hold.
    match revoked {
        Err(e) if e.kind() != keyplane::ErrorKind::LeaseNotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// Prints the leader, then each new leader or proposal, until Ctrl-C; nothing while nobody
/// leads.
async fn observe(format: Format, election: &Election) -> CliResult<()> {
    let mut leaders = election.observe();
    let mut interrupted = crate::interrupt::Interrupt::install()?;
    loop {
        tokio::select! {
            biased;
            () = interrupted.recv() => return Ok(()),
            next = leaders.next() => match next {
                Some(Ok(Some(leader))) => print_leader(format, &leader),
                Some(Ok(None)) => {}
                Some(Err(e)) => return Err(e.into()),
                None => return Err(CliError::new(code::UNREACHABLE, "the watch ended")),
            },
        }
    }
}

/// One leader: its key, then its proposal, each on a line (as `etcdctl elect`); in JSON, one
/// line of JSON with the key, the proposal, the lease (hex) and the fencing revision.
fn print_leader(format: Format, leader: &Leader) {
    let key = String::from_utf8_lossy(&leader.key);
    let value = String::from_utf8_lossy(&leader.value);
    match format {
        Format::Json => {
            let object = json!({
                "key": key,
                "value": value,
                "lease": leader.lease.map(|l| l.to_string()),
                "revision": leader.revision,
            });
            outln!("{object}");
        }
        Format::Table => {
            outln!("{key}");
            outln!("{value}");
        }
    }
}
