//! `kvctl put ADDRESS VALUE [--create | --if-mod-revision N] [--lease-ttl TTL | --lease ID]`:
//! writes one key after checking the key against its template's segment rules and the value
//! against its value type, under its guard. Nothing is written when any of them fails.

use super::Ctx;
use crate::address::Address;
use crate::error::{CliError, CliResult};
use crate::output::{Format, print_json};
use serde_json::json;
use std::io::Read;

/// The guards and lease of `kvctl put`.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct PutFlags {
    /// Write a key that belongs to no schema, unchecked.
    #[arg(long)]
    pub(crate) raw: bool,
    /// Only create: fail with exit code 4, writing nothing, when the key exists.
    #[arg(long, conflicts_with = "if_mod_revision")]
    pub(crate) create: bool,
    /// Only overwrite the key at this mod revision (0: only when it does not exist); exit
    /// code 4, nothing written, otherwise.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) if_mod_revision: Option<i64>,
    /// Attach the key to a new lease of this TTL (30s, 1m, 500ms); the lease id is printed,
    /// and the key goes when the lease expires.
    #[arg(long, value_name = "TTL", value_parser = super::guard::parse_duration)]
    pub(crate) lease_ttl: Option<std::time::Duration>,
    /// Attach the key to an existing lease (its hex ID, as `kvctl lease grant` prints it):
    /// exit code 1, nothing written, when the lease has expired or was revoked.
    #[arg(long, value_name = "ID", conflicts_with = "lease_ttl")]
    pub(crate) lease: Option<String>,
}

pub(crate) async fn run(ctx: &Ctx, words: &[String], flags: &PutFlags) -> CliResult<()> {
    let raw = flags.raw;
    let guard = super::guard::Guard::of(flags.create, flags.if_mod_revision)?;
    let Some((value, address)) = words.split_last() else {
        return Err(CliError::invalid("put needs a key and a value"));
    };
    let key = Address::parse(address)?.key_bytes()?;
    let value = if value == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| CliError::invalid(format!("cannot read the value from stdin: {e}")))?;
        buf
    } else {
        value.as_bytes().to_vec()
    };
    let lease = flags
        .lease
        .as_deref()
        .map(super::lease::read_id)
        .transpose()?;
    let checked = if raw {
        None
    } else {
        Some(check_bytes(&key, &value)?)
    };
    let shown = crate::keys::text(&key);
    let store = ctx.store().await?;
    if let Some(id) = lease {
        let revision = super::guard::put_on_lease(&*store, &key, &value, guard, id).await?;
        match ctx.format {
            Format::Json => print_json(&json!({
                "key": shown,
                "revision": revision,
                "template": checked,
                "lease": { "id": id.to_string() },
            })),
            Format::Table => {
                crate::output::outln!("OK {shown} (revision {revision}, lease {id})")
            }
        }
        return Ok(());
    }
    let done = super::guard::put(&*store, &key, &value, guard, flags.lease_ttl).await?;
    let lease = done.lease.map(|(id, ttl)| (id.to_string(), ttl.as_secs()));
    match ctx.format {
        Format::Json => print_json(&json!({
            "key": shown,
            "revision": done.revision,
            "template": checked,
            "lease": lease.as_ref().map(|(id, ttl)| json!({ "id": id, "ttl_seconds": ttl })),
        })),
        Format::Table => match &lease {
            Some((id, ttl)) => crate::output::outln!(
                "OK {shown} (revision {}, lease {id} granted with TTL {ttl}s)",
                done.revision
            ),
            None => crate::output::outln!("OK {shown} (revision {})", done.revision),
        },
    }
    Ok(())
}

/// [`check`] of a key given as bytes: one that is not UTF-8 belongs to no schema.
///
/// # Errors
/// Exit code 2 as [`check`].
pub(crate) fn check_bytes(key: &[u8], value: &[u8]) -> CliResult<&'static str> {
    match std::str::from_utf8(key) {
        Ok(key) => check(key, value),
        Err(_) => Err(CliError::invalid(format!(
            "key \"{}\" belongs to no schema (see `kvctl parse`); use --raw to write it anyway",
            crate::keys::text(key)
        ))),
    }
}

/// Checks a write of `value` at `key` as `put` does without `--raw`: the key belongs to a
/// current schema's template (not an old, read-only layout) and the value to its value type.
/// Returns the template.
///
/// # Errors
/// Exit code 2, with the text `put` prints, when any check fails.
pub(crate) fn check(key: &str, value: &[u8]) -> CliResult<&'static str> {
    let parsed = crate::catalog::parse_any(key).map_err(|_| {
        CliError::invalid(format!(
            "key {key:?} belongs to no schema (see `kvctl parse`); use --raw to write it anyway"
        ))
    })?;
    if parsed.read_only {
        return Err(CliError::invalid(format!(
            "key {key:?} belongs to {}, an old layout that is read-only (template {}): \
             `kvctl migrate plan {}` moves it to the new layout; use --raw to write it anyway",
            parsed.schema, parsed.template, parsed.schema
        )));
    }
    crate::values::check(&parsed, key, value).map_err(|e| {
        let expected = crate::catalog::entry_of(&parsed)
            .map(|entry| crate::catalog::short_type(entry.info.value_type))
            .unwrap_or_default();
        let detail = std::error::Error::source(&e)
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        CliError::invalid(format!(
            "invalid value for {key}: expected {expected}: {}{detail}",
            e.message()
        ))
    })?;
    Ok(parsed.template)
}
