//! `kvctl lock NAME [--ttl 30s] [-- CMD ARGS...]`: holds a distributed lock, as `etcdctl
//! lock` does: while a command runs (then exits with its exit code), or until Ctrl-C. The
//! lock is bound to a lease that kvctl keeps alive: if kvctl dies, the lock goes when the
//! lease expires.

use super::Ctx;
use crate::error::{CliError, CliResult, code};
use crate::output::{Format, outln, print_json};
use keyplane::recipes::{LeaseHeld, LeaseKeeper, Lock};
use serde_json::json;
use std::time::Duration;

/// The lease TTL of a lock or a campaign when `--ttl` is not given.
pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(30);

/// Reads `--ttl`.
///
/// # Errors
/// Exit code 2 for anything but a positive duration.
pub(crate) fn read_ttl(ttl: Option<&str>) -> CliResult<Duration> {
    match ttl {
        None => Ok(DEFAULT_TTL),
        Some(text) => {
            super::guard::parse_duration(text).map_err(|e| CliError::invalid(format!("--ttl: {e}")))
        }
    }
}

/// Refuses an empty name before anything is written.
pub(crate) fn check_name(what: &str, name: &str) -> CliResult<()> {
    if name.is_empty() {
        return Err(CliError::invalid(format!("{what}: the name is empty")));
    }
    Ok(())
}

pub(crate) async fn run(
    ctx: &Ctx,
    name: &str,
    ttl: Option<&str>,
    command: &[String],
) -> CliResult<()> {
    check_name("lock", name)?;
    let ttl = read_ttl(ttl)?;
    let store = ctx.store().await?;
    let lock = Lock::new(store.clone(), name)?;
    let keeper = LeaseKeeper::grant(store, ttl).await?;
    let mut interrupted = crate::interrupt::Interrupt::install()?;
    let guard = tokio::select! {
        biased;
        () = interrupted.recv() => {
            // Waiting ends with the lease: the queued contender's key goes with it.
            keeper.revoke().await?;
            return Ok(());
        }
        guard = lock.lock(keeper.id()) => guard?,
    };
    let key = String::from_utf8_lossy(guard.key()).into_owned();
    let outcome = match command.split_first() {
        Some((program, args)) => run_command(program, args).await,
        None => {
            match ctx.format {
                Format::Json => print_json(&json!({
                    "key": key,
                    "lease": keeper.id().to_string(),
                })),
                Format::Table => outln!("{key}"),
            }
            tokio::select! {
                biased;
                () = interrupted.recv() => Ok(()),
                lost = keeper.lost() => Err(CliError::new(
                    code::CONFLICT,
                    format!("lock {name:?} lost: {}", lost.message()),
                )),
            }
        }
    };
    // Released whatever the command did: the key first, then its lease.
    let released = guard.unlock().await;
    let revoked = keeper.revoke().await;
    outcome?;
    released?;
    // A lease that is already gone has nothing left to hold.
    match revoked {
        Err(e) if e.kind() != keyplane::ErrorKind::LeaseNotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// Runs `program` with `args`, stdin, stdout and stderr inherited; its exit code becomes
/// kvctl's.
///
/// # Errors
/// Exit code 2 when it cannot be started; the command's own exit code when not 0 (128 +
/// the signal when a signal ended it).
pub(crate) async fn run_command(program: &str, args: &[String]) -> CliResult<()> {
    let mut child = std::process::Command::new(program)
        .args(args)
        .spawn()
        .map_err(|e| CliError::invalid(format!("cannot run {program:?}: {e}")))?;
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .map_err(|e| CliError::new(code::OTHER, format!("waiting for {program:?}: {e}")))?
        .map_err(|e| CliError::new(code::OTHER, format!("waiting for {program:?}: {e}")))?;
    if status.success() {
        return Ok(());
    }
    let exit = status.code().unwrap_or_else(|| {
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            128 + status.signal().unwrap_or(0)
        }
        #[cfg(not(unix))]
        {
            1
        }
    });
    Err(CliError::new(
        u8::try_from(exit).unwrap_or(code::OTHER),
        format!("{program} exited with code {exit}"),
    ))
}
