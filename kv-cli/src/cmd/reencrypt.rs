//! `kvctl reencrypt PREFIX --keyring FILE`: seals every encrypted value under a prefix again
//! with the keyring's current key (after a rotation), bound to its key; only sealed values
//! are written, and a second run writes nothing.

use super::Ctx;
use crate::error::{CliError, CliResult};
use crate::output::{Format, outln, print_json};
use keyplane::keyspace::reencrypt_prefix;
use serde_json::json;

/// Runs the re-encryption and prints what it did.
///
/// # Errors
/// Exit code 2 without a keyring, for an empty prefix, or when some values cannot be opened
/// (the others are re-encrypted; the message counts and names them); store errors.
pub(crate) async fn run(ctx: &Ctx, prefix: &str, accept_unbound: bool) -> CliResult<()> {
    let keyring = ctx.keyring()?.ok_or_else(|| {
        CliError::invalid(
            "reencrypt needs the keyring: --keyring FILE (or KVCTL_KEYRING), whose `current` \
             key seals the values",
        )
    })?;
    if prefix.is_empty() {
        return Err(CliError::invalid(
            "give the prefix whose values to re-encrypt",
        ));
    }
    let keyring = keyring.accept_unbound(accept_unbound);
    let store = ctx.store_for_listing(prefix).await?;
    let report = reencrypt_prefix(store.as_ref(), &keyring, prefix.as_bytes()).await?;
    match ctx.format {
        Format::Json => print_json(&json!({
            "key_id": keyring.current_id(),
            "scanned": report.scanned,
            "reencrypted": report.reencrypted,
            "current": report.current,
            "not_encrypted": report.not_encrypted,
            "raced": report.raced,
        })),
        _ => outln!(
            "re-encrypted {} values with key id {} ({} scanned, {} already current, {} not \
             encrypted, {} changed meanwhile and read again)",
            report.reencrypted,
            keyring.current_id(),
            report.scanned,
            report.current,
            report.not_encrypted,
            report.raced
        ),
    }
    Ok(())
}
